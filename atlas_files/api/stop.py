"""What a harness's Stop hook asks at every turn end: may this session stop now?

Kept apart from ``api.ritual`` and light on imports (the session rows and the record's
paths, no atlas.yaml read): the hook runs after every turn of the agent, and a slow hook
makes every turn slow.
"""

from __future__ import annotations

from atlas_files import sessions
from atlas_files.api import Worker
from atlas_files.errors import DamagedFile
from atlas_files.sessions import Write
from atlas_files.text import field

SHOWN = 8  # writes named in a block's reason


class StopCheck:
    """``allow``, and ``reason``: the block's reason, or why a stop was let through
    without a check (empty when there is nothing to say). A plain class, not a
    dataclass, for the import cost (see ``sessions``)."""

    __slots__ = ("allow", "reason", "wrote")

    def __init__(self, allow: bool, reason: str, wrote: tuple[Write, ...] = ()) -> None:
        self.allow = allow
        self.reason = reason
        self.wrote = wrote

    def __repr__(self) -> str:
        return f"StopCheck(allow={self.allow!r}, reason={self.reason!r})"


def stop_check(worker: Worker) -> StopCheck:
    """Yes if the session wrote nothing since it began, or wrote the status; no (with the
    reason) if it wrote something but not the status. Without an identity or a session
    row there is nothing to check against: yes, and the reason says so."""
    if not worker.identity:
        return StopCheck(True, "no identity (--as or ATLAS_AS): the stop was not checked")
    record, identity = worker.record, worker.identity
    try:
        row = sessions.read(record, identity)
    except (DamagedFile, OSError) as exc:
        return StopCheck(True, f"{getattr(exc, 'message', exc)}: the stop was not checked")
    if row is None:
        return StopCheck(True, f"no session row for {identity} (`atlas begin` did not run "
                         "for it): the stop was not checked")
    mine = tuple(sessions.mine(sessions.writes_since(record, row), identity))
    if not mine or any(w.kind == "status" for w in mine):
        return StopCheck(True, "", mine)
    # A label holds what a lease generation's file says its action was, and the project a
    # session row names: record text, escaped so that it stays inside this one line.
    shown = ", ".join(field(w.label, 80) for w in mine[:SHOWN])
    more = f" and {len(mine) - SHOWN} more" if len(mine) > SHOWN else ""
    since = "this session began" if row.open else "its last `atlas end`"
    reason = (f"You ({identity}) wrote {shown}{more} in project {field(row.project, 80)} "
              f"since {since}, "
              f"but not its status. Before you stop, write where things stand with "
              f"`atlas --as {identity} end --status TEXT` (or `-f FILE`): what you did, what "
              "holds now, what comes next. The next session reads the status first.")
    return StopCheck(False, reason, mine)
