"""What the site shows, read from the record once per build through the library.

Versions are not read here: a topic's versions are read when its page is written and then
dropped, so memory stays proportional to the number of topics, not of versions. What is
read here is cheap: folder listings, the decision and correction logs, leases, telemetry.
A file that cannot be read becomes a Problem shown on the home page, never a failed build:
every reader called here is guarded by ``reading.UNREADABLE``, per file where the reader
allows it, else per folder (a project's decisions, the leases).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files.facts.names import is_name
from atlas_files.protocol import artifacts, corrections, decisions, leases, tasks, telemetry
from atlas_files.sitegen.reading import UNREADABLE, Withheld, describe, read_version
from atlas_files.sitegen.urls import Known

if TYPE_CHECKING:
    from atlas_files.protocol.corrections import Correction
    from atlas_files.protocol.decisions import Decision
    from atlas_files.storage.documents import Stream, Version
    from atlas_files.storage.record import Record


@dataclass(frozen=True)
class Problem:
    where: str
    message: str


@dataclass(frozen=True)
class Marks:
    """What is shown on a version or entry besides its own text."""

    corrected_by: tuple[Correction, ...] = ()
    retracted: Correction | None = None
    accepted_by: str | None = None


@dataclass
class ProjectData:
    name: str
    topics: dict[str, list[int]] = field(default_factory=dict)  # topic -> versions
    streams: dict[str, Stream] = field(default_factory=dict)  # topic -> its stream
    status_versions: list[int] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    corrections: list[Correction] = field(default_factory=list)
    fixes: dict[str, list[Correction]] = field(default_factory=dict)  # ref -> corrections
    retractions: dict[str, Correction] = field(default_factory=dict)
    accepted: dict[str, str] = field(default_factory=dict)  # proposal ref -> decision id
    tasks: list[Any] = field(default_factory=list)  # tasks.TaskState, oldest first

    def marks(self, ref: str, proposal: bool = False) -> Marks:
        return Marks(
            corrected_by=tuple(self.fixes.get(ref, ())),
            retracted=self.retractions.get(ref),
            accepted_by=self.accepted.get(ref) if proposal else None,
        )


@dataclass
class Snapshot:
    record: Record
    now: datetime
    projects: list[ProjectData]
    known: Known
    leases: Any = None  # leases.Sheet
    telemetry: list[Any] = field(default_factory=list)  # telemetry.RowView
    telemetry_limits: str = ""
    problems: list[Problem] = field(default_factory=list)

    def project(self, name: str) -> ProjectData:
        for p in self.projects:
            if p.name == name:
                return p
        raise KeyError(name)


def relative(record: Record, path: Path) -> str:
    try:
        return path.relative_to(record.root).as_posix()
    except ValueError:
        return str(path)


def load(record: Record, now: datetime) -> Snapshot:
    snap = Snapshot(record=record, now=now, projects=[], known=Known())
    for name in record.config.projects:
        project = ProjectData(name)
        snap.projects.append(project)
        where = f"projects/{name}/artifacts"
        try:
            topics = artifacts.topic_names(record, name)
        except UNREADABLE as exc:
            snap.problems.append(Problem(where, describe(exc)))
            topics = []
        for topic in topics:
            if not is_name(topic) or topic == "status":
                snap.problems.append(Problem(
                    f"{where}/{topic}", "a folder whose name is not a topic name; it is not shown",
                ))
                continue
            try:
                stream = record.artifact_stream(topic, name)
                versions = stream.versions()
            except UNREADABLE as exc:
                snap.problems.append(Problem(f"{where}/{topic}", describe(exc)))
                continue
            if versions:
                project.topics[topic] = versions
                project.streams[topic] = stream
        try:
            project.status_versions = record.status_stream(name).versions()
        except UNREADABLE as exc:
            snap.problems.append(Problem(f"projects/{name}/status", describe(exc)))
        snap.known.topics[name] = {t: set(v) for t, v in project.topics.items()}
        snap.known.status[name] = set(project.status_versions)
        _guarded(snap, f"projects/{name}", partial(_load_log, record, project, snap))
    for project in snap.projects:
        _guarded(snap, f"projects/{project.name}/tasks",
                 partial(_load_tasks, record, project, snap))
    _guarded(snap, "leases", lambda: _load_leases(record, snap))
    _guarded(snap, "telemetry", lambda: _load_telemetry(record, snap))
    return snap


def _guarded(snap: Snapshot, where: str, load: Callable[[], None]) -> None:
    """Run ``load``; what it cannot read is one problem, and the rest of the site is
    built without it."""
    try:
        load()
    except UNREADABLE as exc:
        snap.problems.append(Problem(where, describe(exc)))


def _load_log(record: Record, project: ProjectData, snap: Snapshot) -> None:
    def damaged(path: Path, message: str) -> None:
        snap.problems.append(Problem(relative(record, path), message))

    project.decisions = decisions.list_decisions(record, project.name, on_damaged=damaged)
    project.corrections = corrections.list_corrections(record, project.name)
    for d in project.decisions:
        snap.known.entries[d.id] = project.name
        if d.accepts:
            project.accepted.setdefault(d.accepts, d.id)
    for c in project.corrections:
        snap.known.entries[c.id] = project.name
        if c.kind == "retraction":
            project.retractions.setdefault(c.ref, c)
        else:
            project.fixes.setdefault(c.ref, []).append(c)


def _load_tasks(record: Record, project: ProjectData, snap: Snapshot) -> None:
    board = tasks.read_board(record, project.name)
    project.tasks = tasks.states(record, board)
    for bad in board.unreadable:
        snap.problems.append(Problem(relative(record, Path(bad.path)), bad.message))


def _load_leases(record: Record, snap: Snapshot) -> None:
    sheet = leases.sheet(record)
    snap.leases = sheet
    for message in sheet.problems:
        snap.problems.append(Problem("leases", str(message)))


def _load_telemetry(record: Record, snap: Snapshot) -> None:
    snap.telemetry = list(telemetry.ls(record, at=snap.now))
    snap.telemetry_limits = telemetry.LIMITS


def read_versions(
    stream: Stream, versions: list[int], record: Record, problems: list[Problem]
) -> list[Version]:
    """The readable versions of ``stream``, oldest first; unreadable ones become problems.

    A version whose body is over the record's body_limit is returned as a
    ``reading.Withheld`` (its front matter, an empty body) and named among the problems.
    """
    limit = record.config.body_limit
    out = []
    for v in versions:
        try:
            doc = read_version(stream, v, limit)
        except UNREADABLE as exc:
            problems.append(Problem(relative(record, stream.path(v)), describe(exc)))
            continue
        if isinstance(doc, Withheld):
            problems.append(Problem(relative(record, stream.path(v)),
                                    f"{doc.note} (body_limit is {limit} bytes)"))
        out.append(doc)
    return out
