"""One sync, and a write between a fetch and a push: the engine's entry points.

Loaded only for a record that syncs (see :mod:`atlas_files.sync`, whose switch decides).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from atlas_files import fsio
from atlas_files.api import Worker
from atlas_files.config import SyncConfig
from atlas_files.errors import AtlasError, warn
from atlas_files.sync import drafts
from atlas_files.sync.engine import Engine
from atlas_files.sync.errors import GitFailed, NotPushed, SyncRefused

__all__ = ["LOCK_WAIT_S", "GitFailed", "NotPushed", "SyncRefused", "SyncReport", "sync",
           "synced_write"]

T = TypeVar("T")

# A second sync of the same checkout waits this long for the first.
LOCK_WAIT_S = 60.0


@dataclass(frozen=True)
class SyncReport:
    """What one sync did; ``to_json()`` is what `atlas sync --json` prints."""

    remote: str
    branch: str
    head: str | None
    came_in: tuple[str, ...]
    went_out: tuple[str, ...]
    left_out: tuple[str, ...]
    drafts: tuple[str, ...]
    retries: int
    recovered: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"remote": self.remote, "branch": self.branch, "head": self.head,
                "came_in": list(self.came_in), "went_out": list(self.went_out),
                "left_out": list(self.left_out), "drafts": list(self.drafts),
                "retries": self.retries, "recovered": list(self.recovered)}


def _report(engine: Engine) -> SyncReport:
    return SyncReport(
        remote=engine.cfg.remote, branch=engine.branch, head=engine.head,
        came_in=tuple(engine.tally.came_in), went_out=tuple(engine.went_out()),
        left_out=tuple(engine.tally.left_out), drafts=tuple(drafts.waiting(engine.record)),
        retries=engine.tally.retries, recovered=tuple(engine.tally.recovered),
    )


def _lost(engine: Engine) -> AtlasError:
    return drafts.error(engine.tally.collisions, engine.where,
                        engine.record.config.default_project)


def sync(worker: Worker, cfg: SyncConfig | None = None, *,
         lock_wait_s: float = LOCK_WAIT_S) -> SyncReport:
    """Commit what atlas wrote here, fetch, integrate, push. SyncRefused (exit 1) when
    either side changed published history; VersionConflict (exit 3) or LeaseHeld (exit 4)
    when a local version or lease change lost to the remote's (it is kept as a draft);
    GitFailed (exit 2) when git cannot do its part."""
    record = worker.record
    engine = Engine(record, cfg or record.config.sync or SyncConfig(), worker.identity)
    with engine.local.session(lock_wait_s) as died_at:
        engine.start(died_at)
        engine.commit_and_pull(f"sync ({worker.identity or 'no identity'})")
        engine.exchange()
        report = _report(engine)
    if engine.tally.collisions:
        raise _lost(engine)
    return report


def synced_write(worker: Worker, what: str, fn: Callable[[], T],
                 cfg: SyncConfig | None = None) -> T:
    """Run the write ``fn`` (an API call) between a fetch and a push.

    Fetches and integrates first, so the stop sign and lease checks judge the remote's
    latest; if the remote cannot be reached, nothing is written (GitFailed). Then ``fn``
    runs; its files are committed and pushed without force. When the push loses and the
    write's version was published first elsewhere, the version becomes a draft and
    VersionConflict is raised (LeaseHeld for a lease change). When the push cannot be
    made at all, the write stands here, a warning says so, and the next sync pushes it.
    """
    record = worker.record
    engine = Engine(record, cfg or record.config.sync or SyncConfig(), worker.identity)
    with engine.local.session(LOCK_WAIT_S) as died_at:
        engine.start(died_at)
        engine.commit_and_pull(f"sync before {what}")
        engine.exchange()
        if engine.tally.collisions:
            raise _lost(engine)  # an earlier write lost: say so before writing more
        with fsio.journal() as written:
            result = fn()
        try:
            engine.commit_local(what, written)
            engine.exchange()
        except GitFailed as exc:
            warn(f"{what}: written here, but not on {engine.where} yet: {exc.message}. "
                 "`atlas sync` pushes it (and says so if another machine published the "
                 "same version first)")
    if engine.tally.collisions:
        raise _lost(engine)
    return result


