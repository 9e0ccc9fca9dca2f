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
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import BadInput, DamagedFile, NotFound, VersionConflict
from atlas_files.facts.names import quote
from atlas_files.facts.text import clean_text, decode_body
from atlas_files.storage import frontmatter, fsio

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
        # Joined as a child of the folder: pathlib parses only the new part.
        return self.folder / layout.version_filename(self.name, version)

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
        if len(names) > _OWN_PATTERN_FROM:
            # A large folder (a topic of thousands of versions, written to by `put`): a
            # pattern of this stream's own name matches without the generic one's
            # backtracking and Python test per name, three times as fast.
            return list(map(int, layout.own_version_lines(self.name).findall(joined)))
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
        """The highest version, for a reader of this stream alone, touching no other
        stream's folder: a listing of a small folder; for a large one, its hint (one read
        of its folder's hints, parsing only its own entry), believed while the folder did
        not change."""
        try:
            st = os.stat(self.folder, follow_symlinks=False)
        except OSError:
            st = None
        if st is None or not stat.S_ISDIR(st.st_mode) or st.st_size <= SMALL_FOLDER:
            return self.latest()
        return latest_checked(self, LatestHints.entry_of(self), st)[0]

    def read(self, version: int, *, head_only: bool = False) -> Version:
        """Version ``version``; ``head_only`` skips decoding and digesting the body (the
        Version then has an empty body and no digest verdict), for listings."""
        return self.read_with_id(version, head_only=head_only)[0]

    def read_with_id(self, version: int, *,
                     head_only: bool = False) -> tuple[Version, str]:
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


_OWN_PATTERN_FROM = 256


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


def _file_id(st: os.stat_result) -> str:
    """What tells that a file is still the one read: inode, size, mtime and ctime in ns
    (an edit in place whose mtime is put back by hand still moves the ctime)."""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def folder_stamp(st: os.stat_result) -> str:
    """What tells that a folder's entries are as they were: its identity (device, inode)
    and times (mtime, ctime in ns). Adding, removing or renaming a file in it moves both
    times; ctime cannot be set by hand (``touch -d`` moves it too)."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}"


# A folder's stamp is kept only once the folder has stood still this long: a change made
# within the same tick of the file system's clock as the listing (a few ms on older
# kernels, a second or two on some network and FAT file systems) would leave its times as
# they were, and the stamp would vouch for a listing that missed it. Past this, any change
# carries a later time. It also covers a file server's clock running this much behind.
SETTLED_NS = 3_000_000_000
# A folder whose own size (the bytes of its entries, as the file system counts them) is
# at most this is listed by a reader of that one stream: a listing of a few hundred names
# costs less than reading the hints of every stream beside it.
SMALL_FOLDER = 64 * 1024
# A hints file of many entries is rewritten once at least 1/SAVE_SHARE of them changed
# (LatestHints.save).
SAVE_SHARE = 64


class Head(NamedTuple):
    """A version's front matter without its body: what listings show of it."""

    name: str
    version: int
    based_on: int
    author: str
    written_at: str
    summary: str
    proposal: bool
    links: tuple[str, ...]


# One stream's hint as the hints file holds it: [latest version, the folder's stamp when a
# listing found it ("" while the folder had not stood still), the latest version file's
# identity ("" if its front matter is not kept), then that front matter: based_on, author,
# written_at, summary, proposal, links]. A flat list, so that loading ten thousand of them
# costs little more than the JSON parse: fields are checked where they are used.
_Entry = list[Any]
# A stream's latest version and that version's front matter, or what reading each raised.
Known = tuple[int | BaseException, Head | BaseException | None]
_ENTRY_LEN = 9
_ENTRY_WINDOW = 64 * 1024


class LatestHints:
    """The latest-version hints of one folder of streams: the one home of "which version
    of each stream is the latest" for readers, read once, saved if they moved.

    Readers that visit every topic (`ls`, `feed`, `begin`) cannot afford to list every
    topic's folder, nor to read every latest version. One small file names each stream's
    latest version as a listing of its folder found it, with the folder's stamp (identity
    and change times, see ``folder_stamp``) at that listing, and that version's front
    matter with the identity of its file (inode, size, mtime). A reader believes the
    number only while one stat of the folder gives the very same stamp, so a version added,
    removed or renamed since (by atlas, by hand, by `atlas sync`) makes it list that folder
    again, and the latest is always the highest version present; it believes the front
    matter only while the file is the very one it was read from. A stale, missing or
    damaged hint costs a listing of one folder, never an answer; so does a forged one,
    unless it names the folder's very stamp, which takes someone who can write the
    record's versions anyway. Readers, not writers,
    keep it current, so writes pay nothing; where a reader cannot write (a read-only copy)
    it simply stays stale. Two readers saving at once can lose each other's update: only
    speed depends on it. Writers never read it: the stop sign lists the folder.

    A reader of one stream (``Stream.latest_for_reading``) lists a small folder, reads
    only that stream's entry of a large one (``entry_of``), and saves nothing, so its cost
    does not grow with the other streams'.
    """

    def __init__(self, folder: Path, within: fsio.OpenRoot | None = None,
                 stream_of: Callable[[str], Stream] | None = None,
                 known: Mapping[str, Known] | None = None) -> None:
        self.path = folder / layout.LATEST_HINTS
        self.within = within
        # Each stream's answers as read by the command server while the kernel vouches
        # that nothing changed since (protocol/artifacts.snapshot): taken as they are.
        self.known = known
        # Each stream's folder as a string: a reader of every topic stats ten thousand of
        # them, and a pathlib join costs more than the stat. A Stream is made only for a
        # stream whose hint missed (``stream_of``, given its name).
        self._base = f"{folder}{os.sep}"
        self.stream: Callable[[str], Stream] = \
            stream_of or (lambda name: Stream(folder / name, name, name))
        self._changed: set[str] = set()  # the streams whose entries moved
        self._entries: dict[str, _Entry] = {}
        if known is not None:
            self._loaded = True  # nothing to save: what is read here is not read anew
            return
        try:
            data = json.loads(fsio.read_nofollow(self.path, HINTS_LIMIT))
        except (OSError, ValueError, RecursionError):  # a damaged hint is no hint
            self._loaded = False
            return
        self._loaded = isinstance(data, dict)
        if isinstance(data, dict):
            self._entries = {name: value for name, value in data.items() if _usable(value)}

    @staticmethod
    def entry_of(stream: Stream) -> _Entry | None:
        """``stream``'s hint alone, found in the bytes of its folder's hints file without
        parsing the rest (saved files name each stream once, as ``"name":[``)."""
        try:
            data = fsio.read_nofollow(stream.folder.parent / layout.LATEST_HINTS,
                                      HINTS_LIMIT)
        except OSError:
            return None
        key = json.dumps(stream.name).encode() + b":["
        at = data.find(key)
        if at < 1 or data[at - 1] not in b"{,":
            return None
        start = at + len(key) - 1
        # Decoded from a window first: an entry is a few hundred bytes, the file megabytes.
        for end in (start + _ENTRY_WINDOW, len(data)):
            try:
                value, _ = _DECODER.raw_decode(data[start:end].decode())
            except (ValueError, RecursionError):
                continue
            return value if _usable(value) else None
        return None

    def latest(self, name: str, stream: Stream | None = None) -> int:
        """The highest version of stream ``name`` (``stream``, or the one ``stream_of``
        makes) present: the hint while the folder's stamp is the one it was found at (one
        stat), else from a listing (and kept)."""
        known = self.known.get(name) if self.known is not None else None
        if known is not None:
            if isinstance(known[0], BaseException):
                raise known[0]
            return known[0]
        kept = self._entries.get(name)
        folder = self._base + name
        try:
            st = os.stat(folder, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        except NotADirectoryError:
            raise DamagedFile(f"{folder} should be a folder") from None
        if kept is not None and st is not None and kept[1] == folder_stamp(st) \
                and stat.S_ISDIR(st.st_mode):
            return int(kept[0])  # the common case: one stat, one compare
        latest, stamp = latest_checked(stream or self.stream(name), kept, st,
                                       missing=st is None)
        if kept is None:
            if latest > 0 or stamp:
                self._entries[name] = [latest, stamp, "", 0, "", "", "", False, []]
                self._changed.add(name)
        elif kept[0] != latest:
            self._entries[name] = [latest, stamp, "", 0, "", "", "", False, []]
            self._changed.add(name)
        elif kept[1] != stamp:
            kept[1] = stamp
            self._changed.add(name)
        return latest

    def head(self, name: str, version: int, stream: Stream | None = None) -> Head:
        """``version``'s front matter, from the hints while its file is the one they were
        taken from (one stat), else read and kept."""
        known = self.known.get(name) if self.known is not None else None
        if known is not None and known[0] == version and known[1] is not None:
            if isinstance(known[1], BaseException):
                raise known[1]
            return known[1]
        kept = self._entries.get(name)
        if kept is not None and kept[0] == version and kept[2]:
            try:
                st = os.stat(f"{self._base}{name}{os.sep}"
                             f"{layout.version_filename(name, version)}",
                             follow_symlinks=False)
            except OSError:
                st = None
            if st is not None and _file_id(st) == kept[2] and stat.S_ISREG(st.st_mode):
                head = _head_of(name, kept)
                if head is not None:
                    return head
        doc, file_id = (stream or self.stream(name)).read_with_id(version,
                                                                  head_only=True)
        if kept is not None and kept[0] == version:
            kept[2:] = [file_id, doc.based_on, doc.author, doc.written_at, doc.summary,
                        doc.proposal, list(doc.links)]
            self._changed.add(name)
        return Head(name, version, doc.based_on, doc.author, doc.written_at,
                    doc.summary, doc.proposal, doc.links)

    def save(self) -> None:
        """Write the hints back if they moved enough to pay for it. Rewriting the file
        costs time in proportion to all its entries, a stale entry only its own folder's
        listing (and its latest version's read) at each reader: so a few changed entries
        of a large file wait until 1/SAVE_SHARE of them changed. A missing or damaged file
        is written at once, as is any change to a small one."""
        if self._changed and (not self._loaded
                              or len(self._changed) * SAVE_SHARE >= len(self._entries)):
            # Compact, each stream's entry a list holding no object: `"name":[` is then
            # found only where it names a stream (entry_of). Unsorted: the listings visit
            # streams in order already, and sorting ten thousand keys costs 3x the dump.
            data = json.dumps(self._entries, ensure_ascii=False,
                              separators=(",", ":")).encode() + b"\n"
            # A hint that cannot be saved (a read-only copy, a record moved meanwhile) is
            # no hint; the read it served stands.
            with contextlib.suppress(OSError, BadInput):
                fsio.replace_atomic(self.path, data, durable=False, within=self.within)
            self._changed.clear()
            self._loaded = True


_DECODER = json.JSONDecoder()


def latest_checked(stream: Stream, entry: _Entry | None,
                   st: os.stat_result | None = None, *,
                   missing: bool = False) -> tuple[int, str]:
    """The highest version of ``stream`` present, with the stamp of its folder to keep
    beside it ("" while the folder has not stood still for SETTLED_NS): ``entry``'s
    version if its stamp is the folder's now (``st``, its stat taken just before, or one
    taken here; ``missing``: that stat found no folder), else from a listing of the
    folder."""
    if missing:
        return 0, ""
    if st is None:
        try:
            st = os.stat(stream.folder, follow_symlinks=False)
        except FileNotFoundError:
            return 0, ""
        except NotADirectoryError:
            raise DamagedFile(f"{stream.folder} should be a folder") from None
    stamp = folder_stamp(st) if stat.S_ISDIR(st.st_mode) else ""
    if entry is not None and stamp and entry[1] == stamp:
        return int(entry[0]), stamp
    # Stamped before the listing: a change during or after it moves the folder's times.
    latest = stream.latest()
    settled = bool(stamp) and st.st_ctime_ns <= time.time_ns() - SETTLED_NS
    return latest, stamp if settled else ""


def _usable(value: Any) -> bool:
    """Whether ``value`` has the shape of a hint; its fields are checked where used, and
    anything else is no hint (a damaged or forged file costs time, never an answer)."""
    return (type(value) is list and len(value) == _ENTRY_LEN and type(value[0]) is int
            and value[0] >= 0 and type(value[1]) is str and type(value[2]) is str)


def _head_of(name: str, entry: _Entry) -> Head | None:
    based_on, author, written_at, summary, proposal, links = entry[3:]
    if (type(based_on) is int and type(author) is str and type(written_at) is str
            and type(summary) is str and type(proposal) is bool and type(links) is list
            and (not links or all(type(x) is str for x in links))):
        return Head(name, entry[0], based_on, author, written_at, summary, proposal,
                    tuple(links))
    return None


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
