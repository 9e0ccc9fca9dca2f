"""The command server reads ahead the folders its commands read, and has the kernel watch
them, so a worker takes what was read without reading it again (storage/watched.py says
when a worker may).

A worker that read a folder the slow way tells the server so as it exits (one line on a
pipe, as preload.py's workers tell their imports). While idle, the server asks the kernel
to watch that folder (inotify), and the folders within it that the reading depends on
(each topic's, for the artifacts), then reads it through the reader's own code
(``READERS``), and keeps what it read; the next spare worker is forked with it. Every
event on the queue is drained before a worker is forked or handed a command: it drops
what was kept of its folder, and notes which of the watched folders changed, so that the
server reads again, while idle, only what changed (a topic's folder, not ten thousand). A
queue that overflowed drops everything, read again whole.

Only folders on a local file system are watched (``LOCAL``): a change made to a shared
volume by another machine never reaches this kernel's queue, so nothing read from one is
kept. Nor is a reading that depends on a file with another name elsewhere (a hard link):
written through that name, the file changes with no event for its folder. Writes through
a memory mapping raise no event either; atlas never writes a record's files that way. At
most ``MAX_KEPT`` readings and ``MAX_WATCHES`` watched folders are kept; the reading not
asked for longest goes first.

A reading seldom keeps a command waiting: a whole queue of ten thousand tasks takes the
server a fifth of a second to read, longer than the command would take reading it itself.
While the server reads, the readers' checkpoints (storage/watched.py) look every few
milliseconds for a command waiting (``stop_for``); if one waits, the reading stops there
(``watched.Stopped``), the command is handed over at once (its worker reads the slow way),
and the reading starts again the next time the server is idle. A reading stopped
``PATIENCE`` times in a row is let finish the next time, so that commands coming just
faster than it reads still get a copy, once; a reading of a few changed folders (``FEW``)
is never stopped: it takes less than the command would.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from inotify_simple import INotify, flags

from atlas_files.facts import timeutil
from atlas_files.facts.errors import AtlasError
from atlas_files.facts.names import is_name
from atlas_files.fast import tasks as task_lines
from atlas_files.protocol import artifacts, tasks
from atlas_files.server import preload
from atlas_files.storage import watched
from atlas_files.storage.documents import Head
from atlas_files.storage.record import Record

MAX_KEPT = 32
FEW = 16  # changed folders of a kept copy read again before the next command starts
STRIKES = 3  # readings in a row found unkeepable before one is never tried again
MAX_WATCHES = 100_000
PATIENCE = 2  # readings of one copy stopped in a row before the next is let finish
_MAX_LINE = 4000  # shorter than PIPE_BUF: a told line is never interleaved with another
# Everything that changes a folder's names or a file's bytes or attributes in it, and the
# folder itself going away.
EVENTS = (flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO | flags.MODIFY
          | flags.CLOSE_WRITE | flags.ATTRIB | flags.DELETE_SELF | flags.MOVE_SELF)
# File systems whose every change passes through this machine's kernel, so its queue
# reports them all. Network and FUSE volumes (nfs, cifs, fuse.*, 9p, virtiofs, ceph) are
# not: another machine writes to them unseen.
LOCAL = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "exfat", "vfat",
                   "msdos", "ntfs3", "jfs", "zfs", "bcachefs", "nilfs2", "hfsplus",
                   "reiserfs", "overlay"})

Values = dict[str, Any]


class Reading(NamedTuple):
    """How one kind of reading is kept: ``folder``, the folder it lists (what is kept is
    kept under its real path); ``read(old, changed)``, the reading now, given the copy
    kept before and the watched folders that changed since (None: read it whole);
    ``members()``, the folders within that it also depends on, listed (each is watched
    before it is read); ``unread(name)``, whether an entry of ``folder`` by that name is
    one the reading never looks at (so its changes change nothing read)."""

    folder: Path
    read: Callable[[Values | None, set[str] | None], Values]
    members: Callable[[], list[str]] = list
    unread: Callable[[str], bool] = lambda name: False


def _tasks(root: str, project: str) -> Reading:
    record = Record(root)

    def read(old: Values | None, changed: set[str] | None) -> Values:
        try:
            values = tasks.snapshot(record, project)
        finally:
            record.opened.close()
        if _linked_elsewhere(values["folder"]):
            # Written through its other name, a task file changes with no event here.
            raise watched.Unkeepable("a task file has another name elsewhere")
        task_lines.describe_ahead(values["folder"], [
            st for board in values["boards"].values() for st in board.ahead.states])
        return values

    return Reading(tasks.folder(record, project), read)


def _artifacts(root: str, project: str) -> Reading:
    record = Record(root)

    def read(old: Values | None, changed: set[str] | None) -> Values:
        try:
            values = artifacts.snapshot(record, project, old, changed)
        finally:
            record.opened.close()
        heads = values["heads"]
        for name in heads if old is None or changed is None else \
                {os.path.basename(c) for c in changed} & heads.keys():
            head = heads[name][1]
            if isinstance(head, Head):  # each listing shows its age: parsed once here
                with contextlib.suppress(ValueError, TypeError, OverflowError):
                    timeutil.parsed(head.written_at)
        return values

    def members() -> list[str]:
        return artifacts.topic_folders(record, project)

    def unread(name: str) -> bool:  # the latest-version hints, a writer's temporary file
        return name.startswith(".") or not is_name(name)

    return Reading(artifacts.artifacts_folder(record, project), read, members, unread)


# What a worker can ask to be kept, by the kind ``watched.want`` names.
READERS: dict[str, Callable[..., Reading]] = {"tasks": _tasks, "artifacts": _artifacts}

_writer: int | None = None  # set in the server, inherited by the workers it forks


def tell() -> None:
    """In a worker that is about to exit: tell the server what it wanted kept. Never
    blocks, never raises."""
    if _writer is None:
        return
    try:
        for what in watched.wanted():
            line = "\t".join(what)
            if "\n" not in line and len(line) < _MAX_LINE:
                os.write(_writer, (line + "\n").encode("utf-8", "surrogateescape"))
    except BaseException:  # noqa: BLE001, S110 - the worker is exiting: nothing to say it to
        pass


def start() -> Watching | None:
    """The server's watching, or None where the kernel gives it no queue (then nothing is
    kept, and commands read as they would without a server)."""
    try:
        return Watching()
    except OSError:
        return None


def local(path: str) -> bool:
    """Whether ``path`` lies on a file system whose changes this kernel's queue reports."""
    try:
        dev = os.stat(path).st_dev
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return False
    wanted = f"{os.major(dev)}:{os.minor(dev)}"
    kinds = {line.split(" - ", 1)[1].split()[0] for line in lines
             if " - " in line and line.split()[2:3] == [wanted]}
    return len(kinds) == 1 and kinds <= LOCAL


def _linked_elsewhere(where: str) -> bool:
    """Whether a file in folder ``where`` has another name (a hard link)."""
    with os.scandir(where) as found:
        return any(entry.stat(follow_symlinks=False).st_nlink > 1 for entry in found
                   if not entry.is_dir(follow_symlinks=False))


class _Kept:
    """One reading the server keeps: what it asked, how it reads, its folders' watches,
    the copy read last, and the folders changed since (None: everything)."""

    def __init__(self, what: tuple[str, ...], reading: Reading, key: str) -> None:
        self.what, self.reading, self.key = what, reading, key
        self.primary = str(reading.folder)
        self.watches: dict[int, str] = {}  # watch -> the folder, as the reading names it
        self.folders: set[str] = set()
        self.values: Values | None = None
        self.changed: set[str] | None = None
        self.stops = 0  # readings of it stopped for a command since it was last read


class Watching:
    """The server's side: the kernel's queue, the readings kept, what workers asked for."""

    def __init__(self) -> None:
        global _writer
        self.queue = INotify(nonblocking=True)
        self.drained = mmap.mmap(-1, 8)
        self.count = 0
        self.reads = 0  # readings made: the first of each, and each after a change
        self.stopped = 0  # readings stopped for a command
        self.kept: dict[str, _Kept] = {}  # real path -> reading, least recently asked first
        self.by_watch: dict[int, set[str]] = {}  # watch -> the keys of the readings on it
        self.since_spare: set[str] | None = set()
        self.refused: set[tuple[str, ...]] = set()
        self.strikes: dict[tuple[str, ...], int] = {}
        self._reader, writer = os.pipe()
        os.set_blocking(self._reader, False)
        os.set_blocking(writer, False)
        _writer = writer
        self._asked: dict[tuple[str, ...], None] = {}
        self._waits: Callable[[], bool] | None = None
        watched.serve(self.queue.fileno(), self.drained)

    def stop_for(self, waits: Callable[[], bool]) -> None:
        """Stop any reading ahead as soon as ``waits()`` says a command waits."""
        self._waits = waits

    @contextlib.contextmanager
    def _stoppable(self) -> Iterator[None]:
        watched.stop_reading_when(self._waits)
        try:
            yield
        finally:
            watched.stop_reading_when(None)

    def drain(self) -> None:
        """Take every event off the queue, dropping what was kept of its folders."""
        events = self.queue.read(timeout=0)
        if not events:
            return
        for event in events:
            if event.mask & flags.Q_OVERFLOW:
                for kept in self.kept.values():
                    self._stale(kept, None)
                continue
            for key in list(self.by_watch.get(event.wd, ())):
                kept = self.kept[key]
                folder = kept.watches.get(event.wd)
                if folder is None:
                    continue
                if not (folder == kept.primary and event.name
                        and kept.reading.unread(event.name)):
                    self._stale(kept, folder)
            if event.mask & flags.IGNORED:  # the folder went away, or its watch was removed
                for key in self.by_watch.pop(event.wd, ()):
                    gone = self.kept[key].watches.pop(event.wd, None)
                    self.kept[key].folders.discard(gone or "")
        self.count += len(events)
        self.drained[:8] = self.count.to_bytes(8, "little")

    def _stale(self, kept: _Kept, folder: str | None) -> None:
        watched.drop(kept.key)
        if self.since_spare is not None:
            self.since_spare.add(kept.key)
        if folder is None:
            kept.changed = None
        elif kept.changed is not None:
            kept.changed.add(folder)

    def spare_forked(self) -> None:
        """Call right after draining and forking a spare: it holds what is kept now."""
        self.since_spare = set()

    def hand_over(self, spare: bool) -> dict[str, Any]:
        """What a worker is told with its command: the folders changed since it was forked
        (a spare) or none (forked now, just after this drain), and the count drained."""
        self.drain()
        changed = ([] if not spare else None if self.since_spare is None
                   else sorted(self.since_spare))
        return {"changed": changed, "seq": self.count}

    def read_ahead(self, busy: Callable[[], bool]) -> bool:
        """Read again what changed of the readings kept, then make those workers asked
        for, one at a time until ``busy()``; whether any copy is new (the spare then
        lacks it)."""
        self._read_told()
        self.drain()
        news = False
        for kept in list(self.kept.values()):
            # What changed of a copy is read even with a command waiting, when it is a
            # few folders of many: that takes less than the command would reading it all.
            few = kept.changed is not None and kept.values is not None and \
                kept.primary not in kept.changed and len(kept.changed) <= FEW
            if not watched.holds(kept.key) and (few or not busy()):
                try:
                    news |= self._read(kept, stoppable=not few)
                except watched.Stopped:
                    self.stopped += 1
                    return news
        while self._asked and not busy():
            what = next(iter(self._asked))
            del self._asked[what]
            if what not in self.refused:
                try:
                    news |= self._keep(what)
                except watched.Stopped:
                    self.stopped += 1
                    return news
        return news

    def _keep(self, what: tuple[str, ...]) -> bool:
        try:
            kind, *args = what
            reading = READERS[kind](*args)
            key = os.path.realpath(reading.folder)
        except (AtlasError, OSError, ValueError, TypeError, KeyError):
            return False  # asked again by the next command that reads it the slow way
        if key in self.kept:
            self.kept[key] = self.kept.pop(key)  # asked again: last to go
            return False
        if not local(key):
            self.refused.add(what)
            return False
        kept = self.kept[key] = _Kept(what, reading, key)
        news = self._read(kept)
        while len(self.kept) > MAX_KEPT or \
                (len(self.by_watch) > MAX_WATCHES and len(self.kept) > 1):
            self._forget(next(iter(self.kept)))
        return news

    def _read(self, kept: _Kept, stoppable: bool = True) -> bool:
        """Read ``kept`` again, each folder watched before it is read; whether it could be
        kept. Stopped (``stoppable``: a command arrived) leaves it to be read again."""
        old, changed = kept.values, kept.changed
        if old is None:
            changed = None
        kept.values, kept.changed = None, set()
        try:
            before = os.stat(kept.key)
            self._watch(kept, kept.primary)
            if changed is None or kept.primary in changed:
                new = [m for m in kept.reading.members() if m not in kept.folders]
                for member in new:
                    self._watch(kept, member)
                if changed is not None:
                    changed |= set(new)
            stoppable = stoppable and kept.stops < PATIENCE
            with self._stoppable() if stoppable else contextlib.nullcontext():
                values = kept.reading.read(old if changed is not None else None, changed)
            self.reads += 1
            after = os.stat(kept.key)
            if (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino):
                raise FileNotFoundError(kept.key)  # replaced while it was read: read anew
        except watched.Unkeepable:
            # A file with a second name is also what atlas's own write leaves for an
            # instant (a new version is linked into place, then its temporary name
            # removed): refused for good only when found so again and again.
            self.strikes[kept.what] = self.strikes.get(kept.what, 0) + 1
            if self.strikes[kept.what] >= STRIKES:
                self.refused.add(kept.what)
            self._forget(kept.key)
            return False
        except OSError as exc:
            if exc.errno == errno.ENOSPC:  # the kernel's limit of watches: never retried
                self.refused.add(kept.what)
            self._forget(kept.key)
            return False
        except (AtlasError, ValueError, TypeError, KeyError):
            self._forget(kept.key)  # asked again by the next command that reads it
            return False
        except watched.Stopped:
            kept.values, kept.changed = old, changed  # what changed is read next time
            kept.stops += 1
            raise
        kept.values, kept.stops = values, 0
        self.strikes.pop(kept.what, None)
        watched.keep(kept.key, (after.st_dev, after.st_ino), values)
        return True

    def _watch(self, kept: _Kept, folder: str) -> None:
        watch = self.queue.add_watch(folder, EVENTS)
        kept.watches[watch] = folder
        kept.folders.add(folder)
        self.by_watch.setdefault(watch, set()).add(kept.key)

    def _forget(self, key: str) -> None:
        kept = self.kept.pop(key)
        watched.drop(key)
        if kept.values is not None and "boards" in kept.values:  # its queue's lines, too
            task_lines.describe_ahead(kept.values["folder"], [])
        for watch in kept.watches:
            keys = self.by_watch.get(watch, set())
            keys.discard(key)
            if not keys:
                self.by_watch.pop(watch, None)
                try:
                    self.queue.rm_watch(watch)
                except OSError:
                    pass

    def _read_told(self) -> None:
        for raw in preload.told(self._reader, "surrogateescape"):
            what = tuple(raw.split("\t"))
            if what and what[0] in READERS:
                self._asked[what] = None

    def status(self) -> dict[str, Any]:
        return {"kept": watched.held(), "read_ahead": self.reads,
                "read_ahead_stopped": self.stopped}
