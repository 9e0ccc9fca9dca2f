"""What is searched, read from the record's files: one ``Doc`` per version or entry.

The folders of a project are its status stream, one folder per topic, its decisions and
its corrections. Each is listed with ``os.scandir``, which gives every name with its inode
for free, so a file replaced under the same name (``atlas check --fix`` stamping a digest,
a restore from git) is noticed without a stat per file. Only published names count:
temp files of writes in flight are never read, so no half-written version is ever indexed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files import entries, frontmatter, fsio, timeutil
from atlas_files.artifacts import topic_streams
from atlas_files.errors import BadInput

if TYPE_CHECKING:
    from atlas_files.documents import Stream
    from atlas_files.record import Record

# Kinds of results, and the kinds `--kind` accepts (correction covers retractions).
KINDS = ("status", "artifact", "decision", "correction", "retraction")
# A file the index knows but could not read: kept so it is not read again and again.
DAMAGED = "damaged"


@dataclass(frozen=True)
class Folder:
    """A folder of the record that holds searchable files."""

    rel: str          # record-relative, "/"-separated: the key in the index
    path: str
    project: str
    kind: str         # "status", "artifact" (one topic), "decisions" or "corrections"
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


def folders(record: Record, project: str) -> list[Folder]:
    """Every searchable folder of ``project``: status, each topic, decisions, corrections."""
    base = f"projects/{project}"
    status = record.status_stream(project)
    out = [Folder(f"{base}/status", str(status.folder), project, "status", status)]
    for stream in topic_streams(record, project):
        out.append(Folder(f"{base}/artifacts/{stream.name}", str(stream.folder), project,
                          "artifact", stream))
    for sub in ("decisions", "corrections"):
        out.append(Folder(f"{base}/{sub}", str(record.path("projects", project, sub)),
                          project, sub))
    return out


def listing(folder: Folder) -> dict[str, int]:
    """Published file name -> inode, from one listing (empty if the folder is gone)."""
    if folder.stream is not None:
        pattern = re.compile(rf"^{re.escape(folder.stream.name)}\.v([0-9]{{4,}})\.md$")

        def wanted(name: str) -> bool:
            m = pattern.match(name)
            # Canonical numbers only, as the record's readers count them: v0007, v10000.
            return m is not None and (len(m.group(1)) == 4 or m.group(1)[0] != "0")
    else:
        wanted = entries.is_entry_file
    try:
        with os.scandir(folder.path) as it:
            return {e.name: e.inode() for e in it if wanted(e.name)}
    except (FileNotFoundError, NotADirectoryError):
        return {}


def read(folder: Folder, file: str, ino: int) -> Doc:
    """The Doc of one file; a file that cannot be read as its kind becomes a DAMAGED doc."""
    try:
        if folder.stream is not None:
            return _version(folder, file, ino)
        return _entry(folder, file, ino)
    except (BadInput, OSError, ValueError, TypeError, KeyError, AttributeError):
        # A version keeps its number: it still makes older versions superseded.
        number = _number(folder, file) if folder.stream is not None else None
        return Doc(file, ino, DAMAGED, folder.project, "", number, file)


def _number(folder: Folder, file: str) -> int:
    assert folder.stream is not None
    return int(file[len(folder.stream.name) + 2:-3])


def _version(folder: Folder, file: str, ino: int) -> Doc:
    # Read here rather than with Stream.read, which also digests the body and builds
    # path objects: that doubles the cost of indexing a long history. The checks that
    # matter for a search are kept: the file is no symlink, its front matter reads, and
    # it names the stream and the number its file name does.
    assert folder.stream is not None
    number = _number(folder, file)
    parsed = frontmatter.parse(fsio.read_nofollow(f"{folder.path}{os.sep}{file}"))
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
        body=parsed.body.decode("utf-8"),
    )


def _entry(folder: Folder, file: str, ino: int) -> Doc:
    e = entries.read_entry(entries_path(folder, file))
    m = e.meta
    expected = ("decision",) if folder.kind == "decisions" else ("correction", "retraction")
    if e.kind not in expected:
        raise BadInput(f"a {e.kind} among the {folder.kind}")
    author, at = str(m.get("author", "")), str(m.get("at", ""))
    if e.kind == "decision":
        accepts = m.get("accepts")
        return Doc(
            file, ino, "decision", folder.project, _text(m.get("topic")), None, e.id,
            author=author, written_at=at,
            target=accepts if isinstance(accepts, str) else None,
            relation=_text(m.get("relation")), head=_text(m.get("topic")),
            why=_text(m.get("why")),
            body=f"{_text(m.get('recommended'))}\n{_text(m.get('chosen'))}",
        )
    text = _text(m.get("why") if e.kind == "retraction" else m.get("what"))
    ref = _text(m.get("ref"))
    return Doc(file, ino, e.kind, folder.project, ref, None, e.id, author=author,
               written_at=at, target=ref, note=text, why=text, body=ref)


def _text(value: object) -> str:
    return "" if value is None else str(value)


def entries_path(folder: Folder, file: str) -> Path:
    return Path(folder.path) / file
