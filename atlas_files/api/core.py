"""The record core: init, put, get, ls, history, diff, feed (and, re-exported from
:mod:`atlas_files.api.status`, the status stream's functions).

Each function returns a frozen result whose ``to_json()`` is the document the matching
``atlas ... --json`` prints; the CLI renders its text from the same result.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files.api import Worker, reads, writes
from atlas_files.api.status import (
    StatusView,
    check_status_write,
    status_diff,
    status_log,
    status_show,
    status_write,
)
from atlas_files.api.versions import (
    NO_MARKS,
    DiffView,
    TopicView,
    VersionList,
    Written,
    body_to_write,
    marks,
    version_json,
    version_list,
)
from atlas_files.facts import layout
from atlas_files.facts.errors import warn
from atlas_files.protocol import artifacts, corrections
from atlas_files.protocol import feed as feedmod
from atlas_files.protocol.artifacts import TopicSummary
from atlas_files.protocol.feed import FeedItem
from atlas_files.storage.record import Record, require_identity

if TYPE_CHECKING:
    from atlas_files.protocol.volume import Check

__all__ = ["NO_MARKS", "DiffView", "Feed", "RecordInfo", "StatusView", "TopicList",
           "TopicView", "VersionList", "Written", "check_status_write", "check_write", "diff",
           "feed", "get", "history", "init", "ls", "put", "status_diff", "status_log",
           "status_show", "status_write", "version_json"]


@dataclass(frozen=True)
class RecordInfo:
    root: Path
    projects: tuple[str, ...]
    # What `atlas init` measured of the volume under the record (atlas_files.protocol.volume).
    volume_checks: tuple[Check, ...] = ()

    @property
    def volume_warnings(self) -> tuple[Check, ...]:
        return tuple(c for c in self.volume_checks if c.verdict != "ok")

    def to_json(self) -> dict[str, Any]:
        return {"root": str(self.root), "projects": list(self.projects),
                "volume_checks": [c.to_json() for c in self.volume_checks]}


@dataclass(frozen=True)
class TopicList:
    project: str
    # (topic, state): state is "proposed", "accepted" or "" (not a proposal).
    rows: tuple[tuple[TopicSummary, str], ...]
    unreadable: tuple[str, ...] = ()
    # The shown version's corrections and retraction by topic (`corrected_by`, `retracted`).
    marks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"project": self.project,
                "topics": [{**t.to_json(), "state": state, **self.marks[t.name]}
                           for t, state in self.rows],
                "unreadable": list(self.unreadable)}


@dataclass(frozen=True)
class Feed:
    identity: str | None
    items: tuple[FeedItem, ...]
    marked_read: bool
    # Each item's corrections and retraction, in the order of ``items``.
    marks: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"as": self.identity,
                "new": [{**i.to_json(), **m} for i, m in zip(self.items, self.marks,
                                                             strict=True)],
                "marked_read": self.marked_read}


def init(path: str | os.PathLike[str], projects: Sequence[str] = (),
         default_project: str | None = None) -> RecordInfo:
    """Create a record at ``path`` (or add projects to the one there), and measure what
    its volume gives the protocol (the volume part of `atlas doctor`, in fewer rounds)."""
    # Only init and the doctor pay for the probes' imports, not every command of this module.
    from atlas_files.protocol import volume  # noqa: PLC0415 - see above

    record = Record.init(path, projects, default_project)
    config = record.config
    report = volume.probe(record.root, record.root / layout.CACHE, rounds=3, replaces=20,
                          best_clock=False, allowance_s=config.clock_skew_allowance_s,
                          tolerance_s=config.clock_tolerance_s)
    return RecordInfo(record.root, tuple(config.projects), report.checks)


def check_write(worker: Worker, topic: str | None = None) -> None:
    """Refuse a write with no identity, a bad topic name or an unknown project before the
    caller reads a body (from stdin, say) that would then be thrown away."""
    require_identity(worker.identity)
    if topic is None:
        check_status_write(worker)
    else:
        worker.record.artifact_stream(topic, worker.project)


@writes("put", "name")
def put(worker: Worker, name: str, body: str, *, expect: int | None = None,
        summary: str | None = None, proposal: bool = False,
        links: Sequence[str] = ()) -> Written:
    """Write the next version of topic ``name``; VersionConflict if someone wrote since.
    A link to a retracted version is written, and warned of (`atlas check` reports it,
    ATL013, while this version is the newest), as `decide` does."""
    doc = artifacts.put(worker.record, name, body_to_write(body), author=worker.author,
                        project=worker.project, expect=expect, summary=summary,
                        proposal=proposal, links=links)
    if links:
        retracted = corrections.retracted_refs(worker.record, worker.project_name)
        for link in links:
            if link in retracted:
                warn(f"{name} v{doc.version} links {link}, which is retracted: it builds on a "
                     "retracted conclusion (`atlas get` shows why; `atlas check` reports the "
                     "link, ATL013, until a later version links one that stands)")
    return Written(doc.name, doc.version, doc.path, proposal=doc.proposal)


@reads
def get(worker: Worker, name: str, version: int | None = None) -> TopicView:
    """Read topic ``name`` (latest, or ``version``); records the read for the worker."""
    doc = artifacts.get(worker.record, name, reader=worker.identity, version=version,
                        project=worker.project)
    return TopicView(doc, marks(worker, "artifact", doc))


@reads
def ls(worker: Worker, accepted: bool = False) -> TopicList:
    """Every topic with its latest version (``accepted``: its newest version that stands)."""
    record, project = worker.record, worker.project_name
    unreadable: list[str] = []
    if accepted:
        rows = tuple(artifacts.ls_accepted(record, project, unreadable))
    else:
        rows = tuple((t, corrections.proposal_state(record, project, t.name, t.version,
                                                    t.proposal))
                     for t in artifacts.ls(record, project, unreadable))
    of = corrections.correction_marks(record, project)
    return TopicList(project, rows, tuple(unreadable), {
        t.name: of(corrections.version_ref("artifact", t.name, t.version)) for t, _ in rows})


@reads
def history(worker: Worker, name: str) -> VersionList:
    return version_list(worker, "artifact", name, lambda unreadable: artifacts.history(
        worker.record, name, worker.project, unreadable))


@reads
def diff(worker: Worker, name: str, old: int | None = None,
         new: int | None = None) -> DiffView:
    return DiffView(artifacts.diff(worker.record, name, old, new, worker.project))


@reads
def feed(worker: Worker, mark_read: bool = False) -> Feed:
    """Every status and topic newer than what the worker has read."""
    items = feedmod.feed(worker.record, worker.identity, mark_read=mark_read)
    of = {p: corrections.correction_marks(worker.record, p)
          for p in {i.project for i in items}}
    return Feed(worker.identity, tuple(items), mark_read, tuple(
        of[i.project](corrections.version_ref(i.kind, i.name, i.version)) for i in items))
