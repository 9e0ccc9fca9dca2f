"""Unified diffs of two versions' bodies, for status and topics alike."""

from __future__ import annotations

import os
from typing import NamedTuple

from atlas_files.facts.errors import NotFound
from atlas_files.storage.documents import Stream, Version


class Diff(NamedTuple):
    """A unified diff of two versions' bodies (``old`` 0: the empty text before v1)."""

    name: str
    old: int
    new: int
    text: str


def unified_diff(old: Version | None, new: Version) -> str:
    # Imported here: at the top, difflib (with heapq) cost every command that reads a
    # version about 0.6 ms of start-up, `atlas status show` included, which never diffs.
    import difflib  # noqa: PLC0415 - see above

    old_lines = old.body.splitlines(keepends=True) if old else []
    old_label = f"{old.name}@v{old.version}" if old else "/dev/null"
    lines = difflib.unified_diff(
        old_lines, new.body.splitlines(keepends=True), old_label,
        f"{new.name}@v{new.version}",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def diff_stream(stream: Stream, old: int | None, new: int | None) -> Diff:
    """OLD against NEW; OLD alone: against the latest; neither: the latest against the one
    before it (the highest version below it present: a gap is skipped, not an error)."""
    latest = stream.latest_for_reading()
    if latest == 0:
        raise NotFound(f"{stream.label} has no versions yet")
    if old is None:
        new_v, old_v = latest, latest - 1
        if old_v >= 1 and not os.path.lexists(stream.path(old_v)):
            old_v = max((v for v in stream.versions() if v < latest), default=0)
    elif new is None:
        old_v, new_v = old, latest
    else:
        old_v, new_v = old, new
    newer = stream.read(new_v)
    older = stream.read(old_v) if old_v >= 1 else None
    return Diff(stream.name, old_v, new_v, unified_diff(older, newer))
