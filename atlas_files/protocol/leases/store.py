"""How a lease lies on disk: one immutable file per generation, the newest is the state.

``leases/<resource>/g00000007.json`` is generation 7 of that resource's lease. A change
(claim, renew, release, break) is the exclusive creation of the next generation's file, so
of two writers that read generation N only one can create N+1: that create is the lease's
compare-and-set. Every earlier generation stays as history. The newest is found from the
folder listing alone; only that one file is opened.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput, DamagedFile
from atlas_files.facts.layout import generation_filename, generation_number
from atlas_files.facts.names import check_name, quote
from atlas_files.protocol.leases import paths as leasepaths
from atlas_files.storage import fsio, jsonfile, volclock

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

ACTIONS = ("claim", "renew", "release", "break")
KIND = "lease"
# A generation is a few hundred bytes; a file far larger was not written by atlas and is
# refused unread.
GENERATION_LIMIT = 1 << 20


# Each time of a generation is parsed when it is read and again when its state is computed;
# a reader of a thousand leases (the commit guard) parses each string once. Datetimes are
# immutable, so sharing them is safe.
parse_time = lru_cache(maxsize=8192)(timeutil.parse_time)


class Generation(NamedTuple):
    """One generation file, as written. ``ended`` is filled in by history reads only."""

    resource: str
    generation: int
    action: str  # claim | renew | release | break
    holder: str | None  # None after a release
    why: str | None
    claimed_at: str | None
    expires_at: str | None
    duration_s: float | None
    written_at: str
    written_by: str
    # Repository path globs the lease covers (see leases.paths); () for a lease on a
    # machine or a dataset. Kept by a renew and a break, cleared by a release.
    paths: tuple[str, ...] = ()
    previous: Mapping[str, Any] | None = None
    path: Path | None = None
    ended: str | None = None
    # The writer's clock against the volume's as it wrote this generation (volclock);
    # None in generations written before it was measured, or where it could not be.
    writer_clock: volclock.ClockOffset | None = None

    @property
    def holds(self) -> bool:
        """True if this generation names a holder (it may still have expired)."""
        return self.holder is not None and self.action != "release"

    def expires(self) -> datetime | None:
        return parse_time(self.expires_at) if self.expires_at else None

    def to_file(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "resource": self.resource,
            "generation": self.generation,
            "action": self.action,
            "holder": self.holder,
            "why": self.why,
            "claimed_at": self.claimed_at,
            "expires_at": self.expires_at,
            "duration_s": self.duration_s,
            "written_at": self.written_at,
            "written_by": self.written_by,
            # Only on a lease that has paths: every generation written before path leases
            # existed reads the same, and so does every lease on a machine.
            **({"paths": list(self.paths)} if self.paths else {}),
            "previous": dict(self.previous) if self.previous is not None else None,
            **({"writer_clock": clock_json(self.writer_clock)} if self.writer_clock else {}),
        }

    def to_json(self) -> dict[str, Any]:
        data = self.to_file()
        del data["kind"]
        data["paths"] = list(self.paths)
        data["writer_clock"] = clock_json(self.writer_clock) if self.writer_clock else None
        data["ended"] = self.ended
        data["path"] = str(self.path) if self.path else None
        return data


def clock_json(clock: volclock.ClockOffset) -> dict[str, float]:
    """A generation's ``writer_clock``: the writer's clock minus the volume's."""
    return {"ahead_of_volume_s": round(clock.offset_s, 3), "error_s": round(clock.error_s, 3),
            "resolution_s": clock.resolution_s}


def _writer_clock(value: Any) -> volclock.ClockOffset | None:
    """``writer_clock`` as read; anything malformed reads as not measured (it only ever
    adds a warning, and `atlas check`'s schema reports the damage)."""
    if not isinstance(value, dict):
        return None
    numbers = [value.get(k) for k in ("ahead_of_volume_s", "error_s", "resolution_s")]
    if not all(isinstance(n, int | float) and not isinstance(n, bool)
               and abs(n) < 1e9 for n in numbers):
        return None
    offset, error, resolution = (float(n) for n in numbers)  # type: ignore[arg-type]
    return volclock.ClockOffset(offset, abs(error), abs(resolution))


def folder(record: Record, resource: str) -> Path:
    """The folder of ``resource``'s generations; the name is checked before any path."""
    check_name(resource, "resource name")
    return record.path("leases", resource)


def not_a_folder(where: Path) -> DamagedFile:
    """``where`` (a resource's folder, or leases/ itself) has something else in its place."""
    return DamagedFile(
        f"{where} should be a folder of lease generations, but something else is in its "
        "place",
        hint="move it aside and restore the folder (from git, if the record is in one); "
        "`atlas check` lists what else is wrong",
    )


def _names(where: Path | str) -> list[str]:
    try:
        return os.listdir(where)
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        # Name the part that is wrong: the resource's folder, or leases/ above it.
        where = Path(where)
        bad = where if os.path.isdir(where.parent) else where.parent
        raise not_a_folder(bad) from None


def _parse_listing(where: Path, names: list[str]) -> list[tuple[int, str]]:
    found = []
    debris = False
    for name in names:
        number = generation_number(name)
        if number is not None:
            found.append((number, name))
        elif fsio.is_temp(name):
            debris = True
    if debris:
        fsio.clean_debris(where)
    found.sort()
    return found


def generations(where: Path) -> list[tuple[int, str]]:
    """(number, file name) of each generation in ``where``, ascending, from the listing.

    Temp files seen in the listing are crash debris or writes in flight; debris is
    removed here (the listing is needed anyway, so a clean folder costs nothing extra).
    """
    return _parse_listing(where, _names(where))


# Past this name, generations need nine digits and name order stops being number order.
_LAST_EIGHT_DIGITS = generation_filename(99_999_999)


def newest_name(where: Path | str) -> tuple[int, str] | None:
    """The newest generation's (number, file name), from the listing alone.

    Every claim and every `lease ls` row pays for this, and a busy lease has thousands of
    generations, so the common case is answered by C-level min/max over the names: temp
    files start with "." and sort first, zero-padded generations sort by number.
    """
    names = _names(where)
    if not names:
        return None
    if min(names).startswith("."):
        fsio.clean_debris(Path(where))
    top = max(names)
    number = generation_number(top)
    if number is not None and top < _LAST_EIGHT_DIGITS:
        return number, top
    listing = _parse_listing(Path(where), names)  # a stray file, or past 10^8 changes
    return listing[-1] if listing else None


def _damaged(path: Path, what: str) -> DamagedFile:
    return DamagedFile(
        f"lease generation {path} is damaged: {what}",
        hint="generations are never edited; run `atlas check`. `atlas lease break "
        "RESOURCE --why TEXT` takes the resource over past a damaged generation",
    )


def _opt_str(data: Mapping[str, Any], key: str, path: Path) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise _damaged(path, f"{key} should be text or null")
    return value


def parse(path: Path, data: bytes, resource: str | None = None) -> Generation:
    """Read one generation file; anything that is not one raises DamagedFile."""
    try:
        raw = jsonfile.loads(data)  # never a parser's RecursionError, never an infinity
    except jsonfile.JSONDamage as exc:
        raise _damaged(path, str(exc)) from None
    if not isinstance(raw, dict):
        raise _damaged(path, "not a JSON object")
    named = generation_number(path.name)
    number = raw.get("generation")
    if not isinstance(number, int) or isinstance(number, bool) or (
            named is not None and named != number):
        raise _damaged(path, "its generation does not match its file name")
    if raw.get("action") not in ACTIONS:
        raise _damaged(path, f"action should be one of {', '.join(ACTIONS)}")
    if resource is not None and raw.get("resource") != resource:
        raise _damaged(path, f"it names resource {quote(raw.get('resource'))}, not "
                       f"{resource!r}")
    times = {k: _opt_str(raw, k, path) for k in ("claimed_at", "expires_at", "written_at")}
    for key, value in times.items():
        if value is not None:
            try:
                parse_time(value)
            except ValueError:
                raise _damaged(path, f"{key} is not a time: {quote(value)}") from None
    duration = raw.get("duration_s")
    if duration is not None and not isinstance(duration, int | float):
        raise _damaged(path, "duration_s should be a number")
    previous = raw.get("previous")
    holder = _opt_str(raw, "holder", path)
    covered = _paths(raw.get("paths"), path)
    if raw["action"] != "release" and (holder is None or times["expires_at"] is None):
        raise _damaged(path, f"a {raw['action']} names a holder and an expiry")
    return Generation(
        resource=str(raw.get("resource")),
        generation=number,
        action=raw["action"],
        holder=holder,
        why=_opt_str(raw, "why", path),
        claimed_at=times["claimed_at"],
        expires_at=times["expires_at"],
        duration_s=float(duration) if duration is not None else None,
        written_at=times["written_at"] or "",
        written_by=_opt_str(raw, "written_by", path) or "",
        paths=covered,
        previous=previous if isinstance(previous, dict) else None,
        path=path,
        writer_clock=_writer_clock(raw.get("writer_clock")),
    )


def _paths(value: Any, path: Path) -> tuple[str, ...]:
    """The path globs of a generation; a glob atlas would refuse to write is damage (an
    absolute path or a ``..`` must not widen what a hand-edited lease covers)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _damaged(path, "paths should be a list of path globs")
    try:
        return leasepaths.check_globs(value)
    except BadInput as exc:
        raise _damaged(path, f"paths: {exc.message}") from None


def read(where: Path | str, resource: str, name: str) -> Generation:
    """Read one generation; a symlink is damage, never followed (it may lead outside the
    record, and a lease the record cannot vouch for must not decide who holds what)."""
    path = Path(where, name)
    try:
        data = fsio.read_nofollow(path, GENERATION_LIMIT)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _damaged(path, "it is a symlink, and the record never follows one") from None
        if isinstance(exc, IsADirectoryError):
            raise _damaged(path, "it is a folder, not a file") from None
        if isinstance(exc, fsio.FileTooLarge):
            raise _damaged(path, f"it is {exc.size} bytes, far more than a generation "
                           "holds") from None
        raise _damaged(path, f"it cannot be read ({exc.strerror or exc})") from None
    return parse(path, data, resource)


def newest(where: Path | str, resource: str) -> Generation | None:
    found = newest_name(where)
    return read(where, resource, found[1]) if found else None


def encode(data: Mapping[str, Any]) -> bytes:
    """One key per line, for a person reading the file; each value through json's C
    encoder, which ``indent=`` would replace with its slow pure-Python one."""
    lines = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in data.items()]
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode("utf-8")


def publish(where: Path, gen: Generation, *, within: fsio.OpenRoot | None = None) -> Generation:
    """Exclusively create ``gen``'s file. FileExistsError: another writer got there first.
    ``within``: the record the command opened (the folder is reached from it).

    The generation carries the writer's clock against the volume's, measured in ``where``
    just before, so a reader on another machine can tell how far the expiry it judges by
    its own clock is off (leases.view)."""
    try:
        folder = fsio.open_folder(where, within=within, create=True)
    except (FileExistsError, NotADirectoryError):
        raise not_a_folder(where if os.path.isdir(where.parent) else where.parent) from None
    with folder:
        try:
            gen = gen._replace(writer_clock=volclock.measure(where))
        except OSError:
            pass  # the folder takes no file: the publish below says why
        path = folder.publish_exclusive(generation_filename(gen.generation),
                                        encode(gen.to_file()))
    return gen._replace(path=path)
