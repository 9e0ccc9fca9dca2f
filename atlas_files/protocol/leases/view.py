"""Reading leases: the state computed at read time, history, and the whole sheet.

Nothing here writes. A lease's state (held or free) is never stored: it is computed from
the newest generation and this machine's clock each time it is read, which is why a
holder that vanishes frees the resource by doing nothing.
"""

from __future__ import annotations

import math
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput, DamagedFile
from atlas_files.facts.names import is_name
from atlas_files.protocol.leases import store
from atlas_files.protocol.leases.paths import any_overlap
from atlas_files.protocol.leases.store import Generation
from atlas_files.protocol.telemetry import busy_gpus, folder_problem, resource_usage
from atlas_files.storage import volclock

if TYPE_CHECKING:
    from atlas_files.storage.record import Record


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



class Lease(NamedTuple):
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
    # The writer's clock minus this reader's, both measured against the record's volume
    # (None: not measured, or not comparable); the truth lies within +/- the error.
    clock_skew_s: float | None = None
    clock_skew_error_s: float | None = None

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
            "clock_skew_s": self.clock_skew_s,
            "clock_skew_error_s": self.clock_skew_error_s,
        }


def state_of(resource: str, gen: Generation | None, at: datetime, tolerance_s: float,
             read_at: str | None = None, reader_clock: volclock.ClockOffset | None = None,
             allowance_s: float = 2.0, cap_s: float = 0.0) -> Lease:
    """The lease ``gen`` describes, read at time ``at`` by this machine's clock
    (``read_at``: ``at`` formatted, if the caller has it already). With ``reader_clock``
    (this machine's clock against the volume's) a held lease whose writer measured its own
    says how far the two clocks disagree, and warns past ``allowance_s``. ``cap_s``: the
    record's lease cap; a generation that says it runs longer (a hand edit) is read as
    expiring at the cap, and says so."""
    read_at = read_at or timeutil.format_time(at)
    if gen is None:
        return Lease(resource, 0, "free", None, None, None, None, None, None, None,
                     "never claimed", None, read_at)
    skew = None
    warnings: list[str | None] = []
    expires = gen.expires()
    expires_at = gen.expires_at
    if gen.holds:
        if expires is not None and cap_s > 0:
            capped = _capped(gen, expires, cap_s)
            if capped is not None:
                expires, expires_at = capped, timeutil.format_time(capped)
                warnings.append(
                    f"generation {gen.generation} says it expires at {gen.expires_at}, "
                    f"longer after it was written than the record's lease cap of "
                    f"{timeutil.format_duration(cap_s)} (a hand edit?): it is read as "
                    f"expiring at {expires_at}, the cap after it was written")
        if reader_clock is not None and gen.writer_clock is not None:
            skew = volclock.skew(gen.writer_clock, reader_clock)
            if _skew_matters(skew, expires, at):
                warnings.append(_skew_warning(gen, skew, allowance_s))
        warnings.append(_clock_warning(gen, at, tolerance_s))
    warning = "; ".join(w for w in warnings if w) or None
    skew_s = skew_error_s = None
    if skew is not None:
        # To a tenth of a second, the error rounded up: finer figures would be noise
        # (a reading on a local disk is good to a few hundredths), and two reads of one
        # lease a moment apart then print the same document.
        skew_s = round(skew.offset_s, 1) + 0.0  # + 0.0: never -0.0
        skew_error_s = max(0.1, math.ceil(skew.error_s * 10 - 1e-9) / 10)
    if gen.holds and expires is not None and at < expires:
        left = round((expires - at).total_seconds(), 3)
        return Lease(resource, gen.generation, "held", gen.holder, gen.why, gen.claimed_at,
                     expires_at, left, gen.action, gen.holder, None, warning, read_at,
                     paths=gen.paths, clock_skew_s=skew_s, clock_skew_error_s=skew_error_s)
    last = gen.holder if gen.holds else (gen.previous or {}).get("holder")
    ended = "expired" if gen.holds else "released"
    return Lease(resource, gen.generation, "free", None, None, None, None, None, gen.action,
                 last, ended, warning, read_at, clock_skew_s=skew_s,
                 clock_skew_error_s=skew_error_s)


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


def _seconds(value: float) -> str:
    return f"{abs(value):.1f} s"


def _skew_matters(skew: volclock.ClockOffset, expires: datetime | None, at: datetime) -> bool:
    """Whether the skew bears on the lease now: while it reads as held, and after it
    reads as expired for as long as its holder's clock, running behind, still holds it."""
    if expires is None or at < expires:
        return True
    return skew.offset_s < 0 and (at - expires).total_seconds() < skew.error_s - skew.offset_s


def _skew_warning(gen: Generation, skew: volclock.ClockOffset, allowance_s: float) -> str | None:
    """What a measured disagreement of the writer's clock and this one does to the expiry
    shown here, once it surely exceeds the allowance."""
    if not skew.beyond(allowance_s):
        return None
    who = f"{gen.written_by}'s clock (generation {gen.generation})"
    measured = (f"measured against the record's volume, +/- {skew.error_s:.2f} s; "
                f"allowance {_seconds(allowance_s)}")
    if skew.offset_s < 0:
        return (f"{who} runs {_seconds(skew.offset_s)} behind this machine's ({measured}): "
                f"here this lease reads as ended up to {_seconds(skew.offset_s)} before its "
                "holder's clock ends it, and for that long two workers can both believe "
                "they hold it")
    return (f"{who} runs {_seconds(skew.offset_s)} ahead of this machine's ({measured}): "
            f"here this lease reads as held up to {_seconds(skew.offset_s)} after its "
            "holder's clock ends it")


def reader_clock(record: Record, gens: list[Generation | None]) -> volclock.ClockOffset | None:
    """This machine's clock against the volume, measured in the leases folder, when some
    held lease among ``gens`` carries its writer's (None otherwise, or where it cannot be
    measured). A record that travels by git has a volume per clone: nothing to compare."""
    if record.config.sync is not None or not any(
            g is not None and g.holds and g.writer_clock is not None for g in gens):
        return None
    try:
        return volclock.measure(record.leases_dir)
    except OSError:
        return None  # a folder this reader cannot write: the expiry stands unjudged


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
    config = record.config
    found: list[tuple[str, Generation]] = []
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
            found.append((name, gen))
    clock = reader_clock(record, [gen for _, gen in found])
    out = [state_of(name, gen, at, config.clock_tolerance_s, read_at, clock,
                    config.clock_skew_allowance_s, config.lease_cap_s) for name, gen in found]
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
    newest = gens[-1] if gens else None
    lease = state_of(resource, newest, at, record.config.clock_tolerance_s,
                     reader_clock=reader_clock(record, [newest]),
                     allowance_s=record.config.clock_skew_allowance_s,
                     cap_s=record.config.lease_cap_s)
    out = []
    for i, gen in enumerate(gens):
        nxt = gens[i + 1] if i + 1 < len(gens) else None
        out.append(gen._replace(ended=_ending(gen, nxt, lease)))
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




class Sheet(NamedTuple):
    """Every lease, and beside each one that names a GPU (``<machine>.gpu<N>``) what that
    machine's last telemetry row says about it. Telemetry shows load, never intent: a
    GPU busy without a lease is listed, and a leased GPU may still sit idle."""

    leases: tuple[Lease, ...]
    telemetry: dict[str, dict[str, Any] | None] = {}  # noqa: RUF012 - never changed in place
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
