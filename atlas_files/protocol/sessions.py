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
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import DamagedFile
from atlas_files.facts.names import check_name, is_name
from atlas_files.storage import frontmatter, fsio, jsonfile

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

# The Stop hook imports this module at every turn end, so it stays light: no versioned
# documents, entries or leases modules (and no atlas.yaml read: the row names its
# project). It reads front matter and generations with the same parsers they use.
OPEN, ENDED = "open", "ended"
ROW_LIMIT = 8 << 20  # a row lists one number per topic and lease: far below this
HEAD_BYTES = 64 * 1024  # a version's or an entry's front matter is a few hundred bytes


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
    what begin's "since your last session" was measured from (None: the first).

    What the edit-time hooks keep for the session (all optional, absent from a row no
    hook touched): ``heard``, the baseline the news hook last told the session about
    (None: the session has heard nothing since ``saw``) and ``heard_at``, when it last
    looked; ``told``, the guard's and the news hook's results (``Told``); ``edited``, the
    repository paths the session's edits changed; ``pending``, context the guard left
    for the next post-tool hook of a harness whose pre-tool hook cannot add any."""

    __slots__ = ("identity", "project", "state", "started_at", "ended_at", "saw", "previous",
                 "heard", "heard_at", "told", "edited", "pending")

    def __init__(self, identity: str, project: str, state: str, started_at: str,
                 ended_at: str | None, saw: Baseline, previous: str | None = None, *,
                 heard: Baseline | None = None, heard_at: str | None = None,
                 told: list[Told] | None = None, edited: list[str] | None = None,
                 pending: list[str] | None = None) -> None:
        self.identity = identity
        self.project = project
        self.state = state  # OPEN or ENDED
        self.started_at = started_at
        self.ended_at = ended_at
        self.saw = saw
        self.previous = previous
        self.heard = heard
        self.heard_at = heard_at
        self.told: list[Told] = list(told or [])
        self.edited: list[str] = list(edited or [])
        self.pending: list[str] = list(pending or [])

    @property
    def open(self) -> bool:
        return self.state == OPEN

    @property
    def since(self) -> str:
        """From when this row's baseline holds: the start, or the end of an ended session."""
        return self.started_at if self.open or not self.ended_at else self.ended_at

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "identity": self.identity, "project": self.project, "state": self.state,
            "started_at": self.started_at, "ended_at": self.ended_at,
            "previous": self.previous, "saw": self.saw.to_json()}
        if self.heard is not None or self.heard_at is not None:
            out["heard"] = {"at": self.heard_at,
                            **(self.heard or self.saw).to_json()}
        if self.told or self.edited or self.pending:
            out["hooks"] = {"told": [t.to_json() for t in self.told],
                            "edited": list(self.edited), "pending": list(self.pending)}
        return out

    def __repr__(self) -> str:
        return f"Row({self.to_json()!r})"


TOLD_KEPT = 50  # the newest results a row keeps; a session told more than this is told
EDITED_KEPT = 500  # paths a row remembers as edited
PENDING_KEPT = 10


class Told:
    """One result of the edit-time hooks that the session saw: ``kind`` is ``refused``
    (an edit of the record's own files), ``stopped`` (an edit under another's path lease,
    put to a person), ``told`` (commits by another author to the file) or ``news``;
    ``paths`` the repository paths (or record files) it was about, ``what`` the one line
    said, ``by`` who it was about (the holder, the author), ``refs`` the versions news
    named (``plan@v2``), ``after`` what the session did next (``edited``: it changed one
    of those paths anyway)."""

    __slots__ = ("at", "kind", "paths", "what", "by", "refs", "after")

    def __init__(self, at: str, kind: str, paths: list[str], what: str,
                 by: str | None = None, refs: list[str] | None = None,
                 after: str | None = None) -> None:
        self.at = at
        self.kind = kind
        self.paths = list(paths)
        self.what = what
        self.by = by
        self.refs = list(refs or [])
        self.after = after

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "kind": self.kind, "paths": list(self.paths),
                "what": self.what, "by": self.by, "refs": list(self.refs),
                "after": self.after}

    @classmethod
    def from_json(cls, raw: Any) -> Told:
        item = jsonfile.need_object(raw, "hooks.told[]")
        kind = item.get("kind")
        if kind not in TOLD_KINDS:
            raise jsonfile.JSONDamage(f"hooks.told: kind {str(kind)[:40]!r} is none of "
                                      f"{', '.join(TOLD_KINDS)}")
        return cls(_text(item.get("at"), "hooks.told[].at"), kind,
                   _texts(item.get("paths"), "hooks.told[].paths"),
                   _text(item.get("what"), "hooks.told[].what"),
                   jsonfile.opt_str(item.get("by"), "hooks.told[].by"),
                   _texts(item.get("refs"), "hooks.told[].refs"),
                   jsonfile.opt_str(item.get("after"), "hooks.told[].after"))


TOLD_KINDS = ("refused", "stopped", "told", "news")


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise jsonfile.JSONDamage(f"{what} should be text")
    return value


def _texts(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise jsonfile.JSONDamage(f"{what} should be a list of text")
    return value


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
    baseline = _baseline(raw.get("saw"), "saw")
    heard, heard_at = None, None
    if raw.get("heard") is not None:
        heard = _baseline(raw["heard"], "heard")
        heard_at = jsonfile.opt_str(raw["heard"].get("at"), "heard.at")
    hooks = jsonfile.need_object(raw.get("hooks") or {}, "hooks")
    told = [Told.from_json(t) for t in _list(hooks.get("told"), "hooks.told")]
    return Row(identity, project, state, started, ended, baseline,
               jsonfile.opt_str(raw.get("previous"), "previous"), heard=heard,
               heard_at=heard_at, told=told,
               edited=_texts(hooks.get("edited"), "hooks.edited"),
               pending=_texts(hooks.get("pending"), "hooks.pending"))


def _baseline(value: Any, what: str) -> Baseline:
    saw = jsonfile.need_object(value, what)
    return Baseline(jsonfile.need_int(saw.get("status", 0), f"{what}.status"),
                    _counts(saw.get("topics"), f"{what}.topics"),
                    _counts(saw.get("leases"), f"{what}.leases"))


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise jsonfile.JSONDamage(f"{what} should be a list")
    return value


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
    """Replace ``row.identity``'s row atomically: a reader sees the old row or the new.
    Under the row's lock, so that a hook's ``update`` never puts back the row it read
    over one written meanwhile."""
    path = row_path(record, row.identity)
    with fsio.open_folder(path.parent, within=record.opened, create=True) as folder, \
            folder.locked(f".{row.identity}.lock"):
        return _replace(folder, path, row)


def _replace(folder: fsio.Folder, path: Path, row: Row) -> Path:
    # On one line: an indented dump goes through json's Python encoder, many times slower
    # for a record of thousands of topics (the baseline lists each).
    data = json.dumps(row.to_json(), ensure_ascii=False).encode() + b"\n"
    # Not durable: a row lost to a power cut reads as "no session", which lets a stop
    # through; it never blocks one wrongly.
    return folder.replace_atomic(path.name, data, durable=False)


def update(record: Record, identity: str, change: Callable[[Row], bool]) -> Row | None:
    """Read ``identity``'s row, let ``change`` alter it in place, and write it back if it
    says it changed something: one read-modify-write under the row's lock, so that hooks
    of one session running at once (parallel tool calls) never lose each other's note.
    None if the identity has no row (nothing is written); DamagedFile as ``read``."""
    path = row_path(record, identity)
    if not path.parent.is_dir():
        return None
    with fsio.open_folder(path.parent, within=record.opened) as folder, \
            folder.locked(f".{identity}.lock"):
        row = read(record, identity)
        if row is None:
            return None
        if change(row):
            del row.told[:-TOLD_KEPT]
            del row.edited[:-EDITED_KEPT]
            del row.pending[:-PENDING_KEPT]
            _replace(folder, path, row)
    return row


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


def lease_names(leases: str, prefix: str = "") -> list[str]:
    """The resources of the lease sheet at ``leases`` (those starting with ``prefix``):
    the name is tested before the folder is (one lstat each), since the hooks that ask for
    the task claims alone run at every tool call and turn end."""
    try:
        return [n for n in os.listdir(leases) if n.startswith(prefix) and n[0] != "."
                and is_name(n) and not os.path.islink(os.path.join(leases, n))]
    except (FileNotFoundError, NotADirectoryError):
        return []


def newest_generation(where: str) -> int:
    try:
        names = os.listdir(where)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    return max(filter(None, map(layout.generation_number, names)), default=0)


def head(path: str) -> dict[str, Any] | None:
    """The front matter of the file at ``path``; None if it cannot be read as some (a
    damaged file names no author: `atlas check` reports it)."""
    try:
        data = fsio.read_start(path, HEAD_BYTES)
    except OSError:
        return None
    try:
        return frontmatter.parse(data).meta
    except (frontmatter.FrontMatterError, ValueError, RecursionError):
        return None


# -- what was written since ------------------------------------------------------------------


def versions_after(folder: str, name: str, seen: int, kind: str) -> Iterator[Write]:
    """Each version of the stream ``name`` in ``folder`` after ``seen``, until one is
    missing; the first costs one stat when there is none."""
    version = seen + 1
    while True:
        path = f"{folder}{os.sep}{layout.version_filename(name, version)}"
        if not os.path.exists(path):
            return
        meta = head(path)
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
    out = list(versions_after(str(record.path(layout.PROJECTS, project, layout.STATUS)),
                         "status", saw.status, "status"))
    artifacts = str(record.path(layout.PROJECTS, project, layout.ARTIFACTS))
    seen = saw.topics
    for name in sorted(topic_names(artifacts)):
        # The common case, a topic that did not move, costs one stat: string paths and no
        # generator, since this runs for every topic at every turn end.
        folder = f"{artifacts}{os.sep}{name}"
        version = seen.get(name, 0) + 1
        if os.path.exists(f"{folder}{os.sep}{layout.version_filename(name, version)}"):
            out += versions_after(folder, name, version - 1, "put")
    for kind in (layout.DECISIONS, layout.CORRECTIONS):
        out += entries_since(str(record.path(layout.PROJECTS, project, kind)), row.since)
    out += leases_since(str(record.path(layout.LEASES)), saw)
    return out


def entries_since(where: str, since: str) -> list[Write]:
    out: list[Write] = []
    try:
        names = sorted(os.listdir(where))
    except (FileNotFoundError, NotADirectoryError):
        return out
    thresholds = {p: _entry_threshold(p, since) for p in ("dec", "cor")}
    for name in names:
        prefix = name[:3]
        if prefix not in thresholds or name < thresholds[prefix] or not layout.is_entry_file(name):
            continue
        meta = head(os.path.join(where, name))
        if meta is None or meta.get("kind") not in ("decision", "correction", "retraction"):
            continue
        kind = str(meta["kind"])
        what = meta.get("topic") if kind == "decision" else meta.get("ref")
        out.append(Write(kind, name[:-3], str(meta.get("author") or ""),
                         str(meta.get("at") or ""), None, str(what or "")))
    return out


def leases_since(leases: str, saw: Baseline) -> list[Write]:
    out: list[Write] = []
    for resource in sorted(lease_names(leases)):
        where = os.path.join(leases, resource)
        generation = saw.leases.get(resource, 0) + 1
        while True:
            path = os.path.join(where, layout.generation_filename(generation))
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
