"""Session rows: ``sessions/<identity>.json``, one live row per identity.

`atlas begin` writes the row (state ``open``): when the session began and the version of
every stream it saw then (the project's status, each topic, each lease). `atlas end`
replaces it with an ``ended`` row, whose baseline is what stood when the session ended:
the next `begin` measures "since your last session" from there, and a session that keeps
writing after its `end` is still caught at its next stop.

"Did this session write anything since it began?" is answered from the record itself, not
from bookkeeping kept by every writer: a stream past the version the row saw has new
versions, whose front matter names their authors; entries are named by the time they were
written, so only names after the session's start are opened; a lease past the generation
the row saw has new generations, each naming who wrote it. The Stop hook asks this at
every turn end, so it costs a folder listing and one stat per topic, plus a read of each
new version, entry or generation.

Like receipts and telemetry, the row is state, not a document: replaced atomically, kept
out of git, and belonging to one machine.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files import documents, entries, fsio, jsonfile, layout, timeutil
from atlas_files.errors import DamagedFile
from atlas_files.names import check_name, is_name

if TYPE_CHECKING:
    from atlas_files.record import Record

OPEN, ENDED = "open", "ended"
ROW_LIMIT = 8 << 20  # a row lists one number per topic and lease: far below this


def generation_filename(generation: int) -> str:
    """A lease generation's file name (the rule of ``leases.store``, repeated here so the
    Stop hook need not import the lease machinery; a test holds the two together)."""
    return f"g{generation:08d}.json"


@dataclass(frozen=True)
class Baseline:
    """The version of each stream a session saw: the status, topics, leases."""

    status: int = 0
    topics: Mapping[str, int] = field(default_factory=dict)
    leases: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "topics": dict(sorted(self.topics.items())),
                "leases": dict(sorted(self.leases.items()))}


@dataclass(frozen=True)
class Row:
    identity: str
    project: str
    state: str  # OPEN or ENDED
    started_at: str
    ended_at: str | None
    saw: Baseline
    # When the session before this one began or ended: what begin's "since your last
    # session" was measured from (None: this identity's first session).
    previous: str | None = None

    @property
    def open(self) -> bool:
        return self.state == OPEN

    @property
    def since(self) -> str:
        """From when this row's baseline holds: the start, or the end of an ended session."""
        return self.started_at if self.open or not self.ended_at else self.ended_at

    def to_json(self) -> dict[str, Any]:
        return {"identity": self.identity, "project": self.project, "state": self.state,
                "started_at": self.started_at, "ended_at": self.ended_at,
                "previous": self.previous, "saw": self.saw.to_json()}


@dataclass(frozen=True)
class Write:
    """One thing written since a session's baseline: a version, an entry, a generation."""

    kind: str  # status | put | decision | correction | retraction | lease
    name: str  # the topic, resource, or the entry's id
    author: str
    at: str
    version: int | None = None  # a version's number, a lease's generation
    summary: str = ""  # a version's summary, a decision's topic, a lease's action

    @property
    def label(self) -> str:
        if self.kind in ("status", "put"):
            return f"{self.name} v{self.version}"
        if self.kind == "lease":
            return f"{self.summary} of lease {self.name}"
        return f"{self.kind} {self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "version": self.version,
                "author": self.author, "at": self.at, "summary": self.summary}


# -- the row ---------------------------------------------------------------------------------


def folder(record: Record) -> Path:
    return record.path(layout.SESSIONS)


def row_path(record: Record, identity: str) -> Path:
    return folder(record) / f"{check_name(identity, 'identity')}.json"


def _counts(value: Any, what: str) -> dict[str, int]:
    table = jsonfile.need_object(value if value is not None else {}, what)
    return {str(k): jsonfile.need_int(v, f"{what}: {str(k)[:100]}") for k, v in table.items()}


def parse(data: bytes, identity: str) -> Row:
    """A row from its bytes; JSONDamage if it is not one."""
    raw = jsonfile.need_object(jsonfile.loads(data), "the row")
    state = raw.get("state")
    if state not in (OPEN, ENDED):
        raise jsonfile.JSONDamage(f"state should be {OPEN!r} or {ENDED!r}")
    project = raw.get("project")
    if not isinstance(project, str) or not is_name(project):
        raise jsonfile.JSONDamage("project should be a project name")
    started = raw.get("started_at")
    if not isinstance(started, str):
        raise jsonfile.JSONDamage("started_at should be a time")
    ended = jsonfile.opt_str(raw.get("ended_at"), "ended_at")
    for stamp in (started, ended, raw.get("previous")):
        if isinstance(stamp, str):
            try:
                timeutil.parse_time(stamp)
            except ValueError:
                raise jsonfile.JSONDamage(f"{stamp[:40]!r} is not a time") from None
    saw = jsonfile.need_object(raw.get("saw"), "saw")
    baseline = Baseline(jsonfile.need_int(saw.get("status", 0), "saw.status"),
                        _counts(saw.get("topics"), "saw.topics"),
                        _counts(saw.get("leases"), "saw.leases"))
    return Row(identity, project, state, started, ended, baseline,
               jsonfile.opt_str(raw.get("previous"), "previous"))


def read(record: Record, identity: str) -> Row | None:
    """``identity``'s row, None if it has none; DamagedFile if it cannot be read as one."""
    path = row_path(record, identity)
    try:
        data = jsonfile.read_bytes(path, ROW_LIMIT)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except jsonfile.JSONDamage as exc:
        raise _damaged(path, identity, str(exc)) from None
    try:
        return parse(data, identity)
    except jsonfile.JSONDamage as exc:
        raise _damaged(path, identity, str(exc)) from None


def _damaged(path: Path, identity: str, why: str) -> DamagedFile:
    return DamagedFile(f"{path}: this session row is damaged: {why}",
                       hint=f"delete it; `atlas --as {identity} begin` writes a new one")


def write(record: Record, row: Row) -> Path:
    """Replace ``row.identity``'s row atomically: a reader sees the old row or the new."""
    path = row_path(record, row.identity)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"identity": row.identity, **row.to_json()}, indent=1,
                      ensure_ascii=False).encode() + b"\n"
    # Not durable: a row lost to a power cut reads as "no session", which lets a stop
    # through; it never blocks one wrongly.
    return fsio.replace_atomic(path, data, durable=False)


# -- the baseline ----------------------------------------------------------------------------


def _topic_dirs(artifacts: str) -> Iterator[str]:
    """Topic names in the artifacts folder (never a symlink, never a hidden entry)."""
    try:
        with os.scandir(artifacts) as it:
            for entry in it:
                name = entry.name
                if name[0] != "." and name != "status" and is_name(name) \
                        and entry.is_dir(follow_symlinks=False):
                    yield name
    except (FileNotFoundError, NotADirectoryError):
        return


def _lease_dirs(leases: str) -> list[str]:
    try:
        return [n for n in os.listdir(leases) if n[0] != "." and is_name(n)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def newest_generation(where: str) -> int:
    try:
        names = [n for n in os.listdir(where) if n.startswith("g") and n.endswith(".json")]
    except (FileNotFoundError, NotADirectoryError):
        return 0
    numbers = [int(n[1:-5]) for n in names if n[1:-5].isdigit()]
    return max(numbers, default=0)


def baseline(record: Record, project: str, topics: Mapping[str, int] | None = None) -> Baseline:
    """What stands now: the latest status, each topic's latest version (``topics`` when
    the caller has them already), each lease's newest generation."""
    status = record.status_stream(project).latest()
    if topics is None:
        hints = documents.LatestHints(record.path(layout.PROJECTS, project, layout.ARTIFACTS))
        artifacts = str(hints.path.parent)
        found = {}
        for name in _topic_dirs(artifacts):
            stream = documents.Stream(Path(artifacts, name), name, name)
            found[name] = hints.latest(stream)
        hints.save()
        topics = found
    leases = str(record.path(layout.LEASES))
    gens = {name: newest_generation(os.path.join(leases, name)) for name in _lease_dirs(leases)}
    return Baseline(status, dict(topics), gens)


# -- what was written since ------------------------------------------------------------------


def _new_versions(stream: documents.Stream, seen: int) -> Iterator[documents.Version]:
    """Each version of ``stream`` after ``seen``, read head only, until one is missing."""
    version = seen + 1
    while os.path.exists(stream.path(version)):
        try:
            yield stream.read(version, head_only=True)
        except (DamagedFile, OSError):
            pass  # a damaged version names no author; `atlas check` reports it
        version += 1


def _entry_threshold(prefix: str, since: str) -> str:
    """The smallest entry file name written at or after ``since`` (ids sort by time)."""
    stamp = timeutil.parse_time(since).strftime("%Y%m%dt%H%M%S%fz")
    return f"{prefix}-{stamp}"


def writes_since(record: Record, row: Row) -> list[Write]:
    """Everything written in ``row.project`` (and every lease) after the row's baseline,
    by anyone, oldest first within each kind."""
    project, saw = row.project, row.saw
    out: list[Write] = []
    status = record.status_stream(project)
    out += [Write("status", "status", d.author, d.written_at, d.version, d.summary)
            for d in _new_versions(status, saw.status)]
    artifacts = str(record.path(layout.PROJECTS, project, layout.ARTIFACTS))
    limit = record.config.body_limit
    for name in sorted(_topic_dirs(artifacts)):
        seen = saw.topics.get(name, 0)
        # One stat per topic that did not move (a string path: pathlib would cost more
        # than the stat itself, a thousand times over).
        if not os.path.exists(f"{artifacts}{os.sep}{name}{os.sep}"
                              f"{layout.version_filename(name, seen + 1)}"):
            continue
        stream = documents.Stream(Path(artifacts, name), name, name, limit)
        out += [Write("put", name, d.author, d.written_at, d.version, d.summary)
                for d in _new_versions(stream, seen)]
    for kind in (layout.DECISIONS, layout.CORRECTIONS):
        out += _entries_since(record.path(layout.PROJECTS, project, kind), row.since)
    out += _leases_since(record, saw)
    return out


def _entries_since(where: Path, since: str) -> list[Write]:
    out: list[Write] = []
    try:
        names = sorted(os.listdir(where))
    except (FileNotFoundError, NotADirectoryError):
        return out
    thresholds = {p: _entry_threshold(p, since) for p in ("dec", "cor")}
    for name in names:
        prefix = name[:3]
        if prefix not in thresholds or name < thresholds[prefix] \
                or not entries.is_entry_file(name):
            continue
        try:
            entry = entries.read_entry(where / name)
        except (DamagedFile, OSError, ValueError, RecursionError):
            continue
        meta = entry.meta
        what = meta.get("topic") if entry.kind == "decision" else meta.get("ref")
        out.append(Write(entry.kind, entry.id, str(meta.get("author", "")),
                         str(meta.get("at", "")), None, str(what or "")))
    return out


def _leases_since(record: Record, saw: Baseline) -> list[Write]:
    out: list[Write] = []
    leases = str(record.path(layout.LEASES))
    for resource in sorted(_lease_dirs(leases)):
        where = os.path.join(leases, resource)
        generation = saw.leases.get(resource, 0) + 1
        while True:
            path = os.path.join(where, generation_filename(generation))
            try:
                raw = jsonfile.need_object(jsonfile.read(path, 1 << 20), "a generation")
            except (FileNotFoundError, NotADirectoryError):
                break
            except (OSError, ValueError):
                generation += 1  # a damaged generation names nobody; `atlas check` does
                continue
            out.append(Write("lease", resource, str(raw.get("written_by") or ""),
                             str(raw.get("written_at") or ""), generation,
                             str(raw.get("action") or "")))
            generation += 1
    return out


def mine(writes: list[Write], identity: str) -> list[Write]:
    return [w for w in writes if w.author == identity]


def others(writes: list[Write], identity: str) -> list[Write]:
    return [w for w in writes if w.author != identity]
