"""Reading leases: the state computed at read time, history, and the whole sheet.

Nothing here writes. A lease's state (held or free) is never stored: it is computed from
the newest generation and this machine's clock each time it is read, which is why a
holder that vanishes frees the resource by doing nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files import timeutil
from atlas_files.errors import BadInput, DamagedFile
from atlas_files.leases import store
from atlas_files.leases.paths import any_overlap
from atlas_files.leases.store import Generation
from atlas_files.names import is_name
from atlas_files.telemetry import busy_gpus, folder_problem, resource_usage

if TYPE_CHECKING:
    from atlas_files.record import Record


# Printed verbatim wherever a lease is read: `atlas lease --help`, every `lease ls` (text
# and the JSON `advisory` key), the lease schema's description and the generated site.
ADVISORY = (
    "Leases are advisory: a lease is an entry on a shared sign-up sheet and nothing "
    "enforces it, so a worker that ignores the sheet is not stopped. Only the claim itself "
    "is atomic: two readers can both see a resource free in the same second, and only one "
    "of their claims will succeed. An empty list does not prove a machine is idle: a worker "
    "that took no lease is invisible here. Expiry trusts the clocks of the machines that "
    "write and read the lease; where they disagree, a lease can read as expired too early "
    "or as held too long."
)



@dataclass(frozen=True)
class Lease:
    """A resource's lease as read at one moment: ``state`` is computed, never stored."""

    resource: str
    generation: int  # the newest generation; 0 if never claimed
    state: str  # "held" or "free"
    holder: str | None  # None when free
    why: str | None
    claimed_at: str | None
    expires_at: str | None
    expires_in_s: float | None  # None when free
    last_action: str | None  # claim | renew | release | break of the newest generation
    last_holder: str | None  # who held it last, also once it is free
    ended: str | None  # why it is free: "expired", "released", "never claimed"
    clock_warning: str | None
    read_at: str
    damaged: str | None = None  # why the newest generation cannot be read (state "damaged")
    paths: tuple[str, ...] = ()  # repository path globs it covers; () when free

    @property
    def covers_paths(self) -> bool:
        """Held, and on repository paths: what the commit guard and `activity` look at."""
        return self.held and bool(self.paths)

    @property
    def held(self) -> bool:
        return self.state == "held"

    def to_json(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "holder": self.holder,
            "why": self.why,
            "generation": self.generation,
            "claimed_at": self.claimed_at,
            "expires_at": self.expires_at,
            "state": self.state,
            "expires_in_s": self.expires_in_s,
            "last_action": self.last_action,
            "last_holder": self.last_holder,
            "ended": self.ended,
            "clock_warning": self.clock_warning,
            "read_at": self.read_at,
            "damaged": self.damaged,
            "paths": list(self.paths),
        }


def state_of(resource: str, gen: Generation | None, at: datetime, tolerance_s: float,
             read_at: str | None = None, cap_s: float = 0.0) -> Lease:
    """The lease ``gen`` describes, read at time ``at`` by this machine's clock
    (``read_at``: ``at`` formatted, if the caller has it already). ``cap_s``: the record's
    lease cap; a generation that says it runs longer (a hand edit) is read as expiring
    at the cap, and says so."""
    read_at = read_at or timeutil.format_time(at)
    if gen is None:
        return Lease(resource, 0, "free", None, None, None, None, None, None, None,
                     "never claimed", None, read_at)
    warning = _clock_warning(gen, at, tolerance_s) if gen.holds else None
    expires = gen.expires()
    expires_at = gen.expires_at
    if gen.holds and expires is not None and cap_s > 0:
        capped = _capped(gen, expires, cap_s)
        if capped is not None:
            expires, expires_at = capped, timeutil.format_time(capped)
            note = (f"generation {gen.generation} says it expires at {gen.expires_at}, longer "
                    f"after it was written than the record's lease cap of "
                    f"{timeutil.format_duration(cap_s)} (a hand edit?): it is read as "
                    f"expiring at {expires_at}, the cap after it was written")
            warning = f"{warning}; {note}" if warning else note
    if gen.holds and expires is not None and at < expires:
        left = round((expires - at).total_seconds(), 3)
        return Lease(resource, gen.generation, "held", gen.holder, gen.why, gen.claimed_at,
                     expires_at, left, gen.action, gen.holder, None, warning, read_at,
                     paths=gen.paths)
    last = gen.holder if gen.holds else (gen.previous or {}).get("holder")
    ended = "expired" if gen.holds else "released"
    return Lease(resource, gen.generation, "free", None, None, None, None, None, gen.action,
                 last, ended, warning, read_at)


def _capped(gen: Generation, expires: datetime, cap_s: float) -> datetime | None:
    """The cap after the generation was written, if its expiry lies beyond it (a second of
    rounding in the stored times allowed), else None."""
    stamp = gen.written_at or gen.claimed_at
    if not stamp:
        return None
    try:
        written = store.parse_time(stamp)
    except ValueError:
        return None
    if (expires - written).total_seconds() <= cap_s + 1:
        return None
    return written + timedelta(seconds=cap_s)


def damaged_lease(resource: str, generation: int, reason: str, at: datetime) -> Lease:
    """A resource whose newest generation cannot be read: nobody can say whether it is
    held, so it is neither "held" nor "free" but "damaged", with the reason."""
    return Lease(resource, generation, "damaged", None, None, None, None, None, None, None,
                 None, None, timeutil.format_time(at), damaged=reason)


def _clock_warning(gen: Generation, at: datetime, tolerance_s: float) -> str | None:
    stamps = [s for s in (gen.claimed_at, gen.written_at) if s]
    ahead = max((store.parse_time(s) - at).total_seconds() for s in stamps) if stamps else 0
    if ahead <= tolerance_s:
        return None
    return (
        f"generation {gen.generation} was written {timeutil.format_duration(ahead)} in the "
        f"future by this machine's clock (tolerance {timeutil.format_duration(tolerance_s)}): "
        "the writer's clock or this one is wrong, so this lease's expiry cannot be trusted"
    )


def left_text(lease: Lease) -> str:
    return timeutil.format_duration(lease.expires_in_s or 0)


def problems_and_leases(record: Record) -> tuple[list[str], list[Lease]]:
    """(what could not be read, the leases that could): one damaged generation must not
    hide every other lease from a reader deciding where to run."""
    problems, healthy, _ = read_all(record)
    return problems, healthy


def read_all(record: Record) -> tuple[list[str], list[Lease], list[Lease]]:
    """(every problem, the readable leases, a "damaged" row per resource that cannot be
    read), each list by resource name."""
    problems: list[str] = []
    out: list[Lease] = []
    damaged: list[Lease] = []
    try:
        folder = record.leases_dir
        with os.scandir(folder) as listing:
            entries = sorted((e.name, e) for e in listing if not e.name.startswith("."))
    except FileNotFoundError:
        return [], [], []
    except NotADirectoryError:
        return [store.not_a_folder(record.root / "leases").message], [], []
    except (BadInput, OSError) as exc:  # a symlink leading outside, no permission
        return [f"the leases cannot be listed: {exc}"], [], []
    at = timeutil.now()
    read_at = timeutil.format_time(at)
    tolerance = record.config.clock_tolerance_s
    cap = record.config.lease_cap_s
    for name, entry in entries:
        try:
            # A real folder, as the listing says without another stat: read it by its
            # path string (the commit guard reads a thousand of these per commit).
            # Anything else takes the slow road, which names what is wrong.
            if entry.is_dir(follow_symlinks=False) and is_name(name):
                where: str | Path = entry.path
            else:
                if not os.path.isdir(folder / name):
                    raise store.not_a_folder(folder / name)
                where = store.folder(record, name)
            gen = store.newest(where, name)
        except (BadInput, OSError) as exc:
            problems.append(str(exc))
            if is_name(name):
                damaged.append(damaged_lease(name, _last_number(record, name), str(exc), at))
            continue
        if gen is not None:
            out.append(state_of(name, gen, at, tolerance, read_at, cap))
    return problems, out, damaged


def _last_number(record: Record, resource: str) -> int:
    """The newest generation's number from the folder listing, 0 if even that fails."""
    try:
        found = store.newest_name(store.folder(record, resource))
    except (BadInput, OSError):
        return 0
    return found[0] if found else 0


def show(record: Record, resource: str) -> tuple[Lease, list[Generation]]:
    """The lease now and every generation, oldest first, each saying how it ended. A
    damaged generation older than the newest (one a break went past) is listed as
    damaged, with why; a damaged newest one is refused (DamagedFile): nobody can say who
    holds the resource, and `atlas lease break` is the way past it."""
    where = store.folder(record, resource)
    listing = store.generations(where)
    gens = []
    for i, (number, name) in enumerate(listing):
        try:
            gens.append(store.read(where, resource, name))
        except DamagedFile as exc:
            if i == len(listing) - 1:
                raise
            gens.append(Generation(resource=resource, generation=number, action="damaged",
                                   holder=None, why=exc.message, claimed_at=None,
                                   expires_at=None, duration_s=None, written_at="",
                                   written_by="", path=Path(where, name)))
    at = timeutil.now()
    lease = state_of(resource, gens[-1] if gens else None, at, record.config.clock_tolerance_s,
                     cap_s=record.config.lease_cap_s)
    out = []
    for i, gen in enumerate(gens):
        nxt = gens[i + 1] if i + 1 < len(gens) else None
        out.append(replace(gen, ended=_ending(gen, nxt, lease)))
    return lease, out


def _ending(gen: Generation, nxt: Generation | None, lease: Lease) -> str | None:
    if not gen.holds:
        return None
    if nxt is None:
        if lease.held:
            return f"holds it now, {left_text(lease)} left"
        return f"expired at {gen.expires_at}"
    if nxt.action == "renew":
        return f"renewed by {nxt.written_by} as generation {nxt.generation}"
    if nxt.action == "release":
        return f"released by {nxt.written_by}"
    if nxt.action == "break":
        return f"broken by {nxt.holder}: {nxt.why}"
    return f"expired at {gen.expires_at}; then claimed by {nxt.holder}"




@dataclass(frozen=True)
class Sheet:
    """Every lease, and beside each one that names a GPU (``<machine>.gpu<N>``) what that
    machine's last telemetry row says about it. Telemetry shows load, never intent: a
    GPU busy without a lease is listed, and a leased GPU may still sit idle."""

    leases: tuple[Lease, ...]
    telemetry: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    unleased_busy: tuple[dict[str, Any], ...] = ()
    problems: tuple[str, ...] = ()
    # Resources whose newest generation cannot be read, as rows with state "damaged";
    # apart from ``leases``, which hold only what can be read (held or free).
    damaged: tuple[Lease, ...] = ()
    # Set when the sheet is narrowed to the leases covering one repository path.
    path: str | None = None

    def rows(self) -> list[Lease]:
        """Every row to show, readable or damaged, by resource name."""
        return sorted((*self.leases, *self.damaged), key=lambda lease: lease.resource)

    def to_json(self) -> dict[str, Any]:
        return {
            "advisory": ADVISORY,
            "leases": [
                {**lease.to_json(), "telemetry": self.telemetry.get(lease.resource)}
                for lease in self.rows()
            ],
            "unleased_busy": list(self.unleased_busy),
            "problems": list(self.problems),
            **({"path": self.path} if self.path is not None else {}),
        }


def sheet(record: Record) -> Sheet:
    problems, leases, damaged = read_all(record)
    telemetry_problem = folder_problem(record)
    if telemetry_problem:  # else "busy but unleased" would read as "nothing busy"
        problems.append(telemetry_problem)
    usage = {lease.resource: resource_usage(record, lease.resource)
             for lease in (*leases, *damaged)}
    # A damaged lease may well be held: its GPU's load is no evidence of work without one.
    held = {lease.resource for lease in leases if lease.held} | {d.resource for d in damaged}
    busy = tuple(g for g in busy_gpus(record) if g.get("resource") not in held)
    return Sheet(tuple(leases), usage, busy, tuple(problems), tuple(damaged))


def covering(record: Record, query: str, *, folder: bool) -> Sheet:
    """The sheet narrowed to the unexpired leases whose path globs meet ``query`` (a
    checked glob or path): a file it names, or with ``folder`` anything under it. Rows
    that cannot be read stay, as they may well cover it."""
    problems, leases, damaged = read_all(record)
    hits = tuple(lease for lease in leases if lease.covers_paths
                 and any_overlap(lease.paths, [query], folders=folder))
    return Sheet(hits, {}, (), tuple(problems), tuple(damaged), path=query)
