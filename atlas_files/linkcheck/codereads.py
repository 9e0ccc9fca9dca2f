"""What the site's accepted code read while it ran, so that what it gave may be kept.

A hook or a macros module (sitecode.py) is the repository's code: what it gives for a
page depends on the page, on the code, and on whatever else it reads (a data file, a
template, the listing of docs_dir, an environment variable). A kept answer holds only
while all of that is as it was, so the child that runs the code notes it as it goes:

- every file it opens for reading and every folder it lists, through an audit hook
  (``sys.addaudithook``: Python raises ``open``, ``os.listdir`` and ``os.scandir`` for
  each, whoever opens; the import system's own listings aside), with what the file or
  listing was once the answer was made (its SHA-256; None: missing). Only the
  repository's own files count; installed
  packages and the interpreter are in the cache's setup key instead, and compiled
  ``__pycache__`` files follow their sources, which are accepted by digest;
- every environment variable it reads, with its value (None: unset);
- anything it did whose result no file records (it started a program, opened a
  connection, or read the whole environment), or a read of what the check may not read
  whole (a link out of the repository, a file past 16 MiB): then the answer is not kept
  at all.

``holds`` reads a kept list back in the parent and says whether every file, folder and
variable is still what it was. Nothing here trusts the child more than the code it runs:
the code was accepted, and a list it forged could only cost its own user a stale answer.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from atlas_files.linkcheck.boundary import Boundary
from atlas_files.linkcheck.filesources import DiskSource

_MAX_READ = 16 << 20  # bytes of a file digested
UNKNOWN = "unknown"  # a file there that the check may not read whole: nothing to keep by
_LISTS = ("os.listdir", "os.scandir")
# Events whose result no file of the repository records.
_OUTSIDE = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
            "os.fork", "socket.connect", "socket.getaddrinfo", "urllib.Request")
Reads = list[list[Any]]  # [kind, name, what it was]: ("file"|"dir"|"env", ..., str|None)


class _Watched(os._Environ):  # type: ignore[type-arg]
    """os.environ, noting each variable read (see ``Recorder``)."""

    def __getitem__(self, key: str) -> str:
        try:
            value: str = super().__getitem__(key)
        except KeyError:
            _RECORDER.env(key, None)
            raise
        _RECORDER.env(key, value)
        return value

    def __iter__(self) -> Iterator[str]:
        _RECORDER.outside = True
        return super().__iter__()


class Recorder:
    """What the code run in this child read since ``begin`` (see the module's
    docstring): started in the child, before the code is loaded."""

    def __init__(self) -> None:
        self.root = ""
        self.within = Boundary(())
        self.files: set[str] = set()
        self.dirs: set[str] = set()
        self.vars: dict[str, str | None] = {}
        self.outside = False
        self._on = False

    def start(self, repository: Path, readable: Iterable[str]) -> None:  # pragma: no cover
        self.root = os.path.realpath(repository) + os.sep
        self.within = Boundary(map(Path, readable))
        sys.addaudithook(self._event)
        os.environ.__class__ = _Watched
        self._on = True

    def _event(self, event: str, args: tuple[Any, ...]) -> None:  # pragma: no cover
        if not self._on:
            return
        if event == "open":
            path, _, flags = (*args, 0, 0)[:3]
            if isinstance(flags, int) and flags & os.O_ACCMODE == os.O_WRONLY:
                return  # written, not read: what the code gives does not depend on it
            self._note(path, self.files)
        elif event in _LISTS:
            # Not the import system's own listings: a module it could newly find in the
            # repository is one the acceptance does not cover yet (sitecode.py).
            if "importlib" not in sys._getframe(1).f_code.co_filename:
                self._note(args[0] if args else ".", self.dirs)
        elif event.startswith(_OUTSIDE):
            self.outside = True

    def _note(self, path: Any, into: set[str]) -> None:  # pragma: no cover - the child
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        elif path is None:
            path = "."
        if not isinstance(path, str | os.PathLike):
            return  # a descriptor: what it is was noted when it was opened
        self._on = False  # abspath and realpath raise no event, but hold nothing here
        try:
            full = os.path.abspath(path)
            if (full + os.sep).startswith(self.root) and "__pycache__" not in full:
                into.add(full)
        finally:
            self._on = True

    def env(self, key: str, value: str | None) -> None:
        if self._on:
            self.vars.setdefault(key, value)

    def mark(self) -> tuple[set[str], set[str], dict[str, str | None], bool]:
        """What was read so far (to ``since`` a page's reads from)."""
        return set(self.files), set(self.dirs), dict(self.vars), self.outside

    def since(self, setup: tuple[set[str], set[str], dict[str, str | None], bool],
              ) -> Reads | None:  # pragma: no cover - the child
        """What the set-up (``setup``, a ``mark``) and everything since read, as kept;
        None if any of it is nothing a file records. The page's reads are then
        forgotten, the set-up's kept for the next page."""
        files, dirs, env, outside = setup
        try:
            if self.outside:
                return None
            self._on = False
            read = [["file", p, file_digest(p, self.within)] for p in sorted(self.files)]
            if any(digest == UNKNOWN for _, _, digest in read):
                return None
            return [*read, *(["dir", p, listing_digest(p)] for p in sorted(self.dirs)),
                    *(["env", k, v] for k, v in sorted(self.vars.items()))]
        finally:
            self.files, self.dirs, self.vars, self.outside = set(files), set(dirs), \
                dict(env), outside
            self._on = True


_RECORDER = Recorder()


def recorder() -> Recorder:
    """This process's recorder (started only in a child that runs accepted code)."""
    return _RECORDER


def file_digest(path: str, within: Boundary) -> str | None:
    """The SHA-256 of a regular file of the repository; None where nothing is there;
    UNKNOWN for what the check may not read whole (a folder, a link out of the
    repository, a file past ``_MAX_READ``): an answer that read it is not kept."""
    try:
        data, size = DiskSource(within=within).read_limited(Path(path), _MAX_READ + 1)
    except OSError:
        return UNKNOWN if os.path.lexists(path) else None
    return hashlib.sha256(data).hexdigest() if size <= _MAX_READ else UNKNOWN


def listing_digest(path: str) -> str | None:
    """The SHA-256 of a folder's sorted names (None: no folder there)."""
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return None
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogatepass")).hexdigest()


class Checker:
    """Whether kept reads still hold, each file, folder and variable looked at once a
    run (a check asks of many pages that read the same files)."""

    def __init__(self, within: Boundary) -> None:
        self.within = within
        self._now: dict[tuple[str, str], str | None] = {}

    def holds(self, reads: Any) -> bool:
        """Whether ``reads`` (as ``Recorder.since`` kept them) are all as they were.
        TypeError or ValueError for a list that is not one."""
        if not isinstance(reads, list):
            raise TypeError("reads")
        for kind, name, was in reads:
            if not isinstance(name, str) or not isinstance(was, str | None):
                raise TypeError("reads")
            if self._current(kind, name) != was:
                return False
        return True

    def _current(self, kind: str, name: str) -> str | None:
        asked = (kind, name)
        if asked not in self._now:
            if kind == "file":
                self._now[asked] = file_digest(name, self.within)
            elif kind == "dir":
                self._now[asked] = listing_digest(name)
            elif kind == "env":
                self._now[asked] = os.environ.get(name)
            else:
                raise ValueError(kind)
        return self._now[asked]
