"""Where a record at the top of its own work tree keeps its git folders, read from the
files as git's own discovery reads them: one `git rev-parse` fewer on every sync and every
synced write (about 4 ms of a 45 ms synced `atlas put`; bench/bench_sync.py).

Only the plain layouts are read here: a ``.git`` folder in the record's root, or a ``.git``
file pointing to a linked worktree's folder. Anything git might judge otherwise is left to
git (``None``): a record deeper inside a repository, a ``GIT_*`` variable that moves the
folders, a config that could move the work tree (``core.worktree``, ``core.bare``,
includes, per-worktree config), folders owned by another user (git's ``safe.directory``
check), the reftable format, or a ``.git`` git would not take for a repository.

Also read here: whether git's automatic tidying could find work, the same sample git's
own test takes, so a synced write runs no `git maintenance run --auto` child (about 3 ms)
after a commit that leaves nothing to tidy.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# Variables that change where git looks, or what it will take for a repository.
_MOVED_BY = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
             "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT")
# Config words after which only git can say where the work tree is.
_ASK_GIT_IF = ("worktree", "bare = true", "bare=true", "include")
_SMALL = 64 * 1024
# git's own test for too many loose objects: more than gc.auto / 256 (6700 by default) in
# the one folder objects/17, taken as a sample of all 256.
_LOOSE_SAMPLE = "17"
_LOOSE_DUE = (6700 + 255) // 256


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(_SMALL + 1)
    except OSError:
        return None
    if len(data) > _SMALL:
        return None
    return data.decode("utf-8", "surrogateescape")


def _mine(path: str) -> bool:
    try:
        return os.stat(path).st_uid == os.getuid()
    except OSError:
        return False


def find(root: Path) -> tuple[Path, Path, Path] | None:
    """(work tree top, this work tree's git dir, the common dir) when the record's root is
    the top of a work tree of a plain layout; None when git must be asked."""
    if not hasattr(os, "getuid") or any(name in os.environ for name in _MOVED_BY):
        return None
    top = os.path.realpath(root)
    dotgit = os.path.join(top, ".git")
    try:
        info = os.lstat(dotgit)
    except OSError:
        return None  # no repository here: the record lies deeper in one, or in none
    if stat.S_ISDIR(info.st_mode):
        git_dir = dotgit
    elif stat.S_ISREG(info.st_mode):
        text = _read(dotgit)
        if text is None or not text.startswith("gitdir: "):
            return None
        git_dir = os.path.realpath(os.path.join(top, text[len("gitdir: "):].strip()))
    else:
        return None
    common = _read(os.path.join(git_dir, "commondir"))
    common_dir = git_dir if common is None else os.path.realpath(
        os.path.join(git_dir, common.strip()))
    config = _read(os.path.join(common_dir, "config"))
    if config is None or any(word in config.lower() for word in _ASK_GIT_IF):
        return None
    if not (all(map(_mine, (top, git_dir, common_dir)))
            and os.path.isfile(os.path.join(git_dir, "HEAD"))
            and os.path.isdir(os.path.join(common_dir, "objects"))
            and os.path.isdir(os.path.join(common_dir, "refs"))
            and not os.path.exists(os.path.join(common_dir, "reftable"))):
        return None
    return Path(top), Path(git_dir), Path(common_dir)


def loose_objects_due(common_dir: Path) -> bool:
    """Whether git's automatic gc (at its default threshold) could find work among the
    loose objects; True when the folder cannot be read, so that git is asked."""
    try:
        with os.scandir(os.path.join(common_dir, "objects", _LOOSE_SAMPLE)) as entries:
            loose = sum(1 for e in entries if len(e.name) >= 38)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return loose > _LOOSE_DUE
