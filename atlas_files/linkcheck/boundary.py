"""What a check may read: the files of the repository it checks, and nothing else.

A checked repository is someone else's writing (a teammate's clone, a pull request), and
what it names must not reach past it: a link or snippet to ``/etc/...``, ``INHERIT:`` of
a file in the user's home, a page that is a symbolic link to one, a ``docs_dir`` of
``/``. Whatever lies outside is not read, and so no finding can quote a byte of it.

The repository is the git work tree holding the file (the nearest folder at or above it
with a ``.git``, found without running git); outside one, the folder that was checked:
the PATH given (or the current folder), or the folder of the ``mkdocs.yml`` that governs
it. A path is judged by where it really leads (symbolic links resolved), and a file
already open by the file it is (``/proc/self/fd``), so a link swapped in between the two
cannot lead a read out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from atlas_files.storage import worktree

OUTSIDE = ("it lies outside the repository checked (by its path, or through a symbolic "
           "link), and atlas check reads only the repository's own files")
_FD_LINKS = "/proc/self/fd"


def repository(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` (a folder) that holds ``.git``."""
    found = worktree.repository_root(start)
    return None if found is None else Path(found)


def root_of(path: Path) -> Path:
    """The folder a check of ``path`` (a file or folder) may read: its git work tree, or
    the folder itself (a file's own folder)."""
    folder = path if os.path.isdir(path) else path.parent
    return repository(folder) or folder


class Boundary:
    """The folders a check reads from; more are added as sites are met."""

    def __init__(self, roots: Iterable[Path] = ()) -> None:
        self._roots: list[str] = []
        for root in roots:
            self.add(root)

    def add(self, root: Path) -> None:
        real = os.path.realpath(root)
        if real not in self._roots:
            self._roots.append(real)

    @property
    def roots(self) -> tuple[str, ...]:
        return tuple(self._roots)

    def _within(self, real: str) -> bool:
        return any(real == r or real.startswith(r if r.endswith(os.sep) else r + os.sep)
                   for r in self._roots)

    def holds(self, path: Path | str) -> bool:
        """Whether ``path`` leads to a place inside (symbolic links followed)."""
        return self._within(os.path.realpath(path))

    def holds_open(self, fd: int, path: Path | str) -> bool:
        """Whether the open file ``fd`` (opened as ``path``) lies inside."""
        try:
            real = os.readlink(f"{_FD_LINKS}/{fd}")
        except OSError:
            real = os.path.realpath(path)
        return self._within(real)
