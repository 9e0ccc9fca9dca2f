"""Whether a folder's volume takes two names that differ only in case for one file.

macOS and Windows volumes do by default, and so do exFAT and an ext4 folder made
case-insensitive (``chattr +F``): there ``PROJECTS/main/status/status.v0001.md`` is the
record's own status file, and ``SRC/metrics.py`` the file a lease on ``src/**`` covers.
What decides is the folder itself, asked without writing anything: a name it holds and
the same name in the other case are the very same file, or not. Asked once per folder
(by its identity, device and inode) in a process that asks many times, as the command
server and the MCP server do; a first answer costs three ``stat`` calls (and on a
volume that folds case but numbers each spelling apart, a listing of the folder).

A volume whose case sensitivity differs from folder to folder (ext4's casefolding, or
Windows' per-folder flag) is judged by the folder asked about, which the folders made in
it inherit.
"""

from __future__ import annotations

import os

_known: dict[tuple[int, int], bool] = {}


def folds_case(folder: str, name: str) -> bool:
    """Whether in ``folder``, which holds an entry ``name`` with at least one letter, that
    name written in the other case leads to the same file (False when either is missing,
    or the folder cannot be read)."""
    try:
        here = os.stat(folder)
    except OSError:
        return False
    key = (here.st_dev, here.st_ino)
    found = _known.get(key)
    if found is not None:
        return found
    try:
        known = os.lstat(os.path.join(folder, name))
    except OSError:
        return False  # not asked well: nothing learnt of the folder
    other = name.swapcase()
    try:
        found = os.path.samestat(known, os.lstat(os.path.join(folder, other)))
        # A FUSE volume (exFAT's driver) may give each spelling an inode of its own: the
        # other spelling then leads to a file that is not in the folder's listing.
        found = found or other not in os.listdir(folder)
    except OSError:
        found = False
    _known[key] = found
    return found


def fold(text: str) -> str:
    """``text`` as a volume that folds case compares it (simple case folding, the
    length kept for the ASCII names atlas makes)."""
    return text.lower()
