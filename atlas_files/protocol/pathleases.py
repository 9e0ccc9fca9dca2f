"""The path leases of a record as the guards read them: each lease's newest generation,
reduced to who holds which paths until when.

Reading a thousand leases is a thousand folder listings and a thousand small files, at
every edit an agent makes (the edit guard) and every commit (the commit guard). So what
was read is kept in an index in this user's own cache folder (``usercache``: no other
user can plant one) and checked against the record at every read: a lease folder whose
modification time and inode are the ones the index noted is taken as read, because every
change of a lease creates a file in its folder, which moves the folder's time. A folder
that changed less than ``RACY_S`` before the index noted it is read again every time,
until it has been quiet that long: a file time ticks coarsely, and a second change within
one tick would leave the time the index noted (git's "racily clean" entries, with the
same remedy).

The index decides nothing by itself: it only rules out the leases that cannot matter
(no paths, released, expired, the asker's own, or globs whose literal folders lead
elsewhere). Every lease that may cover a path is read in full, with every check a lease
read gets, before anyone is told of it (``leases.guard``).
"""

from __future__ import annotations

import binascii
import json
import os
import stat
import time
from collections.abc import Iterable, Sequence
from typing import Any

from atlas_files import __version__
from atlas_files.facts.errors import BadInput
from atlas_files.facts.names import is_name
from atlas_files.storage import usercache, volcase

RACY_S = 120.0
# Never follow a symlink, never wait on a named pipe (as fsio's reads).
_PEEK_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0))
_GENERATION_LIMIT = 1 << 20  # leases.store.GENERATION_LIMIT: a test holds them together

# What the newest generation of a lease says, as far as paths go.
NONE = "none"  # no generation, no paths, or released: it covers nothing
PATHS = "paths"  # it covers these globs while held (holder, expires_at)
UNSURE = "unsure"  # the quick look cannot tell: read it in full
BAD = "bad"  # not a lease folder (a bad name, a symlink, a file): say why in full


class Item:
    """One lease as the index has it. ``prefixes``: each glob's literal leading folders
    ("" when it starts with a wildcard), so that a path elsewhere needs no matching."""

    __slots__ = ("resource", "folder", "name", "state", "holder", "expires_at", "globs",
                 "prefixes")

    def __init__(self, resource: str, folder: str, name: str | None, state: str,
                 holder: Any = None, expires_at: Any = None,
                 globs: Sequence[str] = (), prefixes: Sequence[str] = ()) -> None:
        self.resource = resource
        self.folder = folder
        self.name = name  # the newest generation's file name
        self.state = state
        self.holder = holder
        self.expires_at = expires_at
        self.globs = tuple(globs)
        self.prefixes = tuple(prefixes)


def _peek(path: str) -> bytes | None:
    """The bytes of a plain generation file in one read; None for anything else (a
    symlink, a folder, a pipe, a file too large or growing), which the full read then
    judges and names. A generation is never written in place, so its size holds."""
    try:
        fd = os.open(path, _PEEK_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _GENERATION_LIMIT:
            return None
        data = os.read(fd, st.st_size + 1)
        return data if len(data) == st.st_size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _facts(resource: str, folder: str) -> Item:
    """The newest generation of the lease in ``folder``, read the quick way."""
    from atlas_files.protocol.leases import store  # noqa: PLC0415 - only when a lease changed
    from atlas_files.protocol.leases.paths import check_globs, prefix  # noqa: PLC0415 - idem

    found = store.newest_name(folder)
    if found is None:
        return Item(resource, folder, None, NONE)
    name = found[1]
    data = _peek(os.path.join(folder, name))
    if data is None:
        return Item(resource, folder, name, UNSURE)
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):
        return Item(resource, folder, name, UNSURE)
    if not isinstance(raw, dict):
        return Item(resource, folder, name, UNSURE)
    paths, holder, expires = raw.get("paths"), raw.get("holder"), raw.get("expires_at")
    holder = holder if isinstance(holder, str) else None
    if not paths or raw.get("action") == "release":
        return Item(resource, folder, name, NONE, holder)
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths) \
            or not isinstance(expires, str):
        return Item(resource, folder, name, UNSURE, holder)
    try:
        globs = check_globs(paths)
    except (ValueError, BadInput):
        return Item(resource, folder, name, UNSURE, holder)
    return Item(resource, folder, name, PATHS, holder, expires, globs,
                [prefix(g) for g in globs])


def _index_path(where: str, leases_dir: str) -> str:
    tag = binascii.crc32(leases_dir.encode("utf-8", "surrogateescape"))
    return os.path.join(where, f"{tag:08x}.json")


def _load(path: str, leases_dir: str) -> dict[str, list[Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(raw, dict) or raw.get("atlas") != __version__ \
            or raw.get("leases") != leases_dir or not isinstance(raw.get("entries"), dict):
        return {}
    entries: dict[str, list[Any]] = raw["entries"]
    return entries


def _row(item: Item, mtime_ns: int, ino: int) -> list[Any]:
    if item.state == NONE:
        return [mtime_ns, ino]  # nine in ten leases: a machine, a GPU, a released one
    return [mtime_ns, ino, item.name, item.state, item.holder, item.expires_at,
            list(item.globs), list(item.prefixes)]


def _from_row(resource: str, folder: str, row: list[Any]) -> Item | None:
    try:
        _, _, name, state, holder, expires, globs, prefixes = row
    except (TypeError, ValueError):
        return None
    if state not in (PATHS, UNSURE):
        return None
    return Item(resource, folder, name, state, holder, expires, globs, prefixes)


def read(leases_dir: str) -> list[Item]:
    """The leases in the folder ``leases_dir`` that may cover a path, by name: each lease
    whose newest generation has paths and is not a release, and each one the quick look
    cannot judge (``UNSURE``) or that is no lease folder at all (``BAD``); through this
    user's index where it is sure to be right. FileNotFoundError if the folder is
    missing; another OSError if it cannot be listed."""
    where = usercache.folder("leases")
    real = os.path.realpath(leases_dir)
    index_path = _index_path(where, real) if where else None
    cached = _load(index_path, real) if index_path and usercache.private(where or "") else {}
    kept: dict[str, list[Any]] = {}
    items: list[Item] = []
    changed = False
    racy_ns = time.time_ns() - RACY_S * 1e9
    # Each folder is looked at by its name in the open leases folder: a stat relative to
    # a descriptor spares the kernel a walk of the whole path, a thousand times per edit.
    fd = os.open(leases_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    try:
        names = sorted(n for n in os.listdir(fd) if n[:1] != ".")
        stats: list[os.stat_result | None] = []
        for resource in names:
            try:
                stats.append(os.stat(resource, dir_fd=fd, follow_symlinks=False))
            except OSError:
                stats.append(None)
    finally:
        os.close(fd)
    for resource, st in zip(names, stats, strict=True):
        folder = f"{leases_dir}{os.sep}{resource}"
        if st is None:
            items.append(Item(resource, folder, None, BAD))
            continue
        row = cached.get(resource)
        # The common case, a lease that did not change, is two compares: this loop runs
        # over every lease of the record before every edit.
        if row is not None and row[0] == st.st_mtime_ns and row[1] == st.st_ino:
            if len(row) == 2:
                kept[resource] = row
                continue
            item = _from_row(resource, folder, row)
            if item is not None:
                kept[resource] = row
                items.append(item)
                continue
        item = _fresh(resource, folder, st)
        if item.state != NONE:
            items.append(item)
        if item.state != BAD and st.st_mtime_ns < racy_ns:
            kept[resource] = _row(item, st.st_mtime_ns, st.st_ino)
            changed = True
    if where and index_path and (changed or len(kept) != len(cached)):
        usercache.write_json(where, index_path,
                             {"atlas": __version__, "leases": real, "entries": kept})
    return items


def _fresh(resource: str, folder: str, st: os.stat_result) -> Item:
    if not (stat.S_ISDIR(st.st_mode) and is_name(resource)):
        return Item(resource, folder, None, BAD)
    try:
        return _facts(resource, folder)
    except OSError:
        return Item(resource, folder, None, UNSURE)


def _unexpired(expires: Any, now: str) -> bool:
    """Whether ``expires`` may still lie ahead of ``now`` (both as atlas writes times, so
    text order is time order); any other spelling may, and is read in full."""
    if isinstance(expires, str) and len(expires) == len(now) and expires[-1:] == "Z" \
            and expires[10:11] == "T":
        return expires > now
    return True


def may_cover(items: Iterable[Item], identity: str | None, paths: Sequence[str],
              now: str, *, fold: bool = False) -> bool:
    """Whether some lease of ``items`` held by anyone but ``identity``, unexpired, may
    cover one of ``paths`` (repository paths), or cannot be judged without a full read.
    False is sure; True only means: ask ``leases.guard.conflicts``. ``fold``: compared
    case-insensitively, as a volume that folds case takes names."""
    if fold:
        paths = [volcase.fold(p) for p in paths]
    for item in items:
        if item.state in (BAD, UNSURE):
            if identity is None or item.holder != identity or item.state == BAD:
                return True
            continue
        if item.state != PATHS or (identity and item.holder == identity) \
                or not _unexpired(item.expires_at, now):
            continue
        for prefix in item.prefixes:
            if not prefix:
                return True
            if fold:
                prefix = volcase.fold(prefix)
            for path in paths:
                if path == prefix or path.startswith(prefix + "/"):
                    return True
    return False
