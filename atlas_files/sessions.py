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
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files import frontmatter, fsio, jsonfile, layout, timeutil
from atlas_files.errors import DamagedFile
from atlas_files.names import ENTRY_ID_PATTERN, check_name, is_name

if TYPE_CHECKING:
    from atlas_files.record import Record

# The Stop hook imports this module at every turn end, so it stays light: no versioned
# documents, entries or leases modules (and no atlas.yaml read: the row names its
# project). It reads front matter and generations with the same parsers they use.
OPEN, ENDED = "open", "ended"
ROW_LIMIT = 8 << 20  # a row lists one number per topic and lease: far below this
HEAD_BYTES = 64 * 1024  # a version's or an entry's front matter is a few hundred bytes
_ENTRY_FILE = re.compile(ENTRY_ID_PATTERN[:-1] + r"\.md$")


def generation_filename(generation: int) -> str:
    """A lease generation's file name (the rule of ``leases.store``, repeated here so the
    Stop hook need not import the lease machinery; a test holds the two together)."""
    return f"g{generation:08d}.json"


# Plain classes, not dataclasses: the Stop hook imports this module at every turn end, and
# building a dataclass costs a measurable slice of that (see api.Worker for the same).


class Baseline:
    """The version of each stream a session saw: the status, topics, leases."""

    __slots__ = ("status", "topics", "leases")

    def __init__(self, status: int = 0, topics: Mapping[str, int] | None = None,
                 leases: Mapping[str, int] | None = None) -> None:
        self.status = status
        self.topics: Mapping[str, int] = dict(topics or {})
        self.leases: Mapping[str, int] = dict(leases or {})

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "topics": dict(sorted(self.topics.items())),
                "leases": dict(sorted(self.leases.items()))}


class Row:
    """A session row. ``previous``: when the session before this one began or ended,
    what begin's "since your last session" was measured from (None: the first)."""

    __slots__ = ("identity", "project", "state", "started_at", "ended_at", "saw", "previous")

    def __init__(self, identity: str, project: str, state: str, started_at: str,
                 ended_at: str | None, saw: Baseline, previous: str | None = None) -> None:
        self.identity = identity
        self.project = project
        self.state = state  # OPEN or ENDED
        self.started_at = started_at
        self.ended_at = ended_at
        self.saw = saw
        self.previous = previous

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

    def __repr__(self) -> str:
        return f"Row({self.to_json()!r})"


class Write:
    """One thing written since a session's baseline: a version, an entry, a generation.
    ``kind``: status, put, decision, correction, retraction or lease; ``name``: the topic,
    the resource or the entry's id; ``version``: a version's number or a lease's
    generation; ``summary``: a version's summary, a decision's topic, a correction's
    reference or a lease's action."""

    __slots__ = ("kind", "name", "author", "at", "version", "summary")

    def __init__(self, kind: str, name: str, author: str, at: str,
                 version: int | None = None, summary: str = "") -> None:
        self.kind = kind
        self.name = name
        self.author = author
        self.at = at
        self.version = version
        self.summary = summary

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

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Write) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash((self.kind, self.name, self.version, self.author, self.at))

    def __repr__(self) -> str:
        return f"Write({self.to_json()!r})"


# -- the row ---------------------------------------------------------------------------------


def folder(record: Record) -> Path:
    return record.path(layout.SESSIONS)


def row_path(record: Record, identity: str) -> Path:
    return folder(record) / f"{check_name(identity, 'identity')}.json"


def _counts(value: Any, what: str) -> dict[str, int]:
    table = jsonfile.need_object(value if value is not None else {}, what)
    if all(type(v) is int for v in table.values()):  # one pass in C: the usual case
        return table
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
    data = json.dumps(row.to_json(), indent=1, ensure_ascii=False).encode() + b"\n"
    # Not durable: a row lost to a power cut reads as "no session", which lets a stop
    # through; it never blocks one wrongly.
    with fsio.open_folder(path.parent, within=record.opened, create=True) as folder:
        return folder.replace_atomic(path.name, data, durable=False)


# -- listing the record without following a symlink -----------------------------------------


def topic_names(artifacts: str) -> Iterator[str]:
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


def lease_names(leases: str) -> list[str]:
    try:
        return [n for n in os.listdir(leases) if n[0] != "." and is_name(n)
                and not os.path.islink(os.path.join(leases, n))]
    except (FileNotFoundError, NotADirectoryError):
        return []


def newest_generation(where: str) -> int:
    try:
        names = [n for n in os.listdir(where) if n.startswith("g") and n.endswith(".json")]
    except (FileNotFoundError, NotADirectoryError):
        return 0
    numbers = [int(n[1:-5]) for n in names if n[1:-5].isdigit()]
    return max(numbers, default=0)


def _head(path: str) -> dict[str, Any] | None:
    """The front matter of the file at ``path``; None if it cannot be read as some (a
    damaged file names no author: `atlas check` reports it)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        data = os.read(fd, HEAD_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return frontmatter.parse(data).meta
    except (frontmatter.FrontMatterError, ValueError, RecursionError):
        return None


# -- what was written since ------------------------------------------------------------------


def _versions(folder: str, name: str, seen: int, kind: str) -> Iterator[Write]:
    """Each version of the stream ``name`` in ``folder`` after ``seen``, until one is
    missing; the first costs one stat when there is none."""
    version = seen + 1
    while True:
        path = f"{folder}{os.sep}{layout.version_filename(name, version)}"
        if not os.path.exists(path):
            return
        meta = _head(path)
        if meta is not None:
            yield Write(kind, name, str(meta.get("author") or ""),
                        str(meta.get("written_at") or ""), version,
                        str(meta.get("summary") or ""))
        version += 1


def _entry_threshold(prefix: str, since: str) -> str:
    """The smallest entry file name written at or after ``since`` (ids sort by time)."""
    stamp = timeutil.parse_time(since).strftime("%Y%m%dt%H%M%S%fz")
    return f"{prefix}-{stamp}"


def writes_since(record: Record, row: Row) -> list[Write]:
    """Everything written in ``row.project`` (and every lease) after the row's baseline,
    by anyone, oldest first within each kind. Never follows a symlinked folder (the
    record's paths are checked) and never reads atlas.yaml."""
    project, saw = row.project, row.saw
    out = list(_versions(str(record.path(layout.PROJECTS, project, layout.STATUS)),
                         "status", saw.status, "status"))
    artifacts = str(record.path(layout.PROJECTS, project, layout.ARTIFACTS))
    seen = saw.topics
    for name in sorted(topic_names(artifacts)):
        # The common case, a topic that did not move, costs one stat: string paths and no
        # generator, since this runs for every topic at every turn end.
        folder = f"{artifacts}{os.sep}{name}"
        version = seen.get(name, 0) + 1
        if os.path.exists(f"{folder}{os.sep}{layout.version_filename(name, version)}"):
            out += _versions(folder, name, version - 1, "put")
    for kind in (layout.DECISIONS, layout.CORRECTIONS):
        out += _entries_since(str(record.path(layout.PROJECTS, project, kind)), row.since)
    out += _leases_since(str(record.path(layout.LEASES)), saw)
    return out


def _entries_since(where: str, since: str) -> list[Write]:
    out: list[Write] = []
    try:
        names = sorted(os.listdir(where))
    except (FileNotFoundError, NotADirectoryError):
        return out
    thresholds = {p: _entry_threshold(p, since) for p in ("dec", "cor")}
    for name in names:
        prefix = name[:3]
        if prefix not in thresholds or name < thresholds[prefix] or not _ENTRY_FILE.match(name):
            continue
        meta = _head(os.path.join(where, name))
        if meta is None or meta.get("kind") not in ("decision", "correction", "retraction"):
            continue
        kind = str(meta["kind"])
        what = meta.get("topic") if kind == "decision" else meta.get("ref")
        out.append(Write(kind, name[:-3], str(meta.get("author") or ""),
                         str(meta.get("at") or ""), None, str(what or "")))
    return out


def _leases_since(leases: str, saw: Baseline) -> list[Write]:
    out: list[Write] = []
    for resource in sorted(lease_names(leases)):
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
