"""The few questions atlas asks a code repository, answered by the `git` command line.

The command line, not a library: it reads the user's own git configuration (mailmap,
safe.directory, worktrees, alternates, a split index) the way their other tools do, and
needs nothing installed beyond git. Every answer that holds paths is asked for with
``-z``, so a file name may hold any byte git allows (a newline, a quote) and come back
unquoted and whole.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from atlas_files.errors import BadInput

# Paths come back as bytes; anything that is not UTF-8 is shown, never guessed at.
ENCODING = "utf-8"


class NotARepository(BadInput):
    """The folder is not inside a git repository (or git is not installed)."""


def run(args: Sequence[str], cwd: str | os.PathLike[str]) -> bytes:
    """``git ARGS`` in ``cwd``; its stdout. BadInput (with git's own words) if it fails."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise NotARepository("git is not installed (no `git` on PATH)",
                             hint="install git, or run this where git is on PATH") from None
    except NotADirectoryError:
        raise NotARepository(f"{cwd} is not a folder", hint="pass a folder") from None
    if proc.returncode != 0:
        said = proc.stderr.decode(ENCODING, "replace").strip().splitlines()
        raise BadInput(f"`git {' '.join(args[:2])}` failed in {cwd}: "
                       f"{said[-1] if said else f'exit {proc.returncode}'}",
                       hint="run the same git command there to see why")
    return proc.stdout


def toplevel(start: str | os.PathLike[str]) -> Path:
    """The root of the working tree holding ``start``; NotARepository if there is none.

    A folder holding ``.git`` (a folder, or the file of a worktree or submodule) is that
    root, as git itself decides, unless the environment points git elsewhere: then, and
    for every other folder, git is asked. A hook runs at the root, and one process fewer
    is a tenth of the commit guard's own time.
    """
    where = Path(start)
    if os.path.lexists(where / ".git") and not (
            os.environ.keys() & {"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR"}):
        return where.resolve()
    if not where.is_dir():
        raise NotARepository(f"{where} is not a folder",
                             hint="pass the folder of a git repository (--repo DIR)")
    try:
        out = run(["rev-parse", "--show-toplevel"], where)
    except NotARepository:
        raise
    except BadInput:
        raise NotARepository(
            f"{where.absolute()} is not inside a git repository (or git refuses to read it)",
            hint="run it inside the repository, or pass --repo DIR",
        ) from None
    text = out.decode(ENCODING, "surrogateescape").rstrip("\n")
    if not text:  # a bare repository: no working tree, so no paths to speak of
        raise NotARepository(f"{where.absolute()} is a bare repository, without a working tree",
                             hint="run it in a clone or a worktree")
    return Path(text)


def split_z(data: bytes) -> list[str]:
    """NUL-terminated paths, as ``-z`` prints them."""
    return [p.decode(ENCODING, "replace") for p in data.split(b"\0") if p]


def staged(repo: Path) -> list[str]:
    """Every path the next commit adds, changes or deletes, relative to ``repo``'s root.

    ``--no-renames``: a rename lists the old path and the new one, since moving a file out
    of a leased folder touches that folder as surely as editing it.
    """
    return split_z(run(["diff", "--cached", "--name-only", "--no-renames", "-z",
                        "--no-ext-diff", "--ignore-submodules=none"], repo))


def config(repo: Path, prefix: str) -> dict[str, str]:
    """Every ``git config`` value whose key starts with ``prefix`` (as ``atlas.``), keys
    lowercased as git reports them; the last value of a key repeated across files wins,
    as in git itself. One process for all of them."""
    try:
        out = run(["config", "-z", "--get-regexp", "^" + prefix.replace(".", "\\.")], repo)
    except BadInput:  # exit 1: no such key anywhere
        return {}
    values: dict[str, str] = {}
    for item in out.split(b"\0"):
        if item:
            key, _, value = item.decode(ENCODING, "replace").partition("\n")
            values[key] = value
    return values
