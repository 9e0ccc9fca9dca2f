"""Read receipts: one live row per reader saying which version of what it has read.

This is state, not a document: the row is replaced atomically, never versioned. A reader's
own processes may update it at the same moment, so the read-modify-write is done under a
lock on that reader's row; versions only ever move forward (a receipt keeps the highest
version read), so the order in which two updates land cannot lose a read.

A write counts as a read of what it wrote, but that is told from the versions (their
author), not written here on every write: see stopsign.read_through_writes, which every
reader of receipts asks.

Rows are replaced without fsync: a receipt is re-creatable state. A power cut can lose its
last updates (never a document), and losing one errs on the safe side: the feed offers
those versions again and the stop sign asks for a fresh read before the next write. An
empty row (what some file systems leave after a power cut) reads as no receipts.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files.facts import timeutil
from atlas_files.facts.errors import DamagedFile
from atlas_files.facts.names import check_name
from atlas_files.storage import fsio, jsonfile

if TYPE_CHECKING:
    from atlas_files.storage.record import Record


def status_key(project: str) -> str:
    return f"{project}/status"


def artifact_key(project: str, name: str) -> str:
    return f"{project}/artifacts/{name}"


def parse_key(key: str) -> tuple[str, str | None] | None:
    """(project, topic name) of a key made above, the name None for the status; None for
    a key neither made (a row edited by hand)."""
    project, _, rest = key.partition("/")
    if rest == "status":
        return project, None
    kind, _, name = rest.partition("/")
    return (project, name) if kind == "artifacts" and name else None


def _path(record: Record, identity: str) -> Path:
    # The identity becomes a file name: it is checked here, whoever the caller.
    return record.receipts_dir / f"{check_name(identity, 'identity')}.json"


def read(record: Record, identity: str) -> dict[str, int]:
    """What ``identity`` has read: receipt key -> highest version read.

    DamagedFile if the row cannot be read as one (a symlink, bad JSON, a version that is
    not a whole number): the caller decides whether that stops it (a write) or reads as
    no receipts (the feed).
    """
    return _read_at(_path(record, identity), identity)


def _read_at(path: Path, identity: str, dir_fd: int | None = None) -> dict[str, int]:
    """The row at ``path`` (by its name in the open folder ``dir_fd`` when given)."""
    try:
        data = jsonfile.read_bytes(path.name if dir_fd is not None else path, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return {}  # no receipts yet (or no receipts folder: the update will say so)
    except jsonfile.JSONDamage as exc:  # a symlink, a folder, far too large
        raise _damaged(path, identity, str(exc)) from None
    if not data.strip():
        return {}
    try:
        row = jsonfile.need_object(jsonfile.loads(data), "the row")
        marks = jsonfile.need_object(row.get("read"), "its `read`")
        return {str(k): jsonfile.need_int(v, f"the version read of {k[:100]}")
                for k, v in marks.items()}
    except jsonfile.JSONDamage as exc:
        raise _damaged(path, identity, str(exc)) from None


def _damaged(path: Path, identity: str, why: str) -> DamagedFile:
    return DamagedFile(
        f"{path}: this read-receipt row is damaged: {why}",
        hint=f"delete it to start {identity}'s receipts afresh (writes will then ask "
        "for a fresh read first)",
    )


def mark(record: Record, identity: str, marks: Mapping[str, int]) -> dict[str, int]:
    """Record that ``identity`` has read these versions; returns the updated receipts."""
    return _update(record, identity, marks, forward=True)


def lower(record: Record, identity: str, marks: Mapping[str, int]) -> None:
    """Set what ``identity`` has read back to at most these versions.

    Receipts only move forward, except here: a version a writer published on its machine
    that lost a race on a git remote (`atlas sync`) is replaced by the winner's version of
    the same number, which that writer never read. Its next write must stop and ask for a
    read, not take the winner's text as read.
    """
    _update(record, identity, marks, forward=False)


def _update(record: Record, identity: str, marks: Mapping[str, int], *,
            forward: bool) -> dict[str, int]:
    """Move each receipt in ``marks`` forward (or back) to its version, under the row's
    lock, so two processes of one identity never lose each other's update."""
    with held(record, identity) as row:
        return row.update(marks, forward=forward)


class Row:
    """One identity's receipts as read under the row's lock, for one read-modify-write."""

    __slots__ = ("_folder", "_name", "identity", "current")

    def __init__(self, folder: fsio.Folder, name: str, identity: str,
                 current: dict[str, int]) -> None:
        self._folder = folder
        self._name = name
        self.identity = identity
        self.current = current

    def update(self, marks: Mapping[str, int], *, forward: bool = True) -> dict[str, int]:
        """Move each receipt in ``marks`` forward (or back) and write the row if any
        moved; returns the receipts."""
        current = self.current
        changed = False
        for key, version in marks.items():
            if (version > current.get(key, 0)) if forward else (current.get(key, 0) > version):
                current[key] = version
                changed = True
        if changed:
            _write(self._folder, self._name, self.identity, current)
        return current


@contextlib.contextmanager
def held(record: Record, identity: str) -> Iterator[Row]:
    """``identity``'s receipts, locked while inside, for one read-modify-write.
    DamagedFile if the row is damaged; OSError if the folder or the lock cannot be had."""
    path = _path(record, identity)
    with fsio.open_folder(path.parent, within=record.opened, create=True) as folder, \
            folder.locked(f".{identity}.lock"):
        yield Row(folder, path.name, identity, _read_at(path, identity, folder.fd))


def _write(folder: fsio.Folder, name: str, identity: str,
           current: Mapping[str, int]) -> None:
    row = {
        "identity": identity,
        "updated_at": timeutil.format_time(timeutil.now()),
        "read": dict(sorted(current.items())),
    }
    data = json.dumps(row, indent=1, ensure_ascii=False).encode() + b"\n"
    folder.replace_atomic(name, data, durable=False)
