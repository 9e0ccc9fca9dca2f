"""One sync, and a write between a fetch and a push: the engine's entry points.

Loaded only for a record that syncs (see :mod:`atlas_files.sync`, whose switch decides).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from atlas_files.facts import layout
from atlas_files.facts.errors import AtlasError, BadInput, warn
from atlas_files.storage import fsio
from atlas_files.storage.config import SyncConfig, sync_block
from atlas_files.storage.gitcmd import Git
from atlas_files.storage.record import Record
from atlas_files.sync import accepted, drafts, repo
from atlas_files.sync.engine import Engine
from atlas_files.sync.errors import GitFailed, NotPushed, SyncRefused

__all__ = ["LOCK_WAIT_S", "GitFailed", "NotPushed", "Review", "SyncRefused", "SyncReport",
           "accept", "review", "sync", "synced_write"]

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
    drafts: tuple[str, ...]  # every draft waiting, relative to the record
    retries: int
    recovered: tuple[str, ...] = ()
    drafts_folder: str = ""  # where they wait
    # Drafts this sync removed: their writers had written a later version here since.
    drafts_removed: tuple[str, ...] = ()
    # What the atlas.yaml that came in changed, setting by setting, and what of it waits.
    config_changes: tuple[accepted.ConfigChange, ...] = ()
    # atlas.yaml's sync block as it differs from the one accepted here (None: it is that).
    pending: accepted.Pending | None = None

    def to_json(self) -> dict[str, Any]:
        return {"remote": self.remote, "branch": self.branch, "head": self.head,
                "came_in": list(self.came_in), "went_out": list(self.went_out),
                "left_out": list(self.left_out), "drafts": list(self.drafts),
                "drafts_waiting": len(self.drafts), "drafts_folder": self.drafts_folder,
                "drafts_removed": list(self.drafts_removed),
                "retries": self.retries, "recovered": list(self.recovered),
                "config_changes": [c.to_json() for c in self.config_changes],
                "pending": self.pending.to_json() if self.pending else None}


def _report(engine: Engine, pending: accepted.Pending | None) -> SyncReport:
    return SyncReport(
        remote=engine.cfg.remote, branch=engine.branch, head=engine.head,
        came_in=tuple(engine.tally.came_in), went_out=tuple(engine.went_out()),
        left_out=tuple(engine.tally.left_out), drafts=tuple(drafts.waiting(engine.record)),
        retries=engine.tally.retries, recovered=tuple(engine.tally.recovered),
        drafts_folder=str(engine.record.root / layout.DRAFTS),
        drafts_removed=tuple(engine.tally.drafts_removed),
        config_changes=tuple(engine.tally.config_changes), pending=pending,
    )


def _say_config(engine: Engine) -> None:
    """A synced write or read says what an atlas.yaml that came in changed: it has no
    report of its own to put it in."""
    for change in engine.tally.config_changes:
        warn(f"atlas.yaml from {engine.where} changes {change.sentence()}")


def _lost(engine: Engine) -> AtlasError:
    return drafts.error(engine.tally.collisions, engine.where,
                        engine.record.config.default_project)


def sync(record: Record, identity: str | None, cfg: SyncConfig | None = None, *,
         lock_wait_s: float = LOCK_WAIT_S) -> SyncReport:
    """Commit what atlas wrote here, fetch, integrate, push, with ``cfg``, else the sync
    settings accepted on this clone (NotAccepted, exit 2, when atlas.yaml holds a block
    this clone never accepted). SyncRefused (exit 1) when either side changed published
    history or the remote brings in what a record never holds; VersionConflict (exit 3)
    or LeaseHeld (exit 4) when a local version or lease change lost to the remote's (it is
    kept as a draft); GitFailed (exit 2) when git cannot do its part."""
    reported = cfg is None
    if cfg is None:
        cfg = accepted.standing(record, without_block=True).explicit()
    engine = Engine(record, cfg, identity)
    with engine.local.session(lock_wait_s) as died_at:
        engine.start(died_at)
        engine.commit_and_pull(f"sync ({identity or 'no identity'})")
        engine.exchange()
        engine.trust_head()
        report = _report(engine, None)
    if not reported:
        _say_config(engine)  # a read's sync: nothing prints its report
    else:
        # What waits now, with atlas.yaml as the sync left it (it may have come in).
        report = replace(report, pending=accepted.standing(
            Record(record.root), without_block=True).pending)
    if engine.tally.collisions:
        raise _lost(engine)
    return report


def synced_write(record: Record, identity: str | None, what: str, fn: Callable[[], T],
                 cfg: SyncConfig) -> T:
    """Run the write ``fn`` (an API call) between a fetch and a push.

    Fetches and integrates first, so the stop sign and lease checks judge the remote's
    latest; if the remote cannot be reached, nothing is written (GitFailed). Then ``fn``
    runs; its files are committed and pushed without force. When the push loses and the
    write's version was published first elsewhere, the version becomes a draft and
    VersionConflict is raised (LeaseHeld for a lease change). When the push cannot be
    made at all, the write stands here, a warning says so, and the next sync pushes it.
    """
    engine = Engine(record, cfg, identity)
    with engine.local.session(LOCK_WAIT_S) as died_at:
        engine.start(died_at)
        engine.commit_and_pull(f"sync before {what}")
        engine.exchange()
        _say_config(engine)
        if engine.tally.collisions:
            raise _lost(engine)  # an earlier write lost: say so before writing more
        with fsio.journal() as written:
            result = fn()
        try:
            engine.commit_local(what, written)
            engine.exchange()
            engine.trust_head()
        except GitFailed as exc:
            warn(f"{what}: written here, but not on {engine.where} yet: {exc.message}. "
                 "`atlas sync` pushes it (and says so if another machine published the "
                 "same version first)")
    if engine.tally.collisions:
        raise _lost(engine)
    return result




@dataclass(frozen=True)
class Review:
    """atlas.yaml's sync block beside the one accepted on this clone: what `atlas sync
    accept` would accept. ``to_json()`` is what it prints with --json."""

    root: str
    in_atlas_yaml: dict[str, Any] | None
    accepted: dict[str, Any] | None
    ever_accepted: bool
    remote_url: str | None  # the URL this clone's git config gives the block's remote
    kept_in: str | None = None  # set once accepted: the file that keeps it

    @property
    def needed(self) -> bool:
        return not self.ever_accepted or self.accepted != self.in_atlas_yaml

    def differences(self) -> list[str]:
        return accepted.Pending(self.accepted, self.in_atlas_yaml,
                                self.ever_accepted).differences()

    def to_json(self) -> dict[str, Any]:
        return {"record": self.root, "in_atlas_yaml": self.in_atlas_yaml,
                "accepted_before": self.accepted if self.ever_accepted else None,
                "ever_accepted": self.ever_accepted, "remote_url": self.remote_url,
                "differences": self.differences() if self.ever_accepted else [],
                "accepted": self.kept_in is not None, "kept_in": self.kept_in}


def review(record: Record) -> Review:
    """What `atlas sync accept` would accept on this clone. BadInput if the record is not
    in a git work tree, or if the block names a remote this clone's git config does not
    define (a person must never accept a push into a repository made of record files)."""
    mine = sync_block(record.config.sync)
    ever, block = accepted.accepted(record)
    remote = (record.config.sync or SyncConfig()).remote
    git = Git(record.root)
    repo.read_facts(git, record.root)  # a git work tree, on a branch, or BadInput
    url = repo.remote_url(git, remote)
    if url is None:
        raise BadInput(
            f"atlas.yaml's sync: block names the remote {remote!r}, which this clone's git "
            "config does not define; nothing was accepted",
            hint="`git remote -v` lists this clone's remotes: name one of them under sync: "
            "in atlas.yaml, or add it (`git remote add NAME URL`) if it is one you trust")
    return Review(os.path.realpath(record.root), mine, block, ever, url)


def accept(record: Record) -> Review:
    """Accept atlas.yaml's sync block (or its absence) on this clone, after the checks of
    :func:`review`; returns the review with where the acceptance is kept."""
    seen = review(record)
    path, _ = accepted.accept(record)
    return replace(seen, kept_in=str(path))
