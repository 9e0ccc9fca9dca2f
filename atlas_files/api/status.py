"""The status stream: one short text per project saying where things stand. Read it
first (`status_show`), write it last (`status_write`)."""

from __future__ import annotations

from typing import Any, NamedTuple

from atlas_files.api import Worker, reads, writes
from atlas_files.api.versions import (
    NO_MARKS,
    DiffView,
    VersionList,
    Written,
    body_to_write,
    marks,
    version_json,
    version_list,
)
from atlas_files.protocol import status
from atlas_files.storage.documents import Version
from atlas_files.storage.record import require_identity

__all__ = ["StatusView", "check_status_write", "status_diff", "status_log", "status_show",
           "status_write"]


class StatusView(NamedTuple):
    """The project's status as read; ``doc`` is None while the project has none."""

    project: str
    doc: Version | None
    marks: dict[str, Any] = NO_MARKS

    def to_json(self) -> dict[str, Any]:
        if self.doc is None:
            return {"name": "status", "project": self.project, "version": 0, "author": None,
                    "written_at": None, "based_on": None, "summary": "", "body": "",
                    "corrected_by": [], "retracted": None}
        return {"project": self.project, **version_json(self.doc, self.marks)}


def check_status_write(worker: Worker) -> None:
    """Refuse a status write with no identity or an unknown project before the caller
    reads a body that would then be thrown away."""
    require_identity(worker.identity)
    worker.record.status_stream(worker.project)


@reads
def status_show(worker: Worker, version: int | None = None) -> StatusView:
    """The project's status (latest, or ``version``); records the read for the worker."""
    project = worker.project_name
    doc = status.show(worker.record, reader=worker.identity, project=project, version=version)
    if doc is None:
        return StatusView(project, None)
    return StatusView(project, doc, marks(worker, "status", doc))


@writes("status write")
def status_write(worker: Worker, body: str, *, expect: int | None = None,
                 summary: str | None = None) -> Written:
    """Write the next status version; VersionConflict (the stop sign) if it moved."""
    doc, warnings = status.write(worker.record, body_to_write(body), author=worker.author,
                                 project=worker.project, expect=expect, summary=summary)
    return Written("status", doc.version, doc.path, warnings=tuple(warnings))


@reads
def status_log(worker: Worker) -> VersionList:
    return version_list(worker, "status", "status",
                        lambda unreadable: status.log(worker.record, worker.project, unreadable))


@reads
def status_diff(worker: Worker, old: int | None = None, new: int | None = None) -> DiffView:
    return DiffView(status.diff(worker.record, old, new, worker.project))
