"""When a repository's refs last moved, read from git's own files, without running git.

A commit lands in a ref: ``git commit``, a fetch or a push to this clone writes the
branch's file under ``refs/`` (or ``packed-refs``, or the reftable), and a commit on a
detached HEAD writes ``HEAD``. So when none of those files changed since some moment, no
ref gained a commit made after it, and ``git log --all --since`` would find nothing. The
edit guard asks this before every edit, where one ``git`` process (and Python's
``subprocess`` import) would be most of its time.

The answer trusts file times and committers' clocks alike: a commit dated ahead of the
clock of the machine that wrote the ref can be missed, as ``git log --since`` itself
misses one dated behind. ``None`` means "cannot tell" (the environment points git
elsewhere, an unreadable folder, a layout this does not know): then ask git.
"""

from __future__ import annotations

import os

from atlas_files.facts import environment

_LIMIT = 20_000  # ref files looked at before giving up ("cannot tell")


def git_dirs(root: str) -> tuple[str, str] | None:
    """(the git dir, the common dir) of the work tree at ``root``; None if ``root`` holds
    no ``.git`` (folder, or a worktree's or submodule's file) or git is pointed elsewhere."""
    if environment.git_moved():
        return None
    dotgit = os.path.join(root, ".git")
    try:
        if os.path.isdir(dotgit):
            git_dir = dotgit
        else:
            with open(dotgit, encoding="utf-8") as fh:
                line = fh.read(4096).strip()
            if not line.startswith("gitdir:"):
                return None
            git_dir = os.path.join(root, line[len("gitdir:"):].strip())
        common = git_dir
        try:
            with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as fh:
                common = os.path.join(git_dir, fh.read(4096).strip())
        except FileNotFoundError:
            pass
    except (OSError, UnicodeDecodeError):
        return None
    return os.path.normpath(git_dir), os.path.normpath(common)


def _newest_under(folder: str, budget: list[int]) -> float:
    newest = 0.0
    try:
        with os.scandir(folder) as it:
            for entry in it:
                budget[0] -= 1
                if budget[0] < 0:
                    raise OverflowError
                if entry.is_dir(follow_symlinks=False):
                    newest = max(newest, _newest_under(entry.path, budget))
                else:
                    newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
    except FileNotFoundError:
        pass
    return newest


def last_moved(root: str) -> float | None:
    """The newest modification time (seconds since the epoch) among the files holding
    the refs of the repository whose work tree is ``root``, HEAD of every worktree
    included; None if it cannot be told."""
    dirs = git_dirs(root)
    if dirs is None:
        return None
    git_dir, common = dirs
    heads = [os.path.join(git_dir, "HEAD"), os.path.join(common, "HEAD"),
             os.path.join(common, "packed-refs")]
    try:
        with os.scandir(os.path.join(common, "worktrees")) as it:
            heads += [os.path.join(e.path, "HEAD") for e in it]
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError:
        return None
    newest = 0.0
    for path in heads:
        try:
            newest = max(newest, os.stat(path).st_mtime)
        except FileNotFoundError:
            continue
        except OSError:
            return None
    budget = [_LIMIT]
    try:
        for sub in ("refs", "reftable"):
            newest = max(newest, _newest_under(os.path.join(common, sub), budget))
    except (OSError, OverflowError):
        return None
    return newest
