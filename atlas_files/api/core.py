"""The record core: init, status, put, get, ls, history, diff, feed.

Each function returns a frozen result whose ``to_json()`` is the document the matching
``atlas ... --json`` prints; the CLI renders its text from the same result.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atlas_files import artifacts, corrections, status
from atlas_files import feed as feedmod
from atlas_files.api import Worker
from atlas_files.artifacts import Diff, TopicSummary
from atlas_files.documents import Version
from atlas_files.feed import FeedItem
from atlas_files.record import Record, require_identity

NO_MARKS: dict[str, Any] = {"corrected_by": [], "retracted": None, "retractions": [],
                            "accepted_by": None}


def version_json(doc: Version, marks: dict[str, Any]) -> dict[str, Any]:
    """A version as `get --json` shows it: front matter, body, digest check and marks."""
    return {
        "name": doc.name, "version": doc.version, "author": doc.author,
        "written_at": doc.written_at, "based_on": doc.based_on, "summary": doc.summary,
        "proposal": doc.proposal, "links": list(doc.links), "body": doc.body,
        "digest_ok": doc.digest_ok, "corrected_by": marks.get("corrected_by", []),
        "retracted": marks.get("retracted"), "retractions": marks.get("retractions", []),
        "accepted_by": marks.get("accepted_by"),
    }


@dataclass(frozen=True)
class RecordInfo:
    root: Path
    projects: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"root": str(self.root), "projects": list(self.projects)}


@dataclass(frozen=True)
class Written:
    """A version just written: ``put`` and ``status write``."""

    name: str
    version: int
    path: Path
    proposal: bool = False
    # Only a status write warns (a long status); `put --json` has no such key.
    warnings: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "version": self.version,
                               "path": str(self.path)}
        if self.warnings is not None:
            out["warnings"] = list(self.warnings)
        return out


@dataclass(frozen=True)
class TopicView:
    """One version of a topic as read, with its marks (corrections, retraction, acceptance)."""

    doc: Version
    marks: dict[str, Any] = field(default_factory=lambda: dict(NO_MARKS))

    def to_json(self) -> dict[str, Any]:
        return version_json(self.doc, self.marks)


@dataclass(frozen=True)
class StatusView:
    """The project's status as read; ``doc`` is None while the project has none."""

    project: str
    doc: Version | None
    marks: dict[str, Any] = field(default_factory=lambda: dict(NO_MARKS))

    def to_json(self) -> dict[str, Any]:
        if self.doc is None:
            return {"name": "status", "project": self.project, "version": 0, "author": None,
                    "written_at": None, "based_on": None, "summary": "", "body": "",
                    "corrected_by": [], "retracted": None}
        return {"project": self.project, **version_json(self.doc, self.marks)}


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
class VersionList:
    """Every version of a stream, newest first."""

    name: str
    versions: tuple[Version, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "versions": [
            {"version": d.version, "author": d.author, "written_at": d.written_at,
             "based_on": d.based_on, "summary": d.summary, "proposal": d.proposal,
             "path": str(d.path)}
            for d in self.versions
        ]}


@dataclass(frozen=True)
class DiffView:
    diff: Diff

    def to_json(self) -> dict[str, Any]:
        d = self.diff
        return {"name": d.name, "from": d.old, "to": d.new, "diff": d.text}


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


def _marks(worker: Worker, kind: str, doc: Version) -> dict[str, Any]:
    return corrections.marks_json(worker.record, worker.project_name, kind, doc.name,
                                  doc.version)


def status_show(worker: Worker, version: int | None = None) -> StatusView:
    """The project's status (latest, or ``version``); records the read for the worker."""
    project = worker.project_name
    doc = status.show(worker.record, reader=worker.identity, project=project, version=version)
    if doc is None:
        return StatusView(project, None)
    return StatusView(project, doc, _marks(worker, "status", doc))


def status_write(worker: Worker, body: str, *, expect: int | None = None,
                 summary: str | None = None) -> Written:
    """Write the next status version; VersionConflict (the stop sign) if it moved."""
    doc, warnings = status.write(worker.record, body, author=worker.author,
                                 project=worker.project, expect=expect, summary=summary)
    return Written("status", doc.version, doc.path, warnings=tuple(warnings))


def status_log(worker: Worker) -> VersionList:
    docs = status.log(worker.record, worker.project)
    return VersionList("status", tuple(reversed(docs)))


def status_diff(worker: Worker, old: int | None = None, new: int | None = None) -> DiffView:
    return DiffView(status.diff(worker.record, old, new, worker.project))


def check_write(worker: Worker, topic: str | None = None) -> None:
    """Refuse a write with no identity, a bad topic name or an unknown project before the
    caller reads a body (from stdin, say) that would then be thrown away."""
    require_identity(worker.identity)
    if topic is None:
        worker.record.status_stream(worker.project)
    else:
        worker.record.artifact_stream(topic, worker.project)


def put(worker: Worker, name: str, body: str, *, expect: int | None = None,
        summary: str | None = None, proposal: bool = False,
        links: Sequence[str] = ()) -> Written:
    """Write the next version of topic ``name``; VersionConflict if someone wrote since."""
    doc = artifacts.put(worker.record, name, body, author=worker.author, project=worker.project,
                        expect=expect, summary=summary, proposal=proposal, links=links)
    return Written(doc.name, doc.version, doc.path, proposal=doc.proposal)


def get(worker: Worker, name: str, version: int | None = None) -> TopicView:
    """Read topic ``name`` (latest, or ``version``); records the read for the worker."""
    doc = artifacts.get(worker.record, name, reader=worker.identity, version=version,
                        project=worker.project)
    return TopicView(doc, _marks(worker, "artifact", doc))


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


def history(worker: Worker, name: str) -> VersionList:
    docs = artifacts.history(worker.record, name, worker.project)
    return VersionList(name, tuple(reversed(docs)))


def diff(worker: Worker, name: str, old: int | None = None,
         new: int | None = None) -> DiffView:
    return DiffView(artifacts.diff(worker.record, name, old, new, worker.project))


def feed(worker: Worker, mark_read: bool = False) -> Feed:
    """Every status and topic newer than what the worker has read."""
    items = feedmod.feed(worker.record, worker.identity, mark_read=mark_read)
    return Feed(worker.identity, tuple(items), mark_read)
