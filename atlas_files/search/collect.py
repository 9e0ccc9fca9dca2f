"""What is searched, read from the record's files: one ``Doc`` per version or entry.

The folders of a project are its status stream, one folder per topic, its decisions and
its corrections. Each is listed with ``os.scandir``, which gives every name with its inode
for free, so a file replaced under the same name (``atlas check --fix`` stamping a digest,
a restore from git) is noticed without a stat per file. Only published names count:
temp files of writes in flight are never read, so no half-written version is ever indexed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import BadInput
from atlas_files.protocol.artifacts import topic_streams
from atlas_files.storage import entries, frontmatter, fsio
from atlas_files.storage.documents import FRONT_MATTER_ALLOWANCE

if TYPE_CHECKING:
    from atlas_files.storage.documents import Stream
    from atlas_files.storage.record import Record

# Kinds of results, and the kinds `--kind` accepts (correction covers retractions).
KINDS = ("status", "artifact", "decision", "correction", "retraction", "task")
# A file the index knows but could not read: kept so it is not read again and again.
DAMAGED = "damaged"
# SQLite's integers hold 18 decimal digits whatever they are.
MAX_VERSION_DIGITS = layout.VERSION_DIGITS_READ
# File times come from a coarse clock: a change this recent is not trusted to show.
SETTLE_NS = 2_000_000_000


@dataclass(frozen=True)
class Folder:
    """A folder of the record that holds searchable files."""

    rel: str          # record-relative, "/"-separated: the key in the index
    path: str
    project: str
    kind: str         # "status", "artifact" (one topic), "decisions", "corrections", "tasks"
    stream: Stream | None = None  # for versions


@dataclass(frozen=True)
class Doc:
    """One searchable item; ``head``, ``why`` and ``body`` are its text by weight."""

    file: str
    ino: int
    kind: str
    project: str
    name: str          # topic, "status", a decision's topic, or what a correction is about
    version: int | None
    ref: str           # NAME@vN, status@vN or an entry id
    author: str = ""
    written_at: str = ""
    target: str | None = None   # a correction's reference; the proposal a decision accepts
    proposal: bool = False
    relation: str | None = None
    note: str | None = None     # a correction's text, shown as a mark on what it corrects
    head: str = ""
    why: str = ""
    body: str = ""
    # The file as it was read (size and change time): a later search that finds the file
    # otherwise, edited in place under the same name and inode, reads it again.
    stamp: str = ""


def folders(record: Record, project: str) -> list[Folder]:
    """Every searchable folder of ``project``: status, each topic, decisions, corrections."""
    base = f"projects/{project}"
    status = record.status_stream(project)
    out = [Folder(f"{base}/status", str(status.folder), project, "status", status)]
    for stream in topic_streams(record, project):
        out.append(Folder(f"{base}/artifacts/{stream.name}", str(stream.folder), project,
                          "artifact", stream))
    for sub in ("decisions", "corrections", layout.TASKS):
        out.append(Folder(f"{base}/{sub}", str(record.path("projects", project, sub)),
                          project, sub))
    return out


def folder_at(record: Record, project: str, rel: str) -> Folder | None:
    """The searchable folder ``rel`` of ``project`` (as ``folders`` names it), reached
    without a symlink; None if ``rel`` names no such folder (an index row that does not
    come from this record's layout never leads a read anywhere)."""
    parts = rel.split("/")
    if parts[:2] != ["projects", project] or project not in record.config.projects:
        return None
    try:
        if parts[2:] == ["status"]:
            stream = record.status_stream(project)
            return Folder(rel, str(stream.folder), project, "status", stream)
        if len(parts) == 4 and parts[2] == "artifacts":
            stream = record.artifact_stream(parts[3], project)
            return Folder(rel, str(stream.folder), project, "artifact", stream)
        if parts[2:] in (["decisions"], ["corrections"], [layout.TASKS]):
            return Folder(rel, str(record.path("projects", project, parts[2])), project,
                          parts[2])
    except BadInput:  # not a name, or a symlinked folder
        return None
    return None


def names_a_file(folder: Folder) -> Callable[[str], bool]:
    """Whether a name is one of ``folder``'s published files: a version of its stream, or
    an entry."""
    if folder.kind == layout.TASKS:
        return _is_task
    if folder.stream is None:
        return layout.is_entry_file
    stream = folder.stream.name

    def wanted(name: str) -> bool:
        found = layout.version_parts(name)
        # Canonical numbers only, as the record's readers count them: v0007, v10000; and
        # none past what the index can hold (a number of 19 digits was made by hand, and
        # `atlas check` reports it).
        return found is not None and found[0] == stream \
            and layout.is_canonical_number(found[1]) and len(found[1]) <= MAX_VERSION_DIGITS

    return wanted


def _is_task(name: str) -> bool:
    """A task itself; what happened to it (done, dropped) is not searched."""
    m = layout.TASK_FILE.fullmatch(name)
    return m is not None and m.group(2) is None


def listing(folder: Folder) -> dict[str, int]:
    """Published file name -> inode, from one listing (empty if the folder is gone)."""
    wanted = names_a_file(folder)
    try:
        with os.scandir(folder.path) as it:
            return {e.name: e.inode() for e in it if wanted(e.name)}
    except (FileNotFoundError, NotADirectoryError):
        return {}


def stamp_of(st: os.stat_result, now_ns: int) -> str:
    """``size:ctime`` of a file; "" when it changed too recently to be trusted (a coarse
    clock could stamp a second edit in the same tick), so that it is read again."""
    if not now_ns - SETTLE_NS > st.st_ctime_ns:
        return ""
    return f"{st.st_size}:{st.st_ctime_ns}"


def read(folder: Folder, file: str, ino: int) -> Doc:
    """The Doc of one file; a file that cannot be read as its kind becomes a DAMAGED doc."""
    path = f"{folder.path}{os.sep}{file}"
    stamp = ""
    try:
        data, st = fsio.read_with_stat(path, read_limit(folder))
        stamp = stamp_of(st, time.time_ns())
        return doc_of(folder, file, ino, data, stamp)
    except DAMAGE:
        if not stamp:  # not even opened (a symlink, too large): stamped as it lies
            with contextlib.suppress(OSError):
                stamp = stamp_of(os.stat(path, follow_symlinks=False), time.time_ns())
        # A version keeps its number: it still makes older versions superseded.
        number = _number(folder, file) if folder.stream is not None else None
        return Doc(file, ino, DAMAGED, folder.project, "", number, file, stamp=stamp)


# What reading a file as its kind raises when it is not one.
DAMAGE = (BadInput, OSError, ValueError, TypeError, KeyError, AttributeError)


def doc_of(folder: Folder, file: str, ino: int, data: bytes, stamp: str) -> Doc:
    """The Doc of ``data``, the bytes of ``file``; raises one of DAMAGE if it does not
    read as its kind."""
    if folder.stream is not None:
        return _version(folder, file, ino, data, stamp)
    return _entry(folder, file, ino, data, stamp)


def read_limit(folder: Folder) -> int:
    """The most bytes read of one file: a version is at most the record's body_limit plus
    its front matter, an entry a few fields."""
    if folder.stream is not None and folder.stream.body_limit is not None:
        return folder.stream.body_limit + FRONT_MATTER_ALLOWANCE
    return entries.ENTRY_LIMIT


def _number(folder: Folder, file: str) -> int:
    assert folder.stream is not None
    return int(file[len(folder.stream.name) + 2:-3])


def _version(folder: Folder, file: str, ino: int, data: bytes, stamp: str) -> Doc:
    # Read here rather than with Stream.read, which also digests the body and builds
    # path objects: that doubles the cost of indexing a long history. The checks that
    # matter for a search are kept: the file is no symlink, its front matter reads, and
    # it names the stream and the number its file name does.
    assert folder.stream is not None
    number = _number(folder, file)
    parsed = frontmatter.parse(data)
    meta = parsed.meta
    if int(meta["version"]) != number or str(meta.get("name", "")) != folder.stream.name:
        raise ValueError(f"{file} names another version")
    written_at = meta["written_at"]
    if not isinstance(written_at, str):  # YAML may have parsed a bare timestamp
        written_at = timeutil.format_time(written_at)
    is_status = folder.kind == "status"
    name = "status" if is_status else folder.stream.name
    summary = str(meta.get("summary") or "")
    return Doc(
        file, ino, folder.kind, folder.project, name, number, f"{name}@v{number}",
        author=str(meta["author"]), written_at=written_at,
        proposal=bool(meta.get("proposal", False)) and not is_status,
        head=summary if is_status else f"{name}\n{summary}",
        body=parsed.body.decode("utf-8"), stamp=stamp,
    )


def _entry(folder: Folder, file: str, ino: int, data: bytes, stamp: str) -> Doc:
    e = entries.parse_entry(entries_path(folder, file), data)
    m = e.meta
    expected = {"decisions": ("decision",), layout.TASKS: ("task",)}.get(
        folder.kind, ("correction", "retraction"))
    if e.kind not in expected:
        raise BadInput(f"a {e.kind} among the {folder.kind}")
    author, at = str(m.get("author", "")), str(m.get("at", ""))
    if e.kind == "task":
        return Doc(file, ino, "task", folder.project, _text(m.get("title")), None, e.id,
                   author=author, written_at=at, head=_text(m.get("title")),
                   why=_text(m.get("why")), stamp=stamp)
    if e.kind == "decision":
        accepts = m.get("accepts")
        return Doc(
            file, ino, "decision", folder.project, _text(m.get("topic")), None, e.id,
            author=author, written_at=at,
            target=accepts if isinstance(accepts, str) else None,
            relation=_text(m.get("relation")), head=_text(m.get("topic")),
            why=_text(m.get("why")),
            body=f"{_text(m.get('recommended'))}\n{_text(m.get('chosen'))}", stamp=stamp,
        )
    text = _text(m.get("why") if e.kind == "retraction" else m.get("what"))
    ref = _text(m.get("ref"))
    return Doc(file, ino, e.kind, folder.project, ref, None, e.id, author=author,
               written_at=at, target=ref, note=text, why=text, body=ref, stamp=stamp)


def _text(value: object) -> str:
    return "" if value is None else str(value)


def entries_path(folder: Folder, file: str) -> Path:
    return Path(folder.path) / file
