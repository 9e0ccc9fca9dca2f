"""Result types shared by the status stream and topics: a version as read, a version
just written, a list of versions, a diff.

NamedTuples rather than dataclasses: as immutable, and `atlas status show` loads these on
every call, where building a dataclass costs about a millisecond each (measured)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from atlas_files.api import Worker
from atlas_files.facts.errors import warn
from atlas_files.protocol import corrections
from atlas_files.protocol.diffs import Diff
from atlas_files.storage import frontmatter
from atlas_files.storage.documents import Unreadable, Version

NO_MARKS: dict[str, Any] = {"corrected_by": [], "retracted": None, "retractions": [],
                            "accepted_by": None}


def version_json(doc: Version, marks: dict[str, Any]) -> dict[str, Any]:
    """A version as `get --json` shows it: front matter, body, digest check and marks."""
    return {
        "name": doc.name, "version": doc.version, "author": doc.author,
        "written_at": doc.written_at, "based_on": doc.based_on, "summary": doc.summary,
        "proposal": doc.proposal, "links": list(doc.links), "body": doc.body,
        "digest_ok": doc.digest_ok, "corrected_by": marks.get("corrected_by", []),
        "retracted": marks.get("retracted"), "retractions": marks.get("retractions", []),
        "accepted_by": marks.get("accepted_by"),
    }


class Written(NamedTuple):
    """A version just written: ``put`` and ``status write``."""

    name: str
    version: int
    path: Path
    proposal: bool = False
    # Only a status write warns (a long status); `put --json` has no such key.
    warnings: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "version": self.version,
                               "path": str(self.path)}
        if self.warnings is not None:
            out["warnings"] = list(self.warnings)
        return out


class TopicView(NamedTuple):
    """One version of a topic as read, with its marks (corrections, retraction, acceptance)."""

    doc: Version
    marks: dict[str, Any] = NO_MARKS

    def to_json(self) -> dict[str, Any]:
        return version_json(self.doc, self.marks)


class VersionList(NamedTuple):
    """Every version of a stream, newest first, with each one's corrections and retraction
    by its number (as `get` shows them: ``corrected_by``, ``retracted``), and the versions
    whose files could not be read."""

    name: str
    versions: tuple[Version, ...]
    marks: dict[int, dict[str, Any]]
    unreadable: tuple[Unreadable, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "versions": [
            {"version": d.version, "author": d.author, "written_at": d.written_at,
             "based_on": d.based_on, "summary": d.summary, "proposal": d.proposal,
             "path": str(d.path), **self.marks[d.version]}
            for d in self.versions
        ], "unreadable": [{**u.to_json(), **self.marks[u.version]} for u in self.unreadable]}


def version_list(worker: Worker, kind: str, name: str,
                 read: Callable[[list[Unreadable]], list[Version]]) -> VersionList:
    """The versions ``read`` gives (oldest first), newest first, each with its corrections
    and retraction, and those it could not read; ``kind`` is "status" or "artifact"."""
    unreadable: list[Unreadable] = []
    docs = read(unreadable)
    for u in unreadable:
        warn(f"{u.error} (listed as unreadable; `atlas check` tells more)")
    of = corrections.correction_marks(worker.record, worker.project_name)
    return VersionList(name, tuple(reversed(docs)), {
        v: of(corrections.version_ref(kind, name, v))
        for v in [d.version for d in docs] + [u.version for u in unreadable]},
        tuple(reversed(unreadable)))


class DiffView(NamedTuple):
    diff: Diff

    def to_json(self) -> dict[str, Any]:
        d = self.diff
        return {"name": d.name, "from": d.old, "to": d.new, "diff": d.text}


def marks(worker: Worker, kind: str, doc: Version) -> dict[str, Any]:
    return corrections.marks_json(worker.record, worker.project_name, kind, doc.name,
                                  doc.version)


def body_to_write(body: str) -> str:
    """The body of a new version. A text that is a whole version file (a sync draft, whose
    hint says `-f MERGED_FILE`, or a copied version) would store its front matter inside the
    new body; its body is taken instead, and the warning says so."""
    copied = frontmatter.copied_version(body)
    if copied is None:
        return body
    inner, meta = copied
    warn(f"the text starts with the front matter of {meta.get('name')} "
         f"v{meta.get('version')} (a sync draft, or a copy of a version file): its body was "
         "written, without that front matter; the new version gets front matter of its own")
    return inner
