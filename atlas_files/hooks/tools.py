"""The tool-call hooks of the agent harnesses, as `atlas guard --hook H` (before a tool
runs) and `atlas news --hook H` (after it) answer them. What each harness sends and
answers is its module in atlas_files.harness (the answers side by side: docs/sessions.md).
"""

from __future__ import annotations

import os
from typing import Any

from atlas_files.facts import environment
from atlas_files.facts.text import field
from atlas_files.harness import base
from atlas_files.harness.base import Harness
from atlas_files.harness.registry import load

# Given by the entry point's fast path before click loads (they run around every tool call
# an agent makes: this module is outside the cli package, whose import loads click), and
# by the full CLI's `guard --hook` and `news --hook` alike. Neither ever breaks the
# harness or traps the agent: outside a record they let the call run and say nothing;
# whatever goes wrong in them (a damaged record, input they cannot read, a bug) lets the
# call run too, with a short note on stderr and, where the harness shows one to the
# person, in its message.

NOTE = "atlas guard could not check this edit, and let it through"


def _person(verdict: Any) -> str:
    """The short form a person reads in the harness's prompt."""
    from atlas_files.api.editguard import STOPPED  # noqa: PLC0415 - loaded by _guard

    stops = verdict.of(STOPPED)
    lines = [field(f"{f.path}: {f.by}'s path lease {f.resource}", 200) for f in stops[:3]]
    more = f" and {len(stops) - 3} more" if len(stops) > 3 else ""
    return (f"atlas guard: this edit touches files under another's lease ({'; '.join(lines)}"
            f"{more}). The lease is advisory. Allow the edit only if you mean to go ahead "
            "anyway; then tell the holder through the record.")


def guard_hook(name: str, record_path: str | None, identity: str | None,
               project: str | None) -> None:
    """Answer harness ``name``'s pre-tool hook for the call on stdin."""
    harness = load(name)
    event = base.read_event()
    try:
        _guard(harness, event, record_path, base.identity(identity))
    except Exception as exc:  # noqa: BLE001 - an edit never waits on a bug of the guard's
        base.say(f"{NOTE}: {type(exc).__name__}: {exc}")
        base.out(harness.pre_allow(NOTE))


def _guard(harness: Harness, event: dict[str, Any], record_path: str | None,
           identity: str | None) -> None:
    files = base.edit_targets(harness, event)
    if not files:
        base.out(harness.pre_allow())
        return
    from atlas_files.api import editguard  # noqa: PLC0415 - only for an edit

    verdict = editguard.check_edit(files, identity=identity, record=record_path,
                                   cwd=base.folder(event))
    for note in verdict.notes:
        base.say(note)
    decision = verdict.decision
    if decision == editguard.ALLOW:
        base.out(harness.pre_allow())
        return
    waiting = not harness.pre_context_ok and bool(verdict.of(editguard.TOLD))
    kept = editguard.remember(verdict, pending=waiting)
    text = verdict.text()
    if decision == editguard.REFUSED:
        base.out(harness.pre_deny(text, "atlas guard refused an edit of the record's own "
                              "files: " + verdict.of(editguard.REFUSED)[0].path))
    elif decision == editguard.STOPPED:
        stop = verdict.of(editguard.STOPPED)[0]
        model = f"{text}\n\n{harness.override(stop.resource or '', field(stop.by or '', 80))}"
        base.out(harness.pre_ask(_person(verdict), model))
    elif harness.pre_context_ok:
        base.out(harness.pre_context(text))
    else:
        # A pre-tool hook that takes no context (Gemini CLI's, Cursor's): the next
        # post-tool hook hands it over (kept); without a session row to keep it in, the
        # person is told.
        base.out(harness.pre_allow(None if kept else verdict.of(editguard.TOLD)[0].what))


def news_hook(name: str, record_path: str | None, identity: str | None,
              project: str | None) -> None:
    """Answer harness ``name``'s post-tool (or prompt-submit) hook."""
    harness = load(name)
    event = base.read_event()
    try:
        text = _news(harness, event, record_path, base.identity(identity))
    except Exception as exc:  # noqa: BLE001 - news is never worth breaking a session
        base.say(f"no news this time ({type(exc).__name__}: {exc})")
        text = None
    base.out(harness.post_context(event, text))


def _news(harness: Harness, event: dict[str, Any], record_path: str | None,
          identity: str | None) -> str | None:
    from atlas_files.api import editguard  # noqa: PLC0415 - only inside a record
    from atlas_files.facts.names import is_name  # noqa: PLC0415 - idem

    folder = base.folder(event)
    files = base.edit_targets(harness, event) if base.succeeded(event) else []
    real = [os.path.realpath(f) for f in files]
    root, notes = editguard.find_record(record_path, folder, real, os.environ)
    for note in notes:
        base.say(note)
    who = environment.identity(identity)
    if root is None or not who or not is_name(who):
        return None
    from atlas_files.facts import layout  # noqa: PLC0415 - idem
    from atlas_files.storage import volcase  # noqa: PLC0415 - idem

    record_real = os.path.realpath(root)
    folds = volcase.folds_case(record_real, layout.CONFIG_NAME)
    edited = []
    for path in real:
        repo = editguard.repository_root(path, record_real, folds)
        rel = editguard.inside(path, repo, folds) if repo else None
        if rel:
            edited.append(rel)
    from atlas_files.api.news import after_tool  # noqa: PLC0415 - idem
    from atlas_files.storage.record import Record  # noqa: PLC0415 - idem

    news = after_tool(Record(root), who, edited=edited, files=real)
    return news.text if news else None
