"""YAML texts this user's atlas has parsed before, kept as JSON, so that a command whose
atlas.yaml has not changed need not import PyYAML: 13 ms of the 115 a no-op `atlas sync`
took, and of every other command (bench/bench_sync.py prints the start-up floors).

An entry is found by the text itself and used only when the whole text it holds equals,
character for character, the text just read. No clock or file time is trusted, so an edit
made within the same tick as the last read is still seen.

Entries live outside any record, in the user's cache folder
(``$XDG_CACHE_HOME/atlas-files/yaml``, else ``~/.cache/atlas-files/yaml``), and that
folder is used only while it is a real folder of the user's own that nobody else can
write, reached through folders nobody else can change (privatepath.py): whoever writes
an entry decides what atlas reads, so no other user of a shared volume may. A value JSON
cannot carry exactly (a date, a set, a mapping with number keys, NaN) is never kept:
such a text is parsed every time. Failing to read or write an entry
is never an error, and never a message: the text is parsed as it was before.
"""

from __future__ import annotations

import binascii
import json
import os
import stat
from collections.abc import Callable, Mapping
from typing import Any

from atlas_files import __version__, privatepath

SUBFOLDER = ("atlas-files", "yaml")
MAX_ENTRIES = 64  # past this, the older half goes: a text is a few hundred bytes
_MISS = object()


def folder(env: Mapping[str, str] | None = None) -> str | None:
    """Where entries live; None when the user has no home folder to speak of."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_CACHE_HOME", "")
    if not (base and os.path.isabs(base)):  # the XDG spec ignores a relative value
        home = environ.get("HOME", "")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, *SUBFOLDER)


def _private(path: str) -> bool:
    """A real folder of this user's that no one else can write, reached only through
    folders that no one else can change (a parent others may write could be swapped
    for one of theirs between this look and the read)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            and privatepath.unsafe_way(path) is None)


def _entry(where: str, text: str) -> str:
    data = text.encode("utf-8", "surrogatepass")
    return os.path.join(where, f"{binascii.crc32(data):08x}-{len(data)}.json")


def load(text: str, parse: Callable[[str], Any]) -> Any:
    """``parse(text)``, or what it returned the last time this user's atlas parsed the
    same text. Whatever ``parse`` raises is raised, and nothing is kept."""
    where = folder()
    if where is None or not hasattr(os, "getuid"):
        return parse(text)
    path = _entry(where, text)
    if _private(where):
        found = _read(path, text)
        if found is not _MISS:
            return found
    data = parse(text)
    _keep(where, path, text, data)
    return data


def _read(path: str, text: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            entry = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return _MISS
    if not isinstance(entry, dict) or entry.get("text") != text \
            or entry.get("atlas") != __version__ or "data" not in entry:
        return _MISS
    return entry["data"]


def _keep(where: str, path: str, text: str, data: Any) -> None:
    try:
        if json.loads(json.dumps(data)) != data:
            return  # JSON would give back something else: parse this text every time
        if privatepath.unsafe_way(where) is not None:
            return  # nothing is made where another user could take it over
        os.makedirs(where, mode=0o700, exist_ok=True)
        if not _private(where):
            return
        temp = f"{path}.{os.getpid()}.tmp"
        with open(temp, "w", encoding="utf-8") as fh:
            json.dump({"atlas": __version__, "text": text, "data": data}, fh,
                      ensure_ascii=False)
        os.replace(temp, path)  # a reader sees the whole entry or none
        _prune(where)
    except (OSError, TypeError, ValueError, RecursionError):
        pass


def _prune(where: str) -> None:
    names = [n for n in os.listdir(where) if n.endswith(".json")]
    if len(names) <= MAX_ENTRIES:
        return
    aged = []
    for name in names:
        try:
            aged.append((os.stat(os.path.join(where, name)).st_mtime, name))
        except OSError:
            continue
    for _, name in sorted(aged)[: len(aged) - MAX_ENTRIES // 2]:
        try:
            os.unlink(os.path.join(where, name))
        except OSError:
            continue
