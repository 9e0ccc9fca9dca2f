"""The session hooks of the agent harnesses, as `atlas begin --hook H` (session start)
and `atlas end --hook H` (turn end) answer them: given by the entry point's fast path
before click loads (atlas_files.launch), and by the full CLI's `--hook` options alike.
The tool-call hooks are tools.py; each harness's JSON is its module in atlas_files.harness.

A hook never breaks the session: outside a record it says nothing, and a failure is said
on stderr and lets the session go on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from atlas_files.api import Worker
from atlas_files.api.stop import stop_check
from atlas_files.facts import environment
from atlas_files.facts.errors import AtlasError, NotFound
from atlas_files.facts.names import is_name
from atlas_files.facts.text import field
from atlas_files.harness import base
from atlas_files.harness.base import Harness
from atlas_files.harness.registry import load
from atlas_files.storage.record import Record, locate


def start_hook(name: str, record_path: str | None, identity: str | None,
               project: str | None, *, max_chars: int = 6000) -> None:
    """Answer harness ``name``'s session-start hook. Never breaks the session: outside
    a record it says nothing, and a failure is said on stderr and in the context."""
    harness = load(name)
    event = base.read_event()
    worker = _hook_worker(record_path, identity, project, event, harness)
    if worker is None:
        return
    answer = harness.shell_identity(event, _identity_values(worker, project))
    if answer is not None:
        base.out(answer)
        return
    shell = _export_identity(worker, project, harness)
    if not worker.identity:
        text = ("This folder holds an atlas record, but the session-start hook names no "
                "identity: `atlas begin` did not run. Set ATLAS_AS=NAME for the agent, or "
                "run `atlas setup HARNESS --as NAME`; then run `atlas begin` yourself.")
        base.out(harness.context(text))
        return
    # Here, not at the top: the briefing's modules are most of this hook's imports, and
    # the turn-end hook, which runs after every turn, needs none of them.
    from atlas_files.api import ritual  # noqa: PLC0415 - see above

    start = ritual.begin_again if base.goes_on(event) else ritual.begin
    try:
        text = start(worker, max_chars=max_chars).text
    except (AtlasError, OSError) as exc:
        message = exc.message if isinstance(exc, AtlasError) else str(exc)
        base.say(f"begin failed: {message}")
        # A damaged file's message quotes what it holds: one escaped line of atlas's.
        text = (f"atlas begin failed: {field(message, 500)}. Run `atlas begin` yourself "
                "before acting; the record's status is the first thing to read.")
    base.out(harness.context(text + shell))


def _hook_worker(record_path: str | None, identity: str | None, project: str | None,
                 event: dict[str, Any], harness: Harness) -> Worker | None:
    """The worker a hook acts as, in the record around the session's folder; None (after
    printing the harness's "go on") when there is no record there."""
    root = _record_root(record_path, event, harness)
    return None if root is None else Worker(Record(root), base.identity(identity), project)


def _record_root(record_path: str | None, event: dict[str, Any],
                 harness: Harness) -> Path | None:
    """The record named, or the one around the session's folder; None (after printing the
    harness's "go on") when there is none."""
    where = base.folder(event)
    try:
        return locate(record_path, starts=[where] if where else [])
    except NotFound as exc:
        if record_path:  # a record was named and is not there: worth a word
            base.say(f"{exc.message} (the hook did nothing)")
        base.out(harness.allow())
        return None


def _identity_values(worker: Worker, project: str | None) -> dict[str, str]:
    """What the agent's shell needs to act as the hook's worker, as variables."""
    values = {environment.RECORD: str(worker.record.root)}
    if worker.identity:
        values[environment.AS] = worker.identity
    if project:
        values[environment.PROJECT] = project
    return values


def _export_identity(worker: Worker, project: str | None, harness: Harness) -> str:
    """Hand the hook's identity and record to the agent's own shell where the harness
    lets a hook do that; the line the briefing ends with, saying how the agent's atlas
    commands know who is acting."""
    if base.export_to_shell(_identity_values(worker, project)):
        return (f"\nYour shell's atlas commands act as {worker.identity} (ATLAS_AS is set "
                "there by this hook)." if worker.identity else "")
    how = harness.shell_set_by_setup
    if worker.identity and how:
        return (f"\nYour shell's atlas commands act as {worker.identity} where `atlas setup "
                f"{harness.name} --as {worker.identity}` {how}; otherwise run them as "
                f"`atlas --as {worker.identity} ...`.")
    if worker.identity and environment.identity() != worker.identity:
        return (f"\nYour shell does not know who you are: run every atlas command as "
                f"`atlas --as {worker.identity} ...` (or with ATLAS_AS={worker.identity}).")
    return ""


def stop_hook(name: str, record_path: str | None, identity: str | None,
              project: str | None) -> None:
    """Answer harness ``name``'s turn-end hook: block a session that wrote something
    since its `atlas begin` but not the status; otherwise let it stop. Never anything
    else: outside a record, or when the check cannot be made, the stop is let through
    (and stderr says why), so a hook can never trap an agent."""
    harness = load(name)
    event = base.read_event()
    identity = base.identity(identity)
    if base.stop_hook_active(event):
        base.out(harness.allow())  # already going on because of a block
        return
    root = _record_root(record_path, event, harness)
    if root is None:
        return
    if identity is not None and not is_name(identity):
        base.say(f"--as {identity!r} is not an identity name: the stop was not checked")
        base.out(harness.allow())
        return
    try:
        verdict = stop_check(Worker(Record(root), identity, project))
    except (AtlasError, OSError) as exc:
        base.say(f"the stop was not checked: {exc}")
        base.out(harness.allow())
        return
    if verdict.allow:
        if verdict.reason:
            base.say(verdict.reason)
        base.out(harness.allow())
    else:
        base.out(harness.block(verdict.reason))
