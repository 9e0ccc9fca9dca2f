"""The answers to a harness's tool-call hooks: `atlas guard --hook H` before a tool runs,
`atlas news --hook H` after it. Given by the entry point's fast path before click loads
(they run around every tool call an agent makes), and by the full CLI's `guard --hook`
and `news --hook` alike.

Neither ever breaks the harness or traps the agent: outside a record they let the call
run and say nothing; whatever goes wrong in them (a damaged record, input they cannot
read, a bug) lets the call run too, with a short note on stderr and, where the harness
shows one to the person, in its message.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from atlas_files import hookio, toolhooks
from atlas_files.text import escape_controls

NOTE = "atlas guard could not check this edit, and let it through"


def _say(message: str) -> None:
    sys.stderr.write(f"atlas: {escape_controls(message)}\n")


def _out(text: str | None) -> None:
    if text is not None:
        sys.stdout.write(text + "\n")


def _person(verdict: Any) -> str:
    """The short form a person reads in the harness's prompt."""
    from atlas_files.api.editguard import STOPPED  # noqa: PLC0415

    stops = verdict.of(STOPPED)
    lines = [f"{f.path}: {f.by}'s path lease {f.resource}" for f in stops[:3]]
    more = f" and {len(stops) - 3} more" if len(stops) > 3 else ""
    return (f"atlas guard: this edit touches files under another's lease ({'; '.join(lines)}"
            f"{more}). The lease is advisory. Allow the edit only if you mean to go ahead "
            "anyway; then tell the holder through the record.")


def refresh(record: Any, identity: str | None) -> None:
    """Before the guard reads a record that syncs: the remote's latest first, at most once
    per ``fetch_every`` (the sync switch loads nothing for a record that does not sync)."""
    if record.config.sync is None or not record.config.sync.auto:
        return
    from atlas_files import sync as syncswitch  # noqa: PLC0415
    from atlas_files.api import Worker  # noqa: PLC0415

    syncswitch.refresh(Worker(record, identity))


def guard_hook(harness: str, record_path: str | None, identity: str | None,
               project: str | None) -> None:
    """Answer harness ``harness``'s pre-tool hook for the call on stdin."""
    event = hookio.read_event()
    try:
        _guard(harness, event, record_path, identity)
    except Exception as exc:  # noqa: BLE001 - an edit never waits on a bug of the guard's
        _say(f"{NOTE}: {type(exc).__name__}: {exc}")
        _out(toolhooks.pre_allow(harness, NOTE))


def _guard(harness: str, event: dict[str, Any], record_path: str | None,
           identity: str | None) -> None:
    files = toolhooks.edit_targets(harness, event)
    if not files:
        _out(toolhooks.pre_allow(harness))
        return
    from atlas_files.api import editguard as eg  # noqa: PLC0415 - only for an edit

    verdict = eg.check_edit(files, identity=identity, record=record_path,
                            cwd=toolhooks.event_folder(event), refresh=refresh)
    for note in verdict.notes:
        _say(note)
    decision = verdict.decision
    if decision == eg.ALLOW:
        _out(toolhooks.pre_allow(harness))
        return
    waiting = harness not in toolhooks.PRE_CONTEXT and bool(verdict.of(eg.TOLD))
    kept = eg.remember(verdict, pending=waiting)
    text = verdict.text()
    if decision == eg.REFUSED:
        _out(toolhooks.pre_deny(harness, text, "atlas guard refused an edit of the "
                                "record's own files: " + verdict.of(eg.REFUSED)[0].path))
    elif decision == eg.STOPPED:
        stop = verdict.of(eg.STOPPED)[0]
        model = f"{text}\n\n{toolhooks.override(harness, stop.resource or '', stop.by or '')}"
        _out(toolhooks.pre_ask(harness, _person(verdict), model))
    elif harness in toolhooks.PRE_CONTEXT:
        _out(toolhooks.pre_context(harness, text))
    else:
        # Gemini CLI and Cursor take no context before a tool: the next post-tool hook
        # hands it over (kept); without a session row to keep it in, the person is told.
        _out(toolhooks.pre_allow(harness, None if kept else verdict.of(eg.TOLD)[0].what))


def news_hook(harness: str, record_path: str | None, identity: str | None,
              project: str | None) -> None:
    """Answer harness ``harness``'s post-tool (or prompt-submit) hook."""
    event = hookio.read_event()
    try:
        text = _news(harness, event, record_path, identity)
    except Exception as exc:  # noqa: BLE001 - news is never worth breaking a session
        _say(f"no news this time ({type(exc).__name__}: {exc})")
        text = None
    _out(toolhooks.post_context(harness, event, text))


def _news(harness: str, event: dict[str, Any], record_path: str | None,
          identity: str | None) -> str | None:
    from atlas_files.api import editguard as eg  # noqa: PLC0415
    from atlas_files.names import is_name  # noqa: PLC0415

    folder = toolhooks.event_folder(event)
    files = toolhooks.edit_targets(harness, event) if toolhooks.succeeded(event) else []
    real = [os.path.realpath(f) for f in files]
    root, notes = eg.find_record(record_path, folder, real, os.environ)
    for note in notes:
        _say(note)
    who = identity or os.environ.get("ATLAS_AS") or None
    if root is None or not who or not is_name(who):
        return None
    edited = []
    for path in real:
        repo = eg.repository_root(path)
        rel = eg.inside(path, repo) if repo else None
        if rel:
            edited.append(rel)
    from atlas_files.api.news import after_tool  # noqa: PLC0415
    from atlas_files.record import Record  # noqa: PLC0415

    news = after_tool(Record(root), who, edited=edited, files=real)
    return news.text if news else None
