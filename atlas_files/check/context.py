"""What every check of one run shares: the report, where files are read from, the index,
the record's limits, and whether to fix what is safe to fix."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from atlas_files.check.index import RecordIndex
from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import AtlasError, BrokenInstall
from atlas_files.linkcheck.filesources import DiskSource, Source, why_unreadable
from atlas_files.linkcheck.findings import Report
from atlas_files.linkcheck.links import LinkChecker
from atlas_files.storage import config as configmod


@dataclass(frozen=True)
class Limits:
    status_limit: int = 4000  # config.DEFAULT_STATUS_LIMIT
    lease_cap_s: float = 4 * 3600.0
    clock_tolerance_s: float = 120.0
    projects: tuple[str, ...] = ()
    body_limit: int = 1 << 20  # config.DEFAULT_BODY_LIMIT


def limits_of(config_path: Path) -> Limits:
    """The record's limits; defaults where atlas.yaml cannot be read (that is reported
    by the config check, and must not stop the other checks)."""
    try:
        cfg = configmod.load(config_path)
    except Exception:  # noqa: BLE001 - any damage is reported by the config check
        return Limits()
    return Limits(cfg.status_limit, cfg.lease_cap_s, cfg.clock_tolerance_s, cfg.projects,
                  cfg.body_limit)


@dataclass
class CheckRun:
    root: Path
    report: Report
    source: Source
    index: RecordIndex
    fix: bool = False
    # Links are checked on disk, or against git's index for a commit.
    links: LinkChecker | None = None
    now: datetime = field(default_factory=lambda: timeutil.now())
    _limits: Limits | None = None

    @property
    def limits(self) -> Limits:
        # Read on first use: a commit touching only versions never pays for parsing YAML.
        if self._limits is None:
            self._limits = limits_of(self.root / layout.CONFIG_NAME)
        return self._limits

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


F = TypeVar("F", bound=Callable[..., None])


# What reading a damaged or hostile file can raise, anywhere from the bytes to the schema:
# a finding on that file (ATL002), like any other file that cannot be read as its kind.
DAMAGE = (AtlasError, OSError, ValueError, RecursionError, OverflowError, MemoryError)


def damage_message(exc: BaseException) -> str:
    """What is wrong with a file, from what reading it raised."""
    if isinstance(exc, RecursionError):
        return "cannot be read: it is nested too deeply"
    if isinstance(exc, MemoryError):
        return "cannot be read: it is too large to hold in memory"
    if isinstance(exc, OSError):
        return f"cannot be read: {why_unreadable(exc)}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start})"
    if isinstance(exc, OverflowError):
        return f"cannot be read: a number in it is out of range ({exc})"
    return f"cannot be read: {exc}"


def per_file(fn: F) -> F:
    """One file's check may fail in a way nobody foresaw; that is a finding on that file,
    never the end of the run: the other files are still checked. Damage (see DAMAGE) is
    ATL002; anything else is a bug in atlas (ATL099)."""

    @functools.wraps(fn)
    def guarded(ctx: CheckRun, path: Path, *args: Any, **kwargs: Any) -> None:
        try:
            fn(ctx, path, *args, **kwargs)
        except (KeyboardInterrupt, SystemExit, BrokenInstall):
            raise
        except DAMAGE as exc:
            ctx.report.add(path, getattr(exc, "line", 1) or 1, "ATL002", damage_message(exc))
        except Exception as exc:  # noqa: BLE001 - reported, see above
            ctx.report.add(path, 1, "ATL099", f"{type(exc).__name__}: {exc}"[:240])

    return guarded  # type: ignore[return-value]


def list_folder(ctx: CheckRun, folder: Path) -> list[str]:
    """The names in a record folder; [] if there is none. One that cannot be listed is a
    finding (ATL038), and the check goes on with the rest of the record."""
    if not isinstance(ctx.source, DiskSource):
        return ctx.source.listdir(folder)
    try:
        return os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        unreadable_folder(ctx, folder, exc)
        return []


def unreadable_folder(ctx: CheckRun, folder: Path, exc: OSError) -> None:
    ctx.report.add(folder, 1, "ATL038",
                   f"cannot list the folder {ctx.rel(folder)}: {why_unreadable(exc)}; "
                   "nothing in it was checked")


def check_not_ahead(ctx: CheckRun, path: Path, line: int, stamp: Any, what: str) -> None:
    """A time a writer stamped (``written_at``, an entry's ``at``) that lies ahead of this
    machine's clock by more than the record's clock tolerance: its writer's clock, or a
    hand edit, is wrong, and every reader sorting or ageing by it is misled ("in 26328
    days", newest of all)."""
    if not isinstance(stamp, str):
        return
    try:
        then = timeutil.parse_time(stamp)
    except ValueError:
        return  # the schema check says what is wrong with its form
    ahead = (then - ctx.now).total_seconds()
    if ahead > ctx.limits.clock_tolerance_s:
        ctx.report.add(path, line, "ATL022",
                       f"{what} {stamp} is {timeutil.format_duration(ahead)} in the future "
                       f"by this machine's clock (tolerance "
                       f"{timeutil.format_duration(ctx.limits.clock_tolerance_s)})")
