"""What every check of one run shares: the report, where files are read from, the index,
the record's limits, and whether to fix what is safe to fix."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from atlas_files import timeutil
from atlas_files.check.findings import Report
from atlas_files.check.index import RecordIndex
from atlas_files.check.links import LinkChecker
from atlas_files.check.sources import Source


@dataclass(frozen=True)
class Limits:
    status_limit: int = 4000  # config.DEFAULT_STATUS_LIMIT
    lease_cap_s: float = 4 * 3600.0
    clock_tolerance_s: float = 120.0
    projects: tuple[str, ...] = ()


def limits_of(config_path: Path) -> Limits:
    """The record's limits; defaults where atlas.yaml cannot be read (that is reported
    by the config check, and must not stop the other checks)."""
    from atlas_files import config as configmod

    try:
        cfg = configmod.load(config_path)
    except Exception:  # noqa: BLE001 - any damage is reported by the config check
        return Limits()
    return Limits(cfg.status_limit, cfg.lease_cap_s, cfg.clock_tolerance_s, cfg.projects)


@dataclass
class Context:
    root: Path
    report: Report
    source: Source
    index: RecordIndex
    fix: bool = False
    # Links are checked on disk, or against git's index for a commit.
    links: LinkChecker | None = None
    now: datetime = field(default_factory=timeutil.now)
    _limits: Limits | None = None

    @property
    def limits(self) -> Limits:
        # Read on first use: a commit touching only versions never pays for parsing YAML.
        if self._limits is None:
            self._limits = limits_of(self.root / "atlas.yaml")
        return self._limits

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


F = TypeVar("F", bound=Callable[..., None])


def per_file(fn: F) -> F:
    """One file's check may fail in a way nobody foresaw; that is a finding on that file
    (and a bug to report), never the end of the run: the other files are still checked."""

    @functools.wraps(fn)
    def guarded(ctx: Context, path: Path, *args: Any, **kwargs: Any) -> None:
        try:
            fn(ctx, path, *args, **kwargs)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - reported, see above
            ctx.report.add(path, 1, "ATL099", f"{type(exc).__name__}: {exc}"[:240])

    return guarded  # type: ignore[return-value]


def make_context(root: Path, report: Report, source: Source, fix: bool = False) -> Context:
    from atlas_files.check import refs

    ctx = Context(root, report, source, RecordIndex(root, source), fix)
    ctx.links = LinkChecker(report, source, on_target=refs.on_link_target(ctx))
    return ctx


def why_unreadable(exc: OSError) -> str:
    import errno

    if exc.errno == errno.ELOOP:
        return "it is a symbolic link, and the record never follows one (readers skip it)"
    return str(exc.strerror or exc)
