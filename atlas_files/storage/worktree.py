"""Where a work tree's root is: the nearest folder upward that holds a ``.git``.

The one walk up the folders for a repository, read from the files alone (no git
process): the edit guard asks it before every edit, the links check for the edge of what
it may read, and the git runner before it pays for a process. What git itself makes of
the ``.git`` found (a worktree's file, a variable that points elsewhere) is
``gitcmd.locate``'s to ask.
"""

from __future__ import annotations

import os

DOTGIT = ".git"


def holds_git(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a ``.git`` (a folder, a worktree's file, or a link)."""
    return os.path.lexists(os.path.join(folder, DOTGIT))


def _looks_bare(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "HEAD")) \
        and os.path.isdir(os.path.join(folder, "objects"))


def repository_root(folder: str | os.PathLike[str], *, bare: bool = False) -> str | None:
    """The nearest folder at or above ``folder`` that holds a ``.git`` (with ``bare``:
    or looks like a bare repository), None if none does."""
    here = os.path.abspath(folder)
    while True:
        if holds_git(here) or (bare and _looks_bare(here)):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
