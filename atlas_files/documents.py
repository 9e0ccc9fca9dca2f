"""Versioned documents: status and artifacts are both streams of immutable versions.

A stream is one folder holding ``<name>.vNNNN.md`` files. The latest version is found
from the folder listing alone, never by opening every version. A write names the version
it was based on and is published with an exclusive create of the next number, so two
writers racing for N+1 cannot both win: the loser gets the stop sign.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from atlas_files import frontmatter, fsio, layout, timeutil
from atlas_files.errors import BadInput, DamagedFile, NotFound, VersionConflict
from atlas_files.names import quote
from atlas_files.text import clean_text, decode_body

# The order front matter keys are written in; readers accept any order.
FIELDS = ("name", "version", "based_on", "author", "written_at", "summary", "digest")
MAX_SUMMARY = 200
HINTS_LIMIT = 16 << 20  # a hints file larger than this is ignored, as a missing one is
# Applied to the folder listing joined by newlines (re.M: `$` is each name's end); a name
# holding a newline is left out before joining, or it could pose as two names.
_TEMP_LINE = re.compile(rf"^{re.escape(layout.TEMP_PREFIX)}.*$", re.M)
# What a version file may hold besides its body: front matter is a few hundred bytes, so
# this is generous; past body_limit plus this, a reader refuses the file unread.
FRONT_MATTER_ALLOWANCE = 64 * 1024


def check_body_size(raw: bytes, limit: int) -> None:
    """Refuse a body over the record's ``body_limit`` before anything is written."""
    if len(raw) > limit:
        raise BadInput(
            f"the body is {len(raw)} bytes; this record's body_limit is {limit} bytes, so "
            "nothing was written",
            hint="split it into several topics, or raise body_limit in atlas.yaml",
        )


class Version(NamedTuple):
    """One published version: its front matter, its body and where it lies.

    A NamedTuple, like the other records every command reads: a frozen dataclass costs
    about half a millisecond of each command's start. ``meta`` (the front matter as read)
    is never changed in place; its default is one shared empty mapping."""

    name: str
    version: int
    based_on: int
    author: str
    written_at: str
    summary: str
    body: str
    path: Path
    digest_ok: bool | None = None
    proposal: bool = False
    links: tuple[str, ...] = ()
    meta: dict[str, Any] = {}  # noqa: RUF012

    @property
    def written(self) -> Any:
        return timeutil.parse_time(self.written_at)


def clean_summary(summary: str) -> str:
    """A writer's ``--summary``: one line of at most MAX_SUMMARY characters."""
    return clean_text(summary, "the summary (--summary)", one_line=True, limit=MAX_SUMMARY,
                      elsewhere="the body")


def default_summary(body: str) -> str:
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text[:MAX_SUMMARY]
    return ""


class Stream(NamedTuple):
    """The versions of one named document in one folder."""

    folder: Path
    name: str
    label: str  # how messages name it: "plan" or "the status of project web"
    # The record's body_limit: a reader refuses a version file larger than this (plus the
    # front matter) without reading it. None: no limit (a stream made outside a record).
    body_limit: int | None = None
    # The record as its command opened it: writes walk from there (fsio.OpenRoot). None:
    # a stream made outside a record, written by its path.
    within: fsio.OpenRoot | None = None

    def path(self, version: int) -> Path:
        return Path(self._file(version))

    def _file(self, version: int) -> str:
        # String paths on the hot read path: pathlib costs microseconds per join, and
        # `atlas ls` joins several paths for every topic of the record.
        return f"{self.folder}{os.sep}{layout.version_filename(self.name, version)}"

    def _listing(self) -> list[str]:
        try:
            return os.listdir(self.folder)
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            raise DamagedFile(f"{self.folder} should be a folder") from None

    def _numbers(self, names: list[str], joined: str | None = None) -> list[int]:
        # One regex pass over the joined listing runs in C; a Python test per name would
        # make every write cost time in proportion to the versions already there.
        # Only canonical numbers count (4 digits, or more without a leading zero):
        # `plan.v2.md` is no version (atlas check says so), for readers and writers alike.
        if joined is None:
            joined = _join(names)
        return [int(number) for name, number in layout.VERSION_LINES.findall(joined)
                if name == self.name and layout.is_canonical_number(number)]

    def scan(self, folder: fsio.Folder | None = None) -> tuple[list[int], list[str]]:
        """The version numbers (sorted) and temp-file names, from one folder listing (of
        ``folder``, this stream's folder as a writer opened it, when given)."""
        names = self._listing() if folder is None else folder.listdir()
        joined = _join(names)
        found = self._numbers(names, joined)
        found.sort()
        return found, _TEMP_LINE.findall(joined) if layout.TEMP_PREFIX in joined else []

    def versions(self) -> list[int]:
        found = self._numbers(self._listing())
        found.sort()
        return found

    def latest(self) -> int:
        """The highest version, from the folder listing (what writers use)."""
        return max(self._numbers(self._listing()), default=0)

    def latest_for_reading(self) -> int:
        """The highest version, for a reader: from the hints, in O(1) file operations."""
        hints = LatestHints(self.folder.parent, self.within)
        latest = hints.latest(self)
        hints.save()
        return latest

    def latest_from(self, hinted: int) -> int:
        """The highest version, probing upward from ``hinted``; the listing if it is no
        version."""
        if hinted < 1 or not os.path.exists(self._file(hinted)):
            return self.latest()
        while os.path.exists(self._file(hinted + 1)):
            hinted += 1
        return hinted

    def read(self, version: int, *, head_only: bool = False) -> Version:
        """Version ``version``; ``head_only`` skips decoding and digesting the body (the
        Version then has an empty body and no digest verdict), for listings."""
        return self.read_with_id(version, head_only=head_only)[0]

    def read_with_id(self, version: int, *,
                     head_only: bool = False) -> tuple[Version, tuple[int, int, int]]:
        """``read``, with the identity of the file read (inode, size, mtime in ns): what
        tells a later reader that the file it finds is still that one."""
        path = self.path(version)
        limit = None if self.body_limit is None else self.body_limit + FRONT_MATTER_ALLOWANCE
        try:
            data, st = fsio.read_with_stat(self._file(version), limit)
        except FileNotFoundError:
            raise NotFound(
                f"{self.label} has no v{version}",
                hint=f"it has {_describe_versions(self.versions())}",
            ) from None
        except OSError as exc:
            raise fsio.damage(path, exc, "version file") from None
        doc = parse_version(path, data, self.name, head_only=head_only)
        if doc.version != version or doc.name != self.name:
            raise DamagedFile(
                f"{path}: its front matter says {doc.name} v{doc.version}, its file name "
                f"says {self.name} v{version}",
                hint="versions are never edited; `atlas check` reports this, and the fix is "
                "a new version",
            )
        return doc, _file_id(st)

    def write(
        self,
        body: str,
        *,
        author: str,
        based_on: int,
        summary: str | None = None,
        proposal: bool = False,
        links: Sequence[str] = (),
        written_at: str | None = None,
        temps: list[str] | None = None,
        folder: fsio.Folder | None = None,
    ) -> Version:
        """Publish version ``based_on + 1``; raise VersionConflict if it exists already.

        ``temps`` are temp-file names seen in the folder: crash debris among them is
        removed (None: look for it). ``folder`` is this stream's folder as the writer
        opened it to scan it (None: opened here, and made if missing).
        """
        version = based_on + 1
        raw = body.encode("utf-8")
        if self.body_limit is not None:
            check_body_size(raw, self.body_limit)
        meta: dict[str, Any] = {
            "name": self.name,
            "version": version,
            "based_on": based_on,
            "author": author,
            "written_at": written_at or timeutil.format_time(timeutil.now()),
            "summary": (summary if summary is not None else default_summary(body))[:MAX_SUMMARY],
            "digest": frontmatter.digest_of(raw),
        }
        if proposal:
            meta["proposal"] = True
        if links:
            meta["links"] = list(links)
        data = frontmatter.render(meta, raw)
        with contextlib.ExitStack() as stack:
            if folder is None:
                folder = stack.enter_context(
                    fsio.open_folder(self.folder, within=self.within, create=True))
            if temps is None or temps:
                folder.clean_debris(temps)
            try:
                path = folder.publish_exclusive(layout.version_filename(self.name, version),
                                                data)
            except FileExistsError:
                raise self.conflict(based_on) from None
        return Version(
            name=self.name, version=version, based_on=based_on, author=author,
            written_at=meta["written_at"], summary=meta["summary"], body=body, path=path,
            digest_ok=True, proposal=proposal, links=tuple(links), meta=meta,
        )

    def conflict(self, read_version: int, *, never_read: bool = False) -> VersionConflict:
        """The stop sign: name what was written since ``read_version``, by whom, when."""
        latest = self.latest()
        read_version = max(read_version, 0)  # a damaged receipt never shows as v-1
        # Counted, not listed: a version file numbered by hand past any range (v10^20)
        # must cost no more than one with a sane number.
        count = max(latest - read_version, 0)
        shown = range(max(read_version + 1, latest - 4), latest + 1)
        parts = []
        for v in shown:
            try:
                doc = self.read(v)
                parts.append(f"v{v} by {doc.author} ({timeutil.age_of(doc.written_at)})")
            except NotFound:
                parts.append(f"v{v} (missing)")
            except BadInput:
                parts.append(f"v{v} (unreadable)")
        more = f"{count - len(shown)} earlier and " if count > len(shown) else ""
        if never_read or read_version == 0:  # "you read v0" would name no version
            what = f"stop: you have never read {self.label}, and it is at v{latest}"
        else:
            what = f"stop: you read v{read_version} of {self.label}, but it is at v{latest}"
        message = f"{what}; written since: {more}{', '.join(parts)}. Nothing was written."
        return VersionConflict(
            message,
            hint="read the latest version, merge your change into it, and write again",
        )


def _join(names: list[str]) -> str:
    """The listing as one text of one name per line, for the regexes above."""
    joined = "\n".join(names)
    # One C-level count finds a name holding a newline (never a version's name), which
    # would otherwise pose as two names.
    if names and joined.count("\n") >= len(names):
        joined = "\n".join(name for name in names if "\n" not in name)
    return joined


def _describe_versions(versions: list[int]) -> str:
    """The versions there are, as runs (``v1..v2, v4..v5``), and the gaps between them
    named as missing: "v1..v5" would promise a v3 that is not there."""
    if not versions:
        return "no versions yet"
    runs: list[list[int]] = []
    for v in versions:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    shown = ", ".join(f"v{a}" if a == b else f"v{a}..v{b}" for a, b in runs[:5])
    more = f" and {len(runs) - 5} more runs" if len(runs) > 5 else ""
    gaps = [(b + 1, c - 1) for (_, b), (c, _) in zip(runs, runs[1:], strict=False)]
    if runs[0][0] > 1:
        gaps.insert(0, (1, runs[0][0] - 1))
    if not gaps:
        return f"only {shown}" if len(versions) == 1 else shown
    first, last = gaps[0]
    missing = f"v{first}" if first == last else f"v{first}..v{last}"
    also = f" and {len(gaps) - 1} more gaps" if len(gaps) > 1 else ""
    verb = "is" if first == last and not also else "are"
    return (f"{shown}{more}; {missing}{also} {verb} missing (deleted, or a number skipped: "
            "`atlas check` tells more)")


def _file_id(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


# The types of a latest version's front matter as the hints keep it: based_on, author,
# written_at, summary, proposal, links.
_HEAD_TYPES = (int, str, str, str, bool, list)


class LatestHints:
    """The latest-version hints of one folder of streams, read once, saved if they moved.

    Readers that visit every topic (`ls`, `feed`, `begin`) cannot afford to list every
    topic's folder, nor to read every latest version. One small file names each stream's
    latest version as last seen by a reader, with that version's front matter and the
    identity of its file (inode, size, mtime); the versions after the hint are probed
    until one is missing, so a stale hint (a version written since, a version written by
    hand) costs a few stats and a missing or wrong one a folder listing, and the front
    matter is believed only while the file is the very one it was read from (a version
    replaced by `atlas sync`, or edited in place, is read again). Readers, not writers,
    keep it current, so writes pay nothing; where a reader cannot write (a read-only copy)
    it simply stays stale. Two readers saving at once can lose each other's update: only
    speed depends on it, never a result. Writers never trust it: the stop sign compares
    against the listing and reads the versions.
    """

    def __init__(self, folder: Path, within: fsio.OpenRoot | None = None) -> None:
        self.path = folder / layout.LATEST_HINTS
        self.within = within
        self._changed = False
        try:
            data = json.loads(fsio.read_nofollow(self.path, HINTS_LIMIT))
        except (OSError, ValueError, RecursionError):  # a damaged hint is no hint
            data = {}
        self._hints: dict[str, int] = {}
        # name -> (version, file id, front matter fields): see head()
        self._heads: dict[str, tuple[int, tuple[int, int, int], list[Any]]] = {}
        for name, value in (data.items() if isinstance(data, dict) else ()):
            if isinstance(value, int) and not isinstance(value, bool):
                self._hints[name] = value
            elif isinstance(value, dict) and _whole_number(value.get("v")):
                self._hints[name] = value["v"]
                file_id, head = value.get("id"), value.get("head")
                if (isinstance(file_id, list) and len(file_id) == 3
                        and all(_whole_number(x) for x in file_id)
                        and isinstance(head, list) and len(head) == len(_HEAD_TYPES)
                        and all(type(x) is t for x, t in zip(head, _HEAD_TYPES, strict=True))
                        and all(isinstance(x, str) for x in head[5])):
                    self._heads[name] = (value["v"], (file_id[0], file_id[1], file_id[2]),
                                         head)

    def latest(self, stream: Stream) -> int:
        hinted = self._hints.get(stream.name, 0)
        latest = stream.latest_from(hinted)
        if latest != hinted and latest > 0:
            self._hints[stream.name] = latest
            self._changed = True
        return latest

    def head(self, stream: Stream, version: int) -> Version:
        """``stream.read(version, head_only=True)``, from the hints while the version's
        file is the one they were taken from (one stat), else read and kept."""
        kept = self._heads.get(stream.name)
        if kept is not None and kept[0] == version:
            try:
                st = os.stat(stream.path(version), follow_symlinks=False)
            except OSError:
                st = None
            if st is not None and stat.S_ISREG(st.st_mode) and _file_id(st) == kept[1]:
                based_on, author, written_at, summary, proposal, links = kept[2]
                return Version(stream.name, version, based_on, author, written_at,
                               summary, "", stream.path(version), None, proposal,
                               tuple(links))
        doc, file_id = stream.read_with_id(version, head_only=True)
        if self._hints.get(stream.name) == version:
            self._heads[stream.name] = (version, file_id, [
                doc.based_on, doc.author, doc.written_at, doc.summary, doc.proposal,
                list(doc.links)])
            self._changed = True
        return doc

    def save(self) -> None:
        if self._changed:
            hints: dict[str, Any] = dict(self._hints)
            for name, (version, file_id, head) in self._heads.items():
                if hints.get(name) == version:
                    hints[name] = {"v": version, "id": list(file_id), "head": head}
            data = json.dumps(hints, sort_keys=True, ensure_ascii=False).encode() + b"\n"
            # A hint that cannot be saved (a read-only copy, a record moved meanwhile) is
            # no hint; the read it served stands.
            with contextlib.suppress(OSError, BadInput):
                fsio.replace_atomic(self.path, data, durable=False, within=self.within)
            self._changed = False


def _whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_version(path: Path, data: bytes, name: str | None = None, *,
                  head_only: bool = False) -> Version:
    """Read a version file; a file that cannot be read as one raises DamagedFile."""
    try:
        parsed = frontmatter.parse(data)
    except frontmatter.FrontMatterError as exc:
        raise DamagedFile(
            f"{path}:{exc.line}: {exc}",
            hint="run `atlas check` on the record; versions are never edited by hand",
        ) from None
    meta = parsed.meta
    body = "" if head_only else decode_body(parsed.body, str(path))
    version = _whole(meta, "version", path, lowest=1)
    based_on = _whole(meta, "based_on", path, lowest=0, default=version - 1)
    author = _text(meta, "author", path)
    written_at = meta.get("written_at")
    if isinstance(written_at, datetime):  # YAML parses a bare timestamp
        written_at = timeutil.format_time(written_at)
    elif not isinstance(written_at, str):
        raise _bad_field(path, "written_at", written_at,
                         'a UTC time such as "2026-01-31T12:00:00Z"')
    summary = meta.get("summary") or ""
    if not isinstance(summary, str | int | float):  # never str() a list or a mapping
        raise _bad_field(path, "summary", summary, "one line of text")
    links = meta.get("links") or ()
    return Version(
        name=_text(meta, "name", path, default=name or ""),
        version=version,
        based_on=based_on,
        author=author,
        written_at=written_at,
        summary=str(summary),
        body=body,
        path=path,
        digest_ok=None if head_only else parsed.digest_ok,
        proposal=meta.get("proposal", False) is True,
        links=tuple(x for x in links if isinstance(x, str)) if isinstance(links, list) else (),
        meta=meta,
    )


def _bad_field(path: Path, key: str, value: Any, wanted: str) -> DamagedFile:
    shown = "missing" if value is None else quote(value)
    return DamagedFile(
        f"{path}: front matter field {key} is {shown}; it should be {wanted}",
        hint="run `atlas check` on the record to see what is wrong; versions are never "
        "edited, so the fix is a new version",
    )


def _whole(meta: dict[str, Any], key: str, path: Path, *, lowest: int,
           default: int | None = None) -> int:
    """A front matter number: an int (or a string of digits) of at least ``lowest``."""
    value = meta.get(key, default)
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 20:
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < lowest:
        raise _bad_field(path, key, value, f"a whole number of at least {lowest}")
    return value


def _text(meta: dict[str, Any], key: str, path: Path, default: str | None = None) -> str:
    value = meta.get(key, default)
    if not isinstance(value, str):
        raise _bad_field(path, key, value, "text")
    return value


class Unreadable(NamedTuple):
    """A version listed in its stream's folder that could not be read as one."""

    version: int
    path: Path
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "path": str(self.path), "error": self.error}


def read_each(stream: Stream, unreadable: list[Unreadable] | None = None) -> list[Version]:
    """Every version of ``stream``, oldest first. With ``unreadable``, a version that
    cannot be read (damaged front matter, gone since the listing) goes there instead of
    stopping the rest: one damaged file never hides the others."""
    out = []
    for version in stream.versions():
        try:
            out.append(stream.read(version))
        except BadInput as exc:
            if unreadable is None:
                raise
            unreadable.append(Unreadable(version, stream.path(version), exc.message))
    return out
