"""This user's own cache folder, outside any record: ``$XDG_CACHE_HOME/atlas-files/...``,
else ``~/.cache/atlas-files/...``.

What is kept there decides what atlas reads (a parse of atlas.yaml, the index of a
record's path leases), so a folder is used only while it is a real folder of the user's
own that nobody else can write: no other user of a shared volume may plant an entry.
Failing to read or write an entry is never an error: the caller reads the source again.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from typing import Any

from atlas_files.facts import privatepath

BASE = "atlas-files"


def folder(*sub: str, env: Mapping[str, str] | None = None) -> str | None:
    """``sub`` inside this user's cache folder; None when the user has no home folder to
    speak of (HOME unset, relative, or not there: a home is never made, as root would
    make `/nonexistent`)."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_CACHE_HOME", "")
    if not (base and os.path.isabs(base)):  # the XDG spec ignores a relative value
        home = environ.get("HOME", "")
        if not os.path.isabs(home) or not os.path.isdir(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, BASE, *sub)


def private(path: str) -> bool:
    """Whether ``path`` is a real folder (not a link) of this user that no one else can
    write, reached only through folders no one else can change (privatepath.py: a parent
    others may write could be swapped for one of theirs between this look and the read)."""
    if not hasattr(os, "getuid"):
        return False
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            and privatepath.unsafe_way(path) is None)


def write_json(where: str, path: str, data: Any) -> bool:
    """Replace the entry ``path`` in the folder ``where`` (made private if missing) with
    ``data`` as JSON; False, and nothing written, where that cannot be done."""
    try:
        if privatepath.unsafe_way(where) is not None:
            return False  # nothing is made where another user could take it over
        os.makedirs(where, mode=0o700, exist_ok=True)
        if not private(where):
            return False
        temp = f"{path}.{os.getpid()}.tmp"
        with open(temp, "w", encoding="utf-8") as fh:
            # dumps, not dump: dump streams through json's pure-Python encoder, ten times
            # slower on an index of thousands of rows.
            fh.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        os.replace(temp, path)  # a reader sees the whole entry or none
    except (OSError, TypeError, ValueError, RecursionError):
        return False
    return True
