"""What a harness's Stop hook asks at every turn end: may this session stop now?

Kept apart from ``api.ritual`` and light on imports (the session rows and the record's
paths, no atlas.yaml read): the hook runs after every turn of the agent, and a slow hook
makes every turn slow.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from atlas_files.api import Worker
from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import DamagedFile
from atlas_files.facts.text import field
from atlas_files.protocol import sessions
from atlas_files.protocol.sessions import Write
from atlas_files.storage import fsio, jsonfile

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

SHOWN = 8  # writes named in a block's reason


class Claim(NamedTuple):
    """A task claim its holder still has: said at `atlas end` and by the Stop hook."""

    id: str
    title: str | None
    expires_at: str
    expires_in_s: float

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "title": self.title, "expires_at": self.expires_at,
                "expires_in_s": self.expires_in_s}

    def text(self) -> str:
        title = " ".join((self.title or "?").split())[:80]
        return f"{self.id} ({title}; {timeutil.format_duration(self.expires_in_s)} left)"


def claims_held(record: Record, identity: str, project: str) -> list[Claim]:
    """The unexpired task claims of ``identity`` in ``project``: the newest generation of
    each ``task.*`` lease, read as JSON without the lease machinery (this runs at every
    turn end). A claim it cannot read is left out: the hook only informs."""
    leases = str(record.leases_dir)
    tasks = os.path.join(str(record.root), layout.PROJECTS, project, layout.TASKS)
    now = timeutil.now()
    out = []
    for name in sessions.lease_names(leases, layout.TASK_LEASE_PREFIX):
        where = os.path.join(leases, name)
        newest = sessions.newest_generation(where)
        task_id = name[len(layout.TASK_LEASE_PREFIX):]
        try:
            gen = jsonfile.loads(fsio.read_nofollow(Path(where, layout.generation_filename(newest)),
                                                    1 << 20))
        except (OSError, ValueError):
            continue
        if not isinstance(gen, dict) or gen.get("holder") != identity \
                or gen.get("action") == "release" or not isinstance(gen.get("expires_at"), str):
            continue
        try:
            expires = timeutil.parse_time(gen["expires_at"])
        except ValueError:
            continue
        if expires <= now:
            continue
        head = sessions.head(os.path.join(tasks, f"{task_id}.md"))
        if head is None:
            continue  # a task of another project
        title = head.get("title")
        out.append(Claim(task_id, title if isinstance(title, str) else None,
                         timeutil.format_time(expires), (expires - now).total_seconds()))
    return out


def _claims_note(record: Record, identity: str, project: str) -> str:
    held = claims_held(record, identity, project)
    if not held:
        return ""
    return ("You still hold task claims: " + ", ".join(c.text() for c in held)
            + ". Finish one with `atlas task done ID`, or give it back with `atlas task "
            "release ID`; a claim you leave expires by itself.")


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
    claims = _claims_note(record, identity, row.project)
    if not mine or any(w.kind == "status" for w in mine):
        return StopCheck(True, claims, mine)
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
    return StopCheck(False, " ".join(x for x in (reason, claims) if x), mine)
