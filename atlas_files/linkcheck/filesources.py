"""Where a check reads files from: the folder on disk, or git's index (what a commit holds).

A commit check must judge what will be committed, not what happens to lie on disk: an
untracked file would make a broken link look fine, and a hand edit left unstaged would
make a staged file look different from what is committed. ``IndexSource`` answers from
the index; it asks git only about folders and files the check actually touches.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from atlas_files.linkcheck.boundary import OUTSIDE, Boundary
from atlas_files.storage.gitcmd import Git, GitFailed


class Source(Protocol):
    def read(self, path: Path) -> bytes:
        """The file's bytes; FileNotFoundError if there is no such file."""

    def read_limited(self, path: Path, limit: int) -> tuple[bytes, int]:
        """At most ``limit`` bytes from the start of the file, and the file's whole size:
        a file too large to judge is measured without being loaded."""

    def listdir(self, folder: Path) -> list[str]:
        """Names of the files directly in ``folder`` (subfolders may be listed too);
        [] if it does not exist."""

    def is_file(self, path: Path) -> bool: ...

    def is_dir(self, path: Path) -> bool: ...


NOT_REGULAR = "it is not a regular file (a pipe, a socket or a device)"
MAX_PAGE = 16 << 20  # bytes: a larger Markdown file is not read (no page is that large)


def why_unreadable(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "it is a symbolic link, and the record never follows one (readers skip it)"
    if isinstance(exc, IsADirectoryError):
        return "it is a folder, where a file should be"
    if exc.errno == errno.ENAMETOOLONG:
        return "its name is too long"
    return str(exc.strerror or exc)


def read_page(source: Source, path: Path) -> bytes:
    """The bytes of a Markdown file to check: OSError (EFBIG) past MAX_PAGE, measured
    without loading it (a sparse file of gigabytes costs nothing to make)."""
    data, size = source.read_limited(path, MAX_PAGE)
    if size > MAX_PAGE:
        raise OSError(errno.EFBIG, f"it is larger than {MAX_PAGE >> 20} MiB, more than any "
                      "page a check reads", str(path))
    return data


class DiskSource:
    """Files on disk. ``nofollow``: refuse a symlink as the last part of a path, as the
    record's readers do (a record never follows a symlink out of itself). ``within``:
    refuse a file that lies outside those folders (boundary.py)."""

    def __init__(self, nofollow: bool = False, within: Boundary | None = None) -> None:
        self.nofollow = nofollow
        self.within = within

    def read(self, path: Path) -> bytes:
        return self.read_limited(path, sys.maxsize)[0]

    def read_limited(self, path: Path, limit: int) -> tuple[bytes, int]:
        fd = self._open(path)
        try:
            size = os.fstat(fd).st_size
            want = min(size, limit)  # the file as it was when opened: one read
            chunks: list[bytes] = []
            got = 0
            while got < want:
                chunk = os.read(fd, min(want - got, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            data = b"".join(chunks)
            if got < want:  # read to its end: that is its size, whatever fstat said
                return data, got
            return data, max(size, got)
        finally:
            os.close(fd)

    def _open(self, path: Path) -> int:
        """A descriptor of the regular file at ``path``. Opening never blocks (a named
        pipe in the record would hang a plain open until someone writes to it), and
        anything but a regular file is refused: a pipe never ends, a device may not."""
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
        if self.nofollow:
            flags |= getattr(os, "O_NOFOLLOW", 0)
        # Judged before opening (opening a device may do something) and after (the path
        # may have changed in between).
        if self.within is not None and not self.within.holds(path):
            raise PermissionError(errno.EACCES, OUTSIDE, str(path))
        fd = os.open(path, flags)
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            if self.within is None or self.within.holds_open(fd, path):
                return fd
            os.close(fd)
            raise PermissionError(errno.EACCES, OUTSIDE, str(path))
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        raise OSError(errno.EINVAL, NOT_REGULAR, str(path))

    def listdir(self, folder: Path) -> list[str]:
        # A folder that cannot be listed (no permission) is reported by the walk that
        # reaches it; to everything else it is an empty folder.
        try:
            return os.listdir(folder)
        except OSError:
            return []

    # os.path's tests answer False for any error (a name too long, no permission), where
    # pathlib's raise: a link to a megabyte-long path is a broken link, not a crash.
    def is_file(self, path: Path) -> bool:
        return os.path.isfile(path)

    def is_dir(self, path: Path) -> bool:
        return os.path.isdir(path)


class IndexSource:
    """Files as the commit being made will hold them, in the git repo at ``root``.

    ``staged`` maps each path the commit changes (repo-relative) to its staged object id,
    or to None where the commit removes it; every other path is as in HEAD. So a folder is
    listed from HEAD's tree plus the staged changes, and a file is read by object id or as
    ``HEAD:path``, all through one ``git cat-file --batch``: git reads its index once (for
    ``git diff --cached``), not once per question, which on a big repository is most of
    the cost of a one-file commit check.
    """

    def __init__(self, root: Path, staged: dict[str, str | None]) -> None:
        self.root = root
        self.staged = staged
        self._listdir = lru_cache(maxsize=4096)(self._listdir_uncached)
        self._added: dict[str, set[str]] = {}
        for rel, blob in staged.items():
            if blob is not None:
                folder, _, name = rel.rpartition("/")
                self._added.setdefault(folder, set()).add(name)
        self.git = Git(root, read_only=True)
        self._batch: subprocess.Popen[bytes] | None = None

    def rel(self, path: Path) -> str | None:
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return None
        return rel.as_posix()

    def read(self, path: Path) -> bytes:
        return self._read(path, None)[0]

    def read_limited(self, path: Path, limit: int) -> tuple[bytes, int]:
        return self._read(path, limit)

    def _read(self, path: Path, limit: int | None) -> tuple[bytes, int]:
        rel = self.rel(path)
        if rel is None or not self.is_file(path):
            raise FileNotFoundError(str(path))
        blob = self.staged.get(rel)
        found = self._batch_read(blob if blob is not None else f"HEAD:{rel}", limit)
        if found is None:
            raise FileNotFoundError(str(path))
        return found

    def _batch_read(self, spec: str, limit: int | None = None) -> tuple[bytes, int] | None:
        """(the object's bytes, its size); with ``limit``, only its first ``limit`` bytes
        are kept (the rest is read from git's pipe and dropped)."""
        if "\n" in spec:
            try:
                data = self.git.run("cat-file", "blob", spec).out
            except GitFailed:
                return None
            return data[:limit], len(data)
        if self._batch is None:
            self._batch = self.git.start("cat-file", "--batch", talk=True).proc
        proc = self._batch
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(os.fsencode(spec) + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                return None
            size = int(header[2])
            keep = size if limit is None else min(size, limit)
            data = proc.stdout.read(keep)
            left = size - keep + 1  # what is not kept, and the newline after each object
            while left > 0:
                dropped = proc.stdout.read(min(left, 1 << 20))
                if not dropped:
                    break
                left -= len(dropped)
            return data, size
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        if self._batch is not None:
            for pipe in (self._batch.stdin, self._batch.stdout):
                if pipe is not None:
                    pipe.close()
            self._batch.wait()
            self._batch = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - at interpreter exit anything may be gone
            pass

    def _head_tree(self, rel_folder: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(files, subfolders) directly in ``rel_folder`` in HEAD; empty if none."""
        spec = f"HEAD:{rel_folder}" if rel_folder else "HEAD^{tree}"
        try:
            out = self.git.run("ls-tree", "-z", spec).out
        except GitFailed:  # no such folder, or no commit yet
            return (), ()
        files: list[str] = []
        folders: list[str] = []
        for item in out.split(b"\0"):
            if not item:
                continue
            head, _, name = item.partition(b"\t")
            kind = head.split()[1] if len(head.split()) > 1 else b""
            (folders if kind == b"tree" else files).append(os.fsdecode(name))
        return tuple(files), tuple(folders)

    def _listdir_uncached(self, rel_folder: str) -> frozenset[str]:
        files, _ = self._head_tree(rel_folder)
        prefix = f"{rel_folder}/" if rel_folder else ""
        present = {f for f in files if self.staged.get(prefix + f, "") is not None}
        present.update(self._added.get(rel_folder, ()))
        return frozenset(present)

    def listdir(self, folder: Path) -> list[str]:
        """The files (not subfolders) the commit holds directly in ``folder``."""
        rel = self.rel(folder)
        if rel is None:
            return []
        return sorted(self._listdir("" if rel == "." else rel))

    def is_file(self, path: Path) -> bool:
        rel = self.rel(path.parent)
        if rel is None:
            return False
        return path.name in self._listdir("" if rel == "." else rel)

    def is_dir(self, path: Path) -> bool:
        rel = self.rel(path)
        if rel is None:
            return False
        if rel == ".":
            return True
        prefix = rel + "/"
        if any(r.startswith(prefix) for r, blob in self.staged.items() if blob is not None):
            return True
        parent, _, name = rel.rpartition("/")
        return name in self._head_tree(parent)[1]
