"""The command server reads ahead the folders its commands read, and has the kernel watch
them, so a worker takes what was read without reading it again (storage/watched.py says
when a worker may).

A worker that read a folder the slow way tells the server so as it exits (one line on a
pipe, as preload.py's workers tell their imports). While idle, the server asks the kernel
to watch that folder (inotify), then reads it through the reader's own code (``READERS``),
and keeps what it read; the next spare worker is forked with it. Every event on the queue
is drained before a worker is forked or handed a command: it drops what was kept of its
folder, and a queue that overflowed drops everything. What was dropped is read again only
when a command wants it again.

Only folders on a local file system are watched (``LOCAL``): a change made to a shared
volume by another machine never reaches this kernel's queue, so nothing read from one is
kept. Nor is a folder with a file that has another name elsewhere (a hard link): written
through that name, the file changes with no event for this folder. Writes through a memory
mapping raise no event either; atlas never writes a record's files that way. At most
``MAX_FOLDERS`` folders are kept; a folder not asked for again goes first.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inotify_simple import INotify, flags

from atlas_files.facts.errors import AtlasError
from atlas_files.fast import tasks as task_lines
from atlas_files.protocol import tasks
from atlas_files.server import preload
from atlas_files.storage import watched
from atlas_files.storage.record import Record

MAX_FOLDERS = 32
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


def _read_tasks(root: str, project: str) -> tuple[Path, Callable[[], dict[str, Any]]]:
    record = Record(root)

    def read() -> dict[str, Any]:
        try:
            values = tasks.snapshot(record, project)
        finally:
            record.opened.close()
        for board in values["boards"].values():
            task_lines.describe_ahead(board.unclaimed.values())
        return values

    return tasks.folder(record, project), read


# What a worker can ask to be kept, by the kind ``watched.want`` names: the folder to watch,
# and how to read it.
READERS: dict[str, Callable[..., tuple[Path, Callable[[], dict[str, Any]]]]] = {
    "tasks": _read_tasks,
}

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


class Watching:
    """The server's side: the kernel's queue, the folders kept, what workers asked for."""

    def __init__(self) -> None:
        global _writer
        self.queue = INotify(nonblocking=True)
        self.drained = mmap.mmap(-1, 8)
        self.count = 0
        self.reads = 0  # folders read ahead: each is a command that read one the slow way
        self.folders: dict[str, int] = {}  # real path -> watch, least recently asked first
        self.by_watch: dict[int, str] = {}
        self.since_spare: set[str] | None = set()
        self.refused: set[tuple[str, ...]] = set()
        self._reader, writer = os.pipe()
        os.set_blocking(self._reader, False)
        os.set_blocking(writer, False)
        _writer = writer
        self._asked: dict[tuple[str, ...], None] = {}
        watched.serve(self.queue.fileno(), self.drained)

    def drain(self) -> None:
        """Take every event off the queue, dropping what was kept of its folder."""
        events = self.queue.read(timeout=0)
        if not events:
            return
        for event in events:
            if event.mask & flags.Q_OVERFLOW:
                watched.drop()
                self.since_spare = None
                continue
            where = self.by_watch.get(event.wd)
            if where is None:
                continue
            watched.drop(where)
            if self.since_spare is not None:
                self.since_spare.add(where)
            if event.mask & flags.IGNORED:  # the folder went away, or its watch was removed
                del self.by_watch[event.wd]
                self.folders.pop(where, None)
        self.count += len(events)
        self.drained[:8] = self.count.to_bytes(8, "little")

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
        """Keep what workers asked for, one folder at a time until ``busy()``; whether
        anything new is kept (the spare then lacks it)."""
        self._read_told()
        news = False
        while self._asked and not busy():
            what = next(iter(self._asked))
            del self._asked[what]
            if what in self.refused:
                continue
            try:
                news |= self._keep(what)
            except (AtlasError, OSError, ValueError, TypeError, KeyError):
                pass  # asked again by the next command that reads it the slow way
        return news

    def _keep(self, what: tuple[str, ...]) -> bool:
        kind, *args = what
        where_path, read = READERS[kind](*args)
        where = os.path.realpath(where_path)
        if where in self.folders:
            self.folders[where] = self.folders.pop(where)  # asked again: last to go
            if where in watched.held():
                return False
        if not local(where):
            self.refused.add(what)
            return False
        before = os.stat(where)
        watch = self.queue.add_watch(where, EVENTS)
        self.folders[where] = watch
        self.by_watch[watch] = where
        self.drain()  # what came before the watch no longer matters: it is read now
        values = read()
        self.reads += 1
        after = os.stat(where)
        if (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino):
            return False
        if _linked_elsewhere(where):
            # Written through its other name, a file changes with no event for this folder.
            self.refused.add(what)
            return False
        watched.keep(where, (after.st_dev, after.st_ino), values)
        while len(self.folders) > MAX_FOLDERS:
            oldest = next(iter(self.folders))
            self._forget(oldest)
        return True

    def _forget(self, where: str) -> None:
        watch = self.folders.pop(where)
        self.by_watch.pop(watch, None)
        watched.drop(where)
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
        return {"kept": watched.held(), "read_ahead": self.reads}
