"""Advisory leases: a sign-up sheet for shared machines, GPUs and datasets.

Before a long run a worker claims the resource, says why and for how long, and looks at
what others have claimed. A lease expires by itself: its state is computed whenever it is
read, so no cleanup job exists whose silent death could leave a resource blocked forever.
Every change is one compare-and-set (the exclusive creation of the next generation's file,
see leases.store), never a read followed by a blind write. The generation number doubles
as a fencing token: work done under a lease can carry it, and a consumer that has seen
generation 34 can refuse 33.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput, DamagedFile, LeaseHeld
from atlas_files.facts.names import check_name
from atlas_files.facts.text import clean_text
from atlas_files.protocol.leases import store, view
from atlas_files.protocol.leases.paths import any_overlap, check_glob, check_globs
from atlas_files.protocol.leases.store import Generation
from atlas_files.protocol.leases.view import ADVISORY, Lease, Sheet, left_text, state_of
from atlas_files.storage import volclock

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

__all__ = [
    "ADVISORY", "Generation", "Lease", "Sheet", "break_lease", "check_duration", "claim",
    "covering", "current",
    "ls", "overlapping", "release", "renew", "sheet", "show", "state_of",
]

MAX_WHY = 500
DEFAULT_BREAK_S = 3600.0
# A claim that loses its compare-and-set reads again and tries once more; this bounds how
# often, so a resource churned by many writers answers "busy" instead of spinning.
CLAIM_TRIES = 50

# -- checks done before any file is touched -------------------------------------------------


def _check_duration(record: Record, duration_s: float, given: str | None = None) -> float:
    """``given``: the duration as the caller wrote it (``300000000h``), said back as
    written rather than worked out into days."""
    cap = float(record.config.lease_cap_s)
    if not duration_s > 0:  # also refuses NaN, which compares false to everything
        raise BadInput("a lease needs a duration above zero", hint="e.g. --for 90m")
    if duration_s > cap:
        asked = given.strip() if given else exact_duration(min(duration_s, 1e12))
        raise BadInput(
            f"{asked} is longer than this record's "
            f"lease cap of {exact_duration(cap)}; nothing was claimed",
            hint="ask for at most the cap and renew before it runs out (lease_cap in "
            "atlas.yaml can raise the cap up to 24h)",
        )
    return float(duration_s)


def check_duration(record: Record, duration_s: float, given: str | None = None) -> float:
    """A claim's duration, refused (BadInput) unless above zero and within the cap."""
    return _check_duration(record, duration_s, given)


def parse_duration(text: str | None) -> float | None:
    """A lease duration as written on a command line (``90m``, ``1h30m``); None stays None
    (renew and break then keep their defaults)."""
    if text is None:
        return None
    if len(text) > 40:  # no duration a lease cap allows is this long; do not echo it all
        raise BadInput(f"bad duration {text[:40]!r}...: {len(text)} characters",
                       hint="write it like 45s, 90m, 2h or 1h30m")
    try:
        return timeutil.parse_duration(text)
    except OverflowError:  # more digits than a float holds: far beyond any lease cap
        raise BadInput(f"the duration {text!r} is far longer than any lease cap",
                       hint="e.g. --for 90m; `atlas lease --help` says what the cap is") from None


def exact_duration(seconds: float) -> str:
    """``4h0m1s`` for 14401: every unit between the largest and the smallest that is not
    zero, so a duration just over the cap never reads as the cap itself (the rounding
    ``format_duration`` does for ages would show 4h)."""
    whole, millis = divmod(round(seconds * 1000), 1000)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    sec_text = f"{secs}.{millis:03d}".rstrip("0") if millis else str(secs)
    parts = [(days, f"{days}d"), (hours, f"{hours}h"), (minutes, f"{minutes}m"),
             (secs + millis, f"{sec_text}s")]
    used = [i for i, (value, _) in enumerate(parts) if value]
    if not used:
        return "0s"
    return "".join(text for _, text in parts[used[0]:used[-1] + 1])


def _check_why(why: str | None, flag: str = "--why") -> str:
    """The same rule as every other free text (atlas_files.facts.text): one line, no control
    characters, valid UTF-8, at most MAX_WHY characters."""
    return clean_text(why, f"the reason ({flag})", one_line=True, limit=MAX_WHY,
                      elsewhere="a status or an artifact, and name it here")


def _times(at: datetime, duration_s: float) -> tuple[str, str]:
    return timeutil.format_time(at), timeutil.format_time(at + timedelta(seconds=duration_s))


def _summary(gen: Generation) -> dict[str, Any]:
    return {"generation": gen.generation, "action": gen.action, "holder": gen.holder,
            "why": gen.why, "expires_at": gen.expires_at}


def held_error(lease: Lease) -> LeaseHeld:
    return LeaseHeld(
        f"{lease.resource} is held by {lease.holder} for {left_text(lease)} more (until "
        f"{lease.expires_at}, generation {lease.generation}): {lease.why}",
        hint=f"wait for it to expire or be released; if {lease.holder} is gone, "
        f"`atlas lease break {lease.resource} --why TEXT` takes it over and records why",
    )


def _moved(resource: str, mine: int, now: Lease) -> LeaseHeld:
    who = f"held by {now.holder}" if now.held else "free"
    return LeaseHeld(
        f"the lease of {resource} moved on: you acted on generation {mine}, but it is at "
        f"generation {now.generation} ({who}); nothing was changed",
        hint=f"read it again with `atlas lease show {resource}`; work done under generation "
        f"{mine} is stale",
    )


def _read(record: Record, resource: str) -> tuple[Path, Generation | None, datetime, Lease]:
    where = store.folder(record, resource)
    gen = store.newest(where, resource)
    at = timeutil.now()
    return where, gen, at, state_of(resource, gen, at, record.config.clock_tolerance_s,
                    cap_s=record.config.lease_cap_s)


def _publish(record: Record, where: Path, gen: Generation, at: datetime,
             taken_from: Generation | None = None) -> Lease:
    """Create ``gen``; the lease as it stands after. ``taken_from``: the expired holding
    of someone else that a claim just replaced, whose holder may not know yet."""
    gen = store.publish(where, gen, within=record.opened)
    lease = state_of(gen.resource, gen, at, record.config.clock_tolerance_s,
                     cap_s=record.config.lease_cap_s)
    late = _still_believed(taken_from, gen, at, record.config.clock_skew_allowance_s)
    if late:
        lease = lease._replace(clock_warning="; ".join(
            w for w in (late, lease.clock_warning) if w))
    return lease


def _still_believed(old: Generation | None, new: Generation, at: datetime,
                    allowance_s: float) -> str | None:
    """Said to a claimer that took over an expired lease whose holder's clock, measured
    against the volume, runs behind the claimer's beyond the allowance: by its own clock
    that holder still holds the lease, and may still be using the resource."""
    if old is None or old.writer_clock is None or new.writer_clock is None:
        return None
    skew = volclock.skew(old.writer_clock, new.writer_clock)
    expires = old.expires()
    if expires is None or skew.offset_s >= 0 or not skew.beyond(allowance_s):
        return None
    # By this machine's clock the old holder's time ends at expires - skew.
    left = (expires - at).total_seconds() - skew.offset_s
    if left <= 0:
        return None
    return (f"{old.holder}'s clock runs {abs(skew.offset_s):.1f} s behind this machine's "
            f"(+/- {skew.error_s:.1f} s, measured against the record's volume): by its own "
            f"clock {old.holder}'s lease (generation {old.generation}) has {left:.1f} s left, "
            "so it may still be using the resource")


# -- the four writes -------------------------------------------------------------------------


def claim(record: Record, resource: str, *, holder: str, duration_s: float, why: str,
          paths: Sequence[str] = (), given: str | None = None) -> Lease:
    """Take ``resource`` for ``duration_s`` seconds; LeaseHeld if another holds it.

    ``paths`` are repository path globs the lease covers (leases.paths says how they
    match). A claim by the current holder renews; without ``paths`` it keeps the ones
    the lease has, so extending a path lease never drops them by omission. The claim
    succeeds only if the generation it read is still the newest; if another writer
    created the next one first, it reads again. ``given``: the duration as written, for
    messages.
    """
    check_name(resource, "resource name")
    holder = check_name(holder, "identity")
    duration_s = _check_duration(record, duration_s, given)
    why = _check_why(why)
    covered = check_globs(paths, "the path glob (--paths)")
    for _ in range(CLAIM_TRIES):
        where, gen, at, lease = _read(record, resource)
        if lease.held and lease.holder != holder:
            raise held_error(lease)
        claimed_at, expires_at = _times(at, duration_s)
        mine = lease.held and gen is not None
        new = Generation(
            resource=resource, generation=lease.generation + 1,
            action="renew" if mine else "claim", holder=holder, why=why,
            claimed_at=gen.claimed_at if mine and gen else claimed_at, expires_at=expires_at,
            duration_s=duration_s, written_at=claimed_at, written_by=holder,
            paths=covered or (gen.paths if mine and gen else ()),
            previous=_summary(gen) if gen else None,
        )
        taken = gen if gen is not None and gen.holds and gen.holder != holder else None
        try:
            return _publish(record, where, new, at, taken)
        except FileExistsError:
            continue
    raise LeaseHeld(
        f"{resource} changed {CLAIM_TRIES} times while this claim was being made",
        hint=f"it is busy; look with `atlas lease show {resource}` and try again later",
    )


def _own(record: Record, resource: str, holder: str, generation: int | None,
         verb: str) -> tuple[Path, Generation, datetime, Lease]:
    """The newest generation, if ``holder`` holds it (or held it last and it expired)."""
    check_name(resource, "resource name")
    where, gen, at, lease = _read(record, resource)
    if generation is not None and generation != lease.generation:
        if generation > lease.generation:
            raise BadInput(f"{resource} has no generation {generation} (it is at "
                           f"{lease.generation})", hint=f"`atlas lease show {resource}`")
        raise _moved(resource, generation, lease)
    if gen is None:
        raise BadInput(f"cannot {verb} {resource}: nobody has ever claimed it",
                       hint=f"claim it with `atlas lease claim {resource} --for D --why T`")
    if lease.held and lease.holder != holder:
        raise held_error(lease)
    if not gen.holds or gen.holder != holder:
        raise BadInput(
            f"cannot {verb} {resource}: you ({holder}) do not hold it; it is free at "
            f"generation {lease.generation}, nothing was changed",
            hint=f"claim it with `atlas lease claim {resource} --for D --why T`",
        )
    return where, gen, at, lease


def renew(record: Record, resource: str, *, holder: str, duration_s: float | None = None,
          generation: int | None = None, given: str | None = None) -> Lease:
    """Extend ``holder``'s lease by ``duration_s`` from now (default: its last duration).

    Conditional on ``holder`` holding the newest generation (``generation`` too, if
    given). A lease that expired but that nobody took since can still be renewed.
    """
    holder = check_name(holder, "identity")
    if duration_s is not None:
        _check_duration(record, duration_s, given)
    where, gen, at, lease = _own(record, resource, holder, generation, "renew")
    duration = _check_duration(record, duration_s or gen.duration_s or DEFAULT_BREAK_S)
    start, expires_at = _times(at, duration)
    new = Generation(
        resource=resource, generation=gen.generation + 1, action="renew", holder=holder,
        why=gen.why, claimed_at=gen.claimed_at if lease.held else start,
        expires_at=expires_at, duration_s=duration, written_at=start, written_by=holder,
        paths=gen.paths, previous=_summary(gen),
    )
    try:
        return _publish(record, where, new, at)
    except FileExistsError:
        raise _moved(resource, gen.generation, _read(record, resource)[3]) from None


def release(record: Record, resource: str, *, holder: str, generation: int | None = None) -> Lease:
    """Give ``resource`` back; conditional on ``holder`` holding the newest generation."""
    holder = check_name(holder, "identity")
    where, gen, at, _ = _own(record, resource, holder, generation, "release")
    now = timeutil.format_time(at)
    new = Generation(
        resource=resource, generation=gen.generation + 1, action="release", holder=None,
        why=None, claimed_at=None, expires_at=None, duration_s=None, written_at=now,
        written_by=holder, previous=_summary(gen),
    )
    try:
        return _publish(record, where, new, at)
    except FileExistsError:
        raise _moved(resource, gen.generation, _read(record, resource)[3]) from None


def break_lease(record: Record, resource: str, *, holder: str, why: str,
                duration_s: float | None = None, generation: int | None = None,
                given: str | None = None) -> Lease:
    """Take over an unexpired lease whose holder is gone; the break, its reason and the
    previous holder are recorded in the new generation. A damaged newest generation can
    be broken too."""
    check_name(resource, "resource name")
    holder = check_name(holder, "identity")
    why = _check_why(why)
    cap = float(record.config.lease_cap_s)
    duration = _check_duration(record, duration_s or min(DEFAULT_BREAK_S, cap), given)
    where = store.folder(record, resource)
    listing = store.generations(where)
    try:
        gen = store.read(where, resource, listing[-1][1]) if listing else None
        damaged = None
    except DamagedFile as exc:
        gen, damaged = None, exc.message
    at = timeutil.now()
    number = listing[-1][0] if listing else 0
    if generation is not None and generation != number:
        raise _moved(resource, generation, state_of(resource, gen, at, 0))
    lease = state_of(resource, gen, at, record.config.clock_tolerance_s,
                    cap_s=record.config.lease_cap_s)
    if damaged is None and not lease.held:
        raise BadInput(f"{resource} is free ({lease.ended}); there is nothing to break",
                       hint=f"claim it with `atlas lease claim {resource} --for D --why T`")
    if lease.holder == holder:
        raise BadInput(f"you ({holder}) hold {resource} already",
                       hint="renew or release it instead of breaking it")
    start, expires_at = _times(at, duration)
    previous: dict[str, Any] = (
        _summary(gen) if gen else {"generation": number, "damaged": damaged}
    )
    if gen:
        previous["expires_in_s"] = lease.expires_in_s
    new = Generation(
        resource=resource, generation=number + 1, action="break", holder=holder, why=why,
        claimed_at=start, expires_at=expires_at, duration_s=duration, written_at=start,
        written_by=holder, paths=gen.paths if gen else (), previous=previous,
    )
    try:
        return _publish(record, where, new, at)
    except FileExistsError:
        raise _moved(resource, number, _read(record, resource)[3]) from None


# -- reads ------------------------------------------------------------------------------------


def current(record: Record, resource: str) -> Lease:
    """The lease of ``resource`` now (free, generation 0, if never claimed)."""
    return _read(record, resource)[3]


def ls(record: Record) -> list[Lease]:
    """Every resource that ever had a lease, by name; damaged ones are left out (see
    ``problems``)."""
    return problems_and_leases(record)[1]


def show(record: Record, resource: str) -> tuple[Lease, list[Generation]]:
    """The lease now and every generation, oldest first, each saying how it ended."""
    return view.show(record, resource)


def problems_and_leases(record: Record) -> tuple[list[str], list[Lease]]:
    return view.problems_and_leases(record)


def sheet(record: Record) -> Sheet:
    """The whole sign-up sheet, with GPU telemetry beside the leases that name a GPU."""
    return view.sheet(record)


def covering(record: Record, query: str, *, folder: bool = False) -> Sheet:
    """The unexpired leases whose path globs cover ``query`` (a repository path or glob,
    checked here), or with ``folder`` also anything under it; unreadable rows stay."""
    return view.covering(record, check_glob(query, "the path"), folder=folder)


def overlapping(record: Record, globs: Sequence[str], *, besides: str) -> list[Lease]:
    """Unexpired leases of other holders than ``besides`` whose paths overlap ``globs``:
    said on a claim, never refused (two resources may share paths; the sheet is advisory)."""
    if not globs:
        return []
    return [lease for lease in ls(record) if lease.covers_paths and lease.holder != besides
            and any_overlap(lease.paths, globs)]
