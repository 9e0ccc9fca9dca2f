"""Corrections and retractions: write down your own bad writes, never edit them away.

A correction is an append-only entry saying what was wrong with a status version, a topic
version or an entry, and by whom. A retraction says a topic version's conclusion no longer
holds. Both live under ``projects/<project>/corrections/`` (ids ``cor-...``, with ``kind``
telling them apart); the corrected item is never touched, but every reader that shows it
(``get``, ``status show``, ``decisions``, the site) marks it with what the correction says.

Reading the marks is on the path of every `atlas get`, so it costs one folder listing when
nothing was ever corrected, and the entries are read once per process otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files import entries
from atlas_files.errors import BadInput, DamagedFile, NotFound
from atlas_files.names import VersionRef, parse_ref
from atlas_files.record import require_identity

if TYPE_CHECKING:
    from atlas_files.record import Record

MAX_TEXT = 8000


@dataclass(frozen=True)
class Correction:
    """A correction (``kind`` "correction", ``text`` says what was wrong) or a retraction
    (``kind`` "retraction", ``text`` says why the conclusion no longer holds)."""

    id: str
    kind: str
    at: str
    author: str
    project: str
    ref: str
    text: str
    path: Path
    digest_ok: bool | None = True

    def to_json(self) -> dict[str, Any]:
        key = "why" if self.kind == "retraction" else "what"
        return {
            "id": self.id, "kind": self.kind, "at": self.at, "author": self.author,
            "project": self.project, "ref": self.ref, key: self.text,
            "path": str(self.path), "digest_ok": self.digest_ok,
        }

    def mark_json(self) -> dict[str, Any]:
        """How the corrected (or retracted) item shows this entry."""
        key = "why" if self.kind == "retraction" else "what"
        return {"id": self.id, "author": self.author, "at": self.at, key: self.text}


def _from_entry(entry: entries.Entry, project: str) -> Correction:
    m = entry.meta
    text = m.get("why") if entry.kind == "retraction" else m.get("what")
    return Correction(
        id=entry.id, kind=entry.kind, at=str(m.get("at", "")), author=str(m.get("author", "")),
        project=str(m.get("project") or project), ref=str(m.get("ref", "")),
        text=str(text or ""), path=entry.path, digest_ok=entry.digest_ok,
    )


def corrections_dir(record: Record, project: str) -> Path:
    return record.path("projects", project, "corrections")


def decisions_dir(record: Record, project: str) -> Path:
    return record.path("projects", project, "decisions")


# -- references ---------------------------------------------------------------------------


def resolve_ref(record: Record, project: str, text: str, what: str = "reference") -> str:
    """The canonical form of a reference that exists in ``project``; NotFound if it does not.

    ``NAME@vN`` and ``status@vN`` must name a published version, an entry id a published
    decision or correction.
    """
    ref = parse_ref(text)
    if isinstance(ref, VersionRef):
        stream = (record.status_stream(project) if ref.is_status
                  else record.artifact_stream(ref.name, project))
        if not stream.path(ref.version).is_file():
            versions = stream.versions()
            has = f"it is at v{versions[-1]}" if versions else "it has no versions"
            label = "the status" if ref.is_status else f"topic {ref.name!r}"
            raise NotFound(
                f"{what} {ref}: {label} of project {project} has no v{ref.version} ({has})",
                hint="`atlas ls` and `atlas history NAME` list what exists",
            )
        return str(ref)
    folder = decisions_dir(record, project) if ref.startswith("dec-") else \
        corrections_dir(record, project)
    if not (folder / entries.entry_filename(ref)).is_file():
        raise NotFound(
            f"{what} {ref}: no such entry in project {project}",
            hint="`atlas decisions` lists decision ids; check the project (-p)",
        )
    return ref


# -- writing ------------------------------------------------------------------------------


def correct(
    record: Record, ref: str, *, what: str, author: str | None, project: str | None = None
) -> Correction:
    """Record that ``ref`` was wrong, and how. The corrected item stays as it was."""
    author = require_identity(author)
    project = record.project(project)
    text = entries.clean_text(what, "the correction (--what)", one_line=False, limit=MAX_TEXT)
    target = resolve_ref(record, project, ref, "cannot correct")
    entry = entries.publish(
        corrections_dir(record, project), "correction",
        {"author": author, "project": project, "ref": target, "what": text},
    )
    return _from_entry(entry, project)


def retract(
    record: Record, ref: str, *, why: str, author: str | None, project: str | None = None
) -> Correction:
    """Record that the version ``ref`` (NAME@vN) is retracted: its conclusion no longer holds."""
    author = require_identity(author)
    project = record.project(project)
    text = entries.clean_text(why, "the retraction's why (--why)", one_line=False, limit=MAX_TEXT)
    if not isinstance(parse_ref(ref), VersionRef):
        raise BadInput(
            f"cannot retract {ref.strip()}: only a version (NAME@vN) is retracted",
            hint="a decision stands in the log; record a new decision, or correct it with "
            "`atlas correct ID --what TEXT`",
        )
    target = resolve_ref(record, project, ref, "cannot retract")
    earlier = _index(record, project)[1].get(target)
    if earlier:
        raise BadInput(
            f"{target} is already retracted by {earlier[0].author} ({earlier[0].id})",
            hint="nothing to do; write a new version if the conclusion changed again",
        )
    entry = entries.publish(
        corrections_dir(record, project), "retraction",
        {"author": author, "project": project, "ref": target, "why": text},
    )
    return _from_entry(entry, project)


# -- reading ------------------------------------------------------------------------------

# folder -> (listing fingerprint, value): the entries are read once per process until the
# folder changes (a new entry, or a file rewritten in place).
_CACHE: dict[tuple[str, str], tuple[tuple[Any, ...], Any]] = {}


def _fingerprint(folder: Path) -> tuple[Any, ...]:
    out = []
    for path in entries.entry_paths(folder):
        try:
            st = path.stat()
        except OSError:
            continue
        out.append((path.name, st.st_mtime_ns, st.st_size))
    return tuple(out)


def _index(
    record: Record, project: str
) -> tuple[dict[str, list[Correction]], dict[str, list[Correction]]]:
    """(ref -> corrections, ref -> retractions), each list oldest first."""
    folder = corrections_dir(record, project)
    fp = _fingerprint(folder)
    key = ("corrections", str(folder))
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == fp:
        return cached[1]  # type: ignore[no-any-return]
    fixes: dict[str, list[Correction]] = {}
    retractions: dict[str, list[Correction]] = {}
    for entry in entries.iter_entries(folder):
        c = _from_entry(entry, project)
        (retractions if c.kind == "retraction" else fixes).setdefault(c.ref, []).append(c)
    _CACHE[key] = (fp, (fixes, retractions))
    return fixes, retractions


def _accepts_index(record: Record, project: str) -> dict[str, str]:
    """ref -> id of the earliest decision that accepts it."""
    folder = decisions_dir(record, project)
    fp = _fingerprint(folder)
    key = ("accepts", str(folder))
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == fp:
        return cached[1]  # type: ignore[no-any-return]
    out: dict[str, str] = {}
    for path in entries.entry_paths(folder):
        try:
            if b"accepts" not in path.read_bytes():
                continue
            entry = entries.read_entry(path)
        except (OSError, DamagedFile):
            continue
        accepts = entry.meta.get("accepts")
        if isinstance(accepts, str):
            out.setdefault(accepts, entry.id)
    _CACHE[key] = (fp, out)
    return out


def list_corrections(record: Record, project: str | None = None) -> list[Correction]:
    """Every correction and retraction of the project, oldest first."""
    project = record.project(project)
    return [_from_entry(e, project) for e in entries.iter_entries(corrections_dir(record, project))]


def corrections_of(record: Record, project: str, ref: str) -> list[Correction]:
    """The corrections of ``ref`` (a canonical reference), oldest first."""
    return list(_index(record, project)[0].get(ref, ()))


def retraction_of(record: Record, project: str, ref: str) -> Correction | None:
    found = _index(record, project)[1].get(ref)
    return found[0] if found else None


def retracted_refs(record: Record, project: str) -> set[str]:
    """Every retracted version of the project, as ``name@vN`` (``status@vN``)."""
    return set(_index(record, project)[1])


def accepted_by(record: Record, project: str, ref: str) -> str | None:
    """The id of the decision that accepted the proposal ``ref``, or None."""
    return _accepts_index(record, project).get(ref)


def _has_entries(folder: Path) -> bool:
    try:
        return any(entries.is_entry_file(n) for n in os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return False


def _is_proposal(record: Record, project: str, name: str, version: int) -> bool:
    from atlas_files import frontmatter

    stream = record.artifact_stream(name, project)
    try:
        return frontmatter.parse(stream.path(version).read_bytes()).meta.get("proposal") is True
    except (OSError, frontmatter.FrontMatterError):
        return False


def marks_json(record: Record, project: str, kind: str, name: str, version: int) -> dict[str, Any]:
    """The marks shown on a version wherever it is read: corrections, retraction, acceptance.

    ``kind`` is "status" or "artifact". When nothing was ever corrected this costs one
    folder listing, plus reading the version's front matter to see whether it is a
    proposal.
    """
    ref = f"status@v{version}" if kind == "status" else f"{name}@v{version}"
    out: dict[str, Any] = {"corrected_by": [], "retracted": None, "accepted_by": None}
    if _has_entries(corrections_dir(record, project)):
        out["corrected_by"] = [c.mark_json() for c in corrections_of(record, project, ref)]
        retraction = retraction_of(record, project, ref)
        out["retracted"] = retraction.mark_json() if retraction else None
    if (kind != "status" and _is_proposal(record, project, name, version)
            and _has_entries(decisions_dir(record, project))):
        out["accepted_by"] = accepted_by(record, project, ref)
    return out


def proposal_state(record: Record, project: str, name: str, version: int, proposal: bool) -> str:
    """"proposed" (a proposal no decision accepted yet), "accepted", or "" (no proposal)."""
    if not proposal:
        return ""
    return "accepted" if accepted_by(record, project, f"{name}@v{version}") else "proposed"
