"""What the command server read from a folder, taken as read while the kernel vouches that
nothing in the folder changed since.

A served command runs in a worker forked from the command server (atlas_files/server/).
Between commands the server reads a folder that its commands read (a project's tasks, say)
after asking the kernel to watch it (inotify, server/watching.py): from then on a file
created, removed, renamed, written or touched in that folder is an event on the server's
queue. A worker inherits what the server read, and its readers take it as read only while

- the server, handing the command over, named no change to that folder since the worker
  was forked (``handed_over``),
- no event has come since for any watched folder: the queue is empty and the server has
  drained nothing more (a write by this very command, or by anyone on this machine), and
- the path still names the folder that was watched (its device and inode).

In every other case, and in every process that is not a served worker, ``kept`` says
None and readers read the folder as they always do: what is kept only ever saves time.
The server watches folders on local file systems only, whose every change passes through
this machine's kernel; what a volume shared with other machines would not report is never
kept (server/watching.py says which kinds count as local).

The server's own reading of a folder stops for a command that arrives meanwhile
(``Stopped``), at the points the readers mark with ``checkpoint``: between two steps, each
of which leaves the reader's caches and files whole. Anywhere but in that reading a
checkpoint does nothing.
"""

from __future__ import annotations

import fcntl
import os
import time
from typing import Any

# Not typing's TYPE_CHECKING: this module is imported by commands that import no typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import mmap
    from collections.abc import Callable


class Unkeepable(Exception):
    """What was read cannot be kept: a change to it could come without an event for its
    folders (a file with another name elsewhere, say)."""


class Stopped(BaseException):
    """The command server stops its reading here: a command waits. Not an Exception, so
    that no reader's own ``except`` takes it for a failure."""


LOOK_S = 0.002  # how often a reading the server may stop looks for a command waiting
_waits: Callable[[], bool] | None = None
_looked = 0.0


def checkpoint() -> None:
    """A point where the command server's reading may stop (``stop_reading_when``), if a
    command waits; it looks every LOOK_S at most. Anywhere else, nothing."""
    global _looked
    if _waits is None:
        return
    now = time.monotonic()
    if now - _looked >= LOOK_S:
        _looked = now
        if _waits():
            raise Stopped


# Plain classes, not NamedTuples: every command that reads a queue or the topics imports
# this module, and making a NamedTuple class costs more than the rest of it.
class Snapshot:
    __slots__ = ("identity", "values")

    def __init__(self, identity: tuple[int, int], values: dict[str, Any]) -> None:
        self.identity = identity  # the folder's device and inode, as watched
        self.values = values  # what its reader kept, by the reader's own names


class _Serving:
    __slots__ = ("queue", "drained")

    def __init__(self, queue: int, drained: mmap.mmap) -> None:
        self.queue = queue  # the server's inotify descriptor, inherited
        self.drained = drained  # how many events the server has drained, shared with it


_serving: _Serving | None = None
_kept: dict[str, Snapshot] = {}
_stale: frozenset[str] | None = frozenset()  # changed since the fork; None: all of them
_seq = -1  # the server's count of drained events when it handed this command over
_wanted: dict[tuple[str, ...], None] = {}


def kept(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """What the server read from ``folder``, if nothing in it can have changed since;
    else None."""
    if not _kept or _serving is None or _stale is None:
        return None
    where = os.path.realpath(folder)
    snap = _kept.get(where)
    if snap is None or where in _stale or not _quiet(_serving):
        return None
    try:
        st = os.stat(where)
    except OSError:
        return None
    return snap.values if (st.st_dev, st.st_ino) == snap.identity else None


def _quiet(serving: _Serving) -> bool:
    import termios  # noqa: PLC0415 - only in a served worker (the server imported it)

    if int.from_bytes(serving.drained[:8], "little") != _seq:
        return False
    pending = bytearray(4)
    try:
        fcntl.ioctl(serving.queue, termios.FIONREAD, pending)
    except OSError:
        return False
    return int.from_bytes(pending, "little") == 0


def want(*what: str) -> None:
    """In a served worker: ask the server to keep ``what`` (a reader's kind and its
    arguments) for later commands. Elsewhere nothing."""
    if _serving is not None and _seq >= 0:
        _wanted[what] = None


def wanted() -> list[tuple[str, ...]]:
    return list(_wanted)


# -- the server's side (server/watching.py) --------------------------------------------------


def serve(queue: int, drained: mmap.mmap) -> None:
    """In the server, before any worker is forked: workers may take what is kept."""
    global _serving
    _serving = _Serving(queue, drained)


def stop_reading_when(waits: Callable[[], bool] | None) -> None:
    """In the server, around a reading it may stop: each checkpoint from now on raises
    Stopped if ``waits()``; None: none does."""
    global _waits, _looked
    _waits, _looked = waits, 0.0


def keep(where: str, identity: tuple[int, int], values: dict[str, Any]) -> None:
    _kept[where] = Snapshot(identity, values)


def drop(where: str | None = None) -> None:
    """Forget folder ``where``, or every folder."""
    if where is None:
        _kept.clear()
    else:
        _kept.pop(where, None)


def held() -> list[str]:
    return sorted(_kept)


def holds(where: str) -> bool:
    """Whether a copy of folder ``where`` (a real path) is kept."""
    return where in _kept


def handed_over(changed: list[str] | None, seq: int) -> None:
    """In a worker, as the server hands it a command: the folders changed since it was
    forked (None: trust none) and the server's count of drained events then."""
    global _stale, _seq
    _stale = None if changed is None else frozenset(changed)
    _seq = seq
    _wanted.clear()
