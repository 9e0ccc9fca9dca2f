"""The status stream: one short text per project, versioned exactly like an artifact."""

from __future__ import annotations

from typing import TYPE_CHECKING

from atlas_files.protocol.diffs import Diff, diff_stream
from atlas_files.protocol.stopsign import read_marked, write_checked
from atlas_files.storage import receipts
from atlas_files.storage.documents import Unreadable, Version, clean_summary, read_each
from atlas_files.storage.record import require_identity

if TYPE_CHECKING:
    from atlas_files.storage.record import Record


def show(
    record: Record, *, reader: str | None = None, project: str | None = None,
    version: int | None = None,
) -> Version | None:
    """The latest status (or ``version``), None if the project has none yet."""
    stream = record.status_stream(project)
    if version is None:
        version = stream.latest_for_reading()
        if version == 0:
            return None
    key = receipts.status_key(record.project(project))
    return read_marked(record, stream, key, reader=reader, version=version)


def write(
    record: Record,
    body: str,
    *,
    author: str | None,
    project: str | None = None,
    expect: int | None = None,
    summary: str | None = None,
) -> tuple[Version, list[str]]:
    """Write the next status; returns it with warnings (a long status is warned, not refused)."""
    author = require_identity(author)
    if summary is not None:
        summary = clean_summary(summary)
    stream = record.status_stream(project)
    key = receipts.status_key(record.project(project))
    written = write_checked(
        record, stream, key, body, author=author, expect=expect, summary=summary
    )
    warnings = []
    limit = record.config.status_limit
    if len(body) > limit:
        warnings.append(
            f"this status is {len(body)} characters, over the record's limit of {limit}: "
            "a status is read by every session first, so keep it short and move detail "
            "into an artifact"
        )
    return written, warnings


def log(record: Record, project: str | None = None,
        unreadable: list[Unreadable] | None = None) -> list[Version]:
    """Every status version, oldest first (``unreadable``: see ``read_each``)."""
    return read_each(record.status_stream(project), unreadable)


def diff(record: Record, old: int | None, new: int | None,
         project: str | None = None) -> Diff:
    return diff_stream(record.status_stream(project), old, new)
