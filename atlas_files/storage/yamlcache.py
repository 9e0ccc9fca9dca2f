"""YAML texts this user's atlas has parsed before, kept as JSON, so that a command whose
atlas.yaml (or a links check whose site's mkdocs.yml) has not changed need not import
PyYAML, a large share of every command's start (bench/bench_sync.py prints the start-up
floors).

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
from collections.abc import Callable, Mapping
from typing import Any

from atlas_files import __version__
from atlas_files.storage import usercache

SUBFOLDER = "yaml"
MAX_ENTRIES = 64  # past this, the older half goes: a text is a few hundred bytes
_MISS = object()


def folder(env: Mapping[str, str] | None = None) -> str | None:
    """Where entries live; None when the user has no home folder to speak of."""
    return usercache.folder(SUBFOLDER, env=env)


def _entry(where: str, text: str) -> str:
    data = text.encode("utf-8", "surrogatepass")
    return os.path.join(where, f"{binascii.crc32(data):08x}-{len(data)}.json")


def load(text: str, parse: Callable[[str], Any], *,
         encode: Callable[[Any], Any] | None = None,
         decode: Callable[[Any], Any] | None = None) -> Any:
    """``parse(text)``, or what it returned the last time this user's atlas parsed the
    same text. Whatever ``parse`` raises is raised, and nothing is kept. A parse that
    gives more than JSON's values is kept as ``encode`` makes it JSON (a ValueError
    there: not kept) and given back as ``decode`` makes it again."""
    where = folder()
    if where is None or not hasattr(os, "getuid"):
        return parse(text)
    path = _entry(where, text)
    if usercache.private(where):
        found = _read(path, text)
        if found is not _MISS:
            try:
                return found if decode is None else decode(found)
            except (KeyError, TypeError, ValueError, IndexError):
                pass  # an entry of another shape than ours: parsed again, and replaced
    data = parse(text)
    try:
        kept = data if encode is None else encode(data)
    except (ValueError, RecursionError):
        return data
    _keep(where, path, text, kept)
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
    except (TypeError, ValueError, RecursionError):
        return
    if usercache.write_json(where, path, {"atlas": __version__, "text": text, "data": data}):
        try:
            _prune(where)
        except OSError:
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
