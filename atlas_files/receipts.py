"""Read receipts: one live row per reader saying which version of what it has read.

This is state, not a document: the row is replaced atomically, never versioned. A reader's
own processes may update it at the same moment, so the read-modify-write is done under a
lock on that reader's row; versions only ever move forward (a receipt keeps the highest
version read), so the order in which two updates land cannot lose a read.

Rows are replaced without fsync: a receipt is re-creatable state. A power cut can lose its
last updates (never a document), and losing one errs on the safe side: the feed offers
those versions again and the stop sign asks for a fresh read before the next write. An
empty row (what some file systems leave after a power cut) reads as no receipts.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files import fsio, timeutil
from atlas_files.errors import DamagedFile
from atlas_files.names import check_name

if TYPE_CHECKING:
    from atlas_files.record import Record


def status_key(project: str) -> str:
    return f"{project}/status"


def artifact_key(project: str, name: str) -> str:
    return f"{project}/artifacts/{name}"


def _path(record: Record, identity: str) -> Path:
    # The identity becomes a file name: it is checked here, whoever the caller.
    return record.receipts_dir / f"{check_name(identity, 'identity')}.json"


def read(record: Record, identity: str) -> dict[str, int]:
    """What ``identity`` has read: receipt key -> highest version read."""
    path = _path(record, identity)
    try:
        data = fsio.read_nofollow(path)
    except (FileNotFoundError, NotADirectoryError):
        return {}  # no receipts yet (or no receipts folder: the update will say so)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise DamagedFile(
            f"{path} is a symlink, and the record never follows symlinks",
            hint=f"delete it to start {identity}'s receipts afresh",
        ) from None
    if not data.strip():
        return {}
    try:
        row = json.loads(data)
        marks = row["read"]
        return {str(k): int(v) for k, v in marks.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise DamagedFile(
            f"{path}: this read-receipt row is not valid JSON of the expected shape",
            hint=f"delete it to start {identity}'s receipts afresh (writes will then ask "
            "for a fresh read first)",
        ) from None


def mark(record: Record, identity: str, marks: Mapping[str, int]) -> dict[str, int]:
    """Record that ``identity`` has read these versions; returns the updated receipts."""
    path = _path(record, identity)
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    with fsio.locked(folder / f".{identity}.lock"):
        current = read(record, identity)
        changed = False
        for key, version in marks.items():
            if version > current.get(key, 0):
                current[key] = version
                changed = True
        if changed:
            row = {
                "identity": identity,
                "updated_at": timeutil.format_time(timeutil.now()),
                "read": dict(sorted(current.items())),
            }
            data = json.dumps(row, indent=1, ensure_ascii=False).encode() + b"\n"
            fsio.replace_atomic(path, data, durable=False)
    return current
