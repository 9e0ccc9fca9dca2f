"""The answer to a harness's turn-end hook (`atlas end --hook H`), given by the entry
point's fast path before click loads, and by `atlas end --hook` in the full CLI alike."""

from __future__ import annotations

import sys

from atlas_files import hookio
from atlas_files.api import Worker
from atlas_files.api.stop import stop_check
from atlas_files.errors import AtlasError, NotFound
from atlas_files.names import is_name
from atlas_files.record import Record, locate
from atlas_files.text import escape_controls


def _say(message: str) -> None:
    sys.stderr.write(f"atlas: {escape_controls(message)}\n")


def _out(text: str | None) -> None:
    if text is not None:
        sys.stdout.write(text + "\n")


def stop_hook(harness: str, record_path: str | None, identity: str | None,
              project: str | None) -> None:
    """Answer harness ``harness``'s turn-end hook: block a session that wrote something
    since its `atlas begin` but not the status; otherwise let it stop. Never anything
    else: outside a record, or when the check cannot be made, the stop is let through
    (and stderr says why), so a hook can never trap an agent."""
    event = hookio.read_event()
    identity = hookio.identity(identity)
    if hookio.stop_hook_active(event):
        _out(hookio.allow(harness))  # already going on because of a block
        return
    where = hookio.cwd(event)
    try:
        root = locate(record_path, starts=[where] if where else [])
    except NotFound as exc:
        if record_path:  # a record was named and is not there: worth a word
            _say(f"{exc.message} (the hook did nothing)")
        _out(hookio.allow(harness))
        return
    if identity is not None and not is_name(identity):
        _say(f"--as {identity!r} is not an identity name: the stop was not checked")
        _out(hookio.allow(harness))
        return
    try:
        verdict = stop_check(Worker(Record(root), identity, project))
    except (AtlasError, OSError) as exc:
        _say(f"the stop was not checked: {exc}")
        _out(hookio.allow(harness))
        return
    if verdict.allow:
        if verdict.reason:
            _say(verdict.reason)
        _out(hookio.allow(harness))
    else:
        _out(hookio.block(harness, verdict.reason))
