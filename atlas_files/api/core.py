"""The record core: init, put, get, ls, history, diff, feed (and, re-exported from
:mod:`atlas_files.api.status`, the status stream's functions).

Each function returns a frozen result whose ``to_json()`` is the document the matching
``atlas ... --json`` prints; the CLI renders its text from the same result.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files import artifacts, corrections
from atlas_files import feed as feedmod
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
    marks,
    version_json,
)
from atlas_files.artifacts import TopicSummary
from atlas_files.feed import FeedItem
from atlas_files.record import Record, require_identity

__all__ = ["NO_MARKS", "DiffView", "Feed", "RecordInfo", "StatusView", "TopicList",
           "TopicView", "VersionList", "Written", "check_status_write", "check_write", "diff",
           "feed", "get", "history", "init", "ls", "put", "status_diff", "status_log",
           "status_show", "status_write", "version_json"]


@dataclass(frozen=True)
class RecordInfo:
    root: Path
    projects: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"root": str(self.root), "projects": list(self.projects)}


@dataclass(frozen=True)
class TopicList:
    project: str
    # (topic, state): state is "proposed", "accepted" or "" (not a proposal).
    rows: tuple[tuple[TopicSummary, str], ...]
    unreadable: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"project": self.project,
                "topics": [{**t.to_json(), "state": state} for t, state in self.rows],
                "unreadable": list(self.unreadable)}


@dataclass(frozen=True)
class Feed:
    identity: str | None
    items: tuple[FeedItem, ...]
    marked_read: bool

    def to_json(self) -> dict[str, Any]:
        return {"as": self.identity, "new": [i.to_json() for i in self.items],
                "marked_read": self.marked_read}


def init(path: str | os.PathLike[str], projects: Sequence[str] = (),
         default_project: str | None = None) -> RecordInfo:
    """Create a record at ``path`` (or add projects to the one there)."""
    record = Record.init(path, projects, default_project)
    return RecordInfo(record.root, tuple(record.config.projects))


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
    """Write the next version of topic ``name``; VersionConflict if someone wrote since."""
    doc = artifacts.put(worker.record, name, body, author=worker.author, project=worker.project,
                        expect=expect, summary=summary, proposal=proposal, links=links)
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
    if accepted:
        return TopicList(project, tuple(artifacts.ls_accepted(record, project)))
    unreadable: list[str] = []
    topics = artifacts.ls(record, project, unreadable)
    rows = tuple((t, corrections.proposal_state(record, project, t.name, t.version, t.proposal))
                 for t in topics)
    return TopicList(project, rows, tuple(unreadable))


@reads
def history(worker: Worker, name: str) -> VersionList:
    docs = artifacts.history(worker.record, name, worker.project)
    return VersionList(name, tuple(reversed(docs)))


@reads
def diff(worker: Worker, name: str, old: int | None = None,
         new: int | None = None) -> DiffView:
    return DiffView(artifacts.diff(worker.record, name, old, new, worker.project))


@reads
def feed(worker: Worker, mark_read: bool = False) -> Feed:
    """Every status and topic newer than what the worker has read."""
    items = feedmod.feed(worker.record, worker.identity, mark_read=mark_read)
    return Feed(worker.identity, tuple(items), mark_read)
