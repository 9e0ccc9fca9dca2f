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
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from atlas_files.facts import layout
from atlas_files.facts.errors import BadInput, DamagedFile, NotFound
from atlas_files.facts.names import VersionRef, parse_ref
from atlas_files.facts.text import clean_text
from atlas_files.storage import entries, frontmatter, fsio
from atlas_files.storage.record import require_identity

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

MAX_TEXT = 8000
MAX_LINKS = 50
MAX_REF = 200  # a topic name (100) and a version, or an entry id (about 40), fit easily


class Correction(NamedTuple):
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


def _published(path: Path, what: str) -> bool:
    """Whether ``path`` is a published file; a symlink there is damage, never followed."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    if stat.S_ISLNK(mode):
        raise DamagedFile(
            f"{what}: {path} is a symlink; the record never follows one, so it cannot be "
            "referenced",
            hint="replace the link with the file itself; `atlas check` lists such links",
        )
    return stat.S_ISREG(mode)


def resolve_ref(record: Record, project: str, text: str, what: str = "reference") -> str:
    """The canonical form of a reference that exists in ``project``.

    ``NAME@vN`` and ``status@vN`` must name a published version, an entry id a published
    decision or correction of the same project. Raises BadInput for text that is no
    reference, NotFound for one that names nothing, DamagedFile for one that names a
    symlink. ``what`` starts each message (e.g. "--link"). Writes nothing.
    """
    if len(text) > MAX_REF:  # never echo a pasted document back as "the reference"
        raise BadInput(f"{what}: a reference of {len(text)} characters; a reference is "
                       "NAME@vN, status@vN or an entry id",
                       hint="`atlas ls` and `atlas decisions` show what can be referenced")
    try:
        ref = parse_ref(text)
    except NotFound:
        raise
    except BadInput as exc:
        raise BadInput(f"{what}: {exc.message}", hint=exc.hint) from None
    if isinstance(ref, VersionRef):
        stream = (record.status_stream(project) if ref.is_status
                  else record.artifact_stream(ref.name, project))
        if not _published(stream.path(ref.version), f"{what} {ref}"):
            try:
                versions = stream.versions()
            except OSError:
                versions = []
            has = f"it is at v{versions[-1]}" if versions else "it has no versions"
            label = "the status" if ref.is_status else f"topic {ref.name!r}"
            raise NotFound(
                f"{what} {ref}: {label} of project {project} has no v{ref.version} ({has})",
                hint="`atlas ls` and `atlas history NAME` list what exists",
            )
        return str(ref)
    folder = decisions_dir(record, project) if ref.startswith("dec-") else \
        corrections_dir(record, project)
    if not _published(folder / layout.entry_filename(ref), f"{what} {ref}"):
        raise NotFound(
            f"{what} {ref}: no such entry in project {project}",
            hint="`atlas decisions` lists decision ids; check the project (-p)",
        )
    return ref


def resolve_refs(record: Record, project: str, refs: Iterable[str],
                 what: str = "--link") -> list[str]:
    """Every reference in ``refs`` resolved (see ``resolve_ref``), duplicates dropped, in
    the order given; at most MAX_LINKS. The check that `decide --link` and `put --link`
    share, so a link is refused the same way wherever it is written."""
    items = [refs] if isinstance(refs, str) else list(refs)
    if len(items) > MAX_LINKS:
        raise BadInput(f"{len(items)} links; at most {MAX_LINKS}",
                       hint="link a topic version that lists the rest")
    return list(dict.fromkeys(resolve_ref(record, project, r, what) for r in items))


# -- writing ------------------------------------------------------------------------------


def correct(
    record: Record, ref: str, *, what: str, author: str | None, project: str | None = None
) -> Correction:
    """Record that ``ref`` was wrong, and how. The corrected item stays as it was."""
    author = require_identity(author)
    project = record.project(project)
    text = clean_text(what, "the correction (--what)", one_line=False, limit=MAX_TEXT,
                      elsewhere="a new version of what you correct")
    target = resolve_ref(record, project, ref, "cannot correct")
    entry = entries.publish(
        corrections_dir(record, project), "correction",
        {"author": author, "project": project, "ref": target, "what": text},
        within=record.opened,
    )
    return _from_entry(entry, project)


def retract(
    record: Record, ref: str, *, why: str, author: str | None, project: str | None = None
) -> Correction:
    """Record that the version ``ref`` (NAME@vN) is retracted: its conclusion no longer holds.

    Refused if a retraction of ``ref`` is already there when this one is written. That is
    a read before a write, not a compare-and-set: two writers retracting the same version
    at the same moment both land. Both are kept; readers list every retraction and show
    the earliest as the one that retracted the version (``retractions_of``).
    """
    author = require_identity(author)
    project = record.project(project)
    text = clean_text(why, "the retraction's why (--why)", one_line=False, limit=MAX_TEXT,
                      elsewhere="a new version of the topic")
    if not isinstance(parse_ref(ref), VersionRef):
        raise BadInput(
            f"cannot retract {ref.strip()}: only a version (NAME@vN) is retracted",
            hint="a decision stands in the log; record a new decision, or correct it with "
            "`atlas correct ID --what TEXT`",
        )
    target = resolve_ref(record, project, ref, "cannot retract")
    earlier = retractions_of(record, project, target)
    if earlier:
        raise BadInput(
            f"{target} was already retracted by {earlier[0].author} ({earlier[0].id}); "
            "nothing was written",
            hint="if the conclusion changed again, write a new version; to add to what the "
            f"retraction says, `atlas correct {earlier[0].id} --what TEXT`",
        )
    entry = entries.publish(
        corrections_dir(record, project), "retraction",
        {"author": author, "project": project, "ref": target, "why": text},
        within=record.opened,
    )
    return _from_entry(entry, project)


# -- reading ------------------------------------------------------------------------------

# What reading one entry can raise when its file is damaged: DamagedFile for what the
# entry reader foresees; RecursionError or OverflowError from a field nested thousands deep
# or out of range that the reader's parser or digest trips on. Each skips that entry only.
_ENTRY_DAMAGE = (DamagedFile, OSError, ValueError, RecursionError, OverflowError)


def _damage_text(path: Path, exc: BaseException) -> str:
    if isinstance(exc, DamagedFile):
        return exc.message
    if isinstance(exc, RecursionError):
        return f"{path}: a field nests too deeply to be read"
    if isinstance(exc, OSError):
        return f"{path} cannot be read: {exc.strerror or exc}"
    return f"{path}: cannot be read as an entry ({str(exc)[:120]})"


def read_entries(folder: Path,
                 on_damaged: Callable[[Path, str], None] | None = None) -> list[entries.Entry]:
    """Every readable entry in ``folder``, oldest first. A file that cannot be read, for
    whatever reason, goes to ``on_damaged`` (path, message) and never hides the rest of
    the log; so does the folder itself when it cannot be listed."""
    try:
        paths = entries.entry_paths(folder)
    except OSError as exc:  # no permission to list it
        if on_damaged is not None:
            on_damaged(folder, f"{folder} cannot be read: {exc.strerror or exc}")
        return []
    if not paths and on_damaged is not None and os.path.lexists(folder) \
            and not os.path.isdir(folder):
        on_damaged(folder, entries.not_a_folder(folder).message)
    out = []
    for path in paths:
        try:
            out.append(entries.read_entry(path))
        except FileNotFoundError:
            continue  # removed since the listing
        except _ENTRY_DAMAGE as exc:
            if on_damaged is not None:
                on_damaged(path, _damage_text(path, exc))
    return out


def read_one(path: Path) -> entries.Entry:
    """One entry; DamagedFile (never a parser's RecursionError) if it cannot be read."""
    try:
        return entries.read_entry(path)
    except (FileNotFoundError, DamagedFile):
        raise
    except _ENTRY_DAMAGE as exc:
        raise DamagedFile(_damage_text(path, exc),
                          hint="entries are never edited; restore the file from git, or "
                          "record a correction instead") from None


# folder -> (listing fingerprint, value): the entries are read once per process until the
# folder changes (a new entry, or a file rewritten in place).
_CACHE: dict[tuple[str, str], tuple[tuple[Any, ...], Any]] = {}


def _fingerprint(folder: Path) -> tuple[Any, ...]:
    out = []
    try:
        paths = entries.entry_paths(folder)
    except OSError:
        return ()
    for path in paths:
        try:
            st = path.lstat()
        except OSError:
            continue
        # ctime and inode too: an entry rewritten in place with its mtime put back (a hand
        # edit, a checkout) must not be served stale to a long-lived process (MCP server).
        out.append((path.name, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size))
    return tuple(out)


def _cached(kind: str, folder: Path, build: Callable[[], Any]) -> Any:
    """``build()``'s result for ``folder``, rebuilt only when the folder's entries change."""
    fp = _fingerprint(folder)
    key = (kind, str(folder))
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == fp:
        return cached[1]
    value = build()
    _CACHE[key] = (fp, value)
    return value


def _index(
    record: Record, project: str
) -> tuple[dict[str, list[Correction]], dict[str, list[Correction]]]:
    """(ref -> corrections, ref -> retractions), each list oldest first."""
    folder = corrections_dir(record, project)

    def build() -> tuple[dict[str, list[Correction]], dict[str, list[Correction]]]:
        fixes: dict[str, list[Correction]] = {}
        retractions: dict[str, list[Correction]] = {}
        for entry in read_entries(folder):
            c = _from_entry(entry, project)
            (retractions if c.kind == "retraction" else fixes).setdefault(c.ref, []).append(c)
        return fixes, retractions

    result: tuple[dict[str, list[Correction]], dict[str, list[Correction]]] = _cached(
        "corrections", folder, build)
    return result


def _accepts_index(record: Record, project: str) -> dict[str, str]:
    """ref -> id of the earliest decision that accepts it."""
    folder = decisions_dir(record, project)

    def build() -> dict[str, str]:
        out: dict[str, str] = {}
        try:
            paths = entries.entry_paths(folder)
        except OSError:
            paths = []
        for path in paths:
            try:
                if b"accepts" not in fsio.read_nofollow(path):
                    continue
                entry = entries.read_entry(path)
            except _ENTRY_DAMAGE:
                continue
            accepts = entry.meta.get("accepts")
            if isinstance(accepts, str):
                out.setdefault(accepts, entry.id)
        return out

    result: dict[str, str] = _cached("accepts", folder, build)
    return result


def list_corrections(record: Record, project: str | None = None) -> list[Correction]:
    """Every correction and retraction of the project, oldest first."""
    project = record.project(project)
    return [_from_entry(e, project) for e in read_entries(corrections_dir(record, project))]


def corrections_of(record: Record, project: str, ref: str) -> list[Correction]:
    """The corrections of ``ref`` (a canonical reference), oldest first."""
    return list(_index(record, project)[0].get(ref, ()))


def retractions_of(record: Record, project: str, ref: str) -> list[Correction]:
    """Every retraction of ``ref``, oldest first. Usually one; two writers retracting at
    the same moment both land, and neither is hidden."""
    return list(_index(record, project)[1].get(ref, ()))


def retraction_of(record: Record, project: str, ref: str) -> Correction | None:
    """The earliest retraction of ``ref``: the one shown as having retracted it."""
    found = retractions_of(record, project, ref)
    return found[0] if found else None


def retracted_refs(record: Record, project: str) -> set[str]:
    """Every retracted version of the project, as ``name@vN`` (``status@vN``)."""
    return set(_index(record, project)[1])


def accepted_by(record: Record, project: str, ref: str) -> str | None:
    """The id of the decision that accepted the proposal ``ref``, or None."""
    return _accepts_index(record, project).get(ref)


def _is_proposal(record: Record, project: str, name: str, version: int) -> bool:
    stream = record.artifact_stream(name, project)
    try:
        data = fsio.read_nofollow(stream.path(version))
        return frontmatter.parse(data).meta.get("proposal") is True
    except (OSError, frontmatter.FrontMatterError):
        return False


def version_ref(kind: str, name: str, version: int) -> str:
    """The reference of a version of ``kind`` "status" or "artifact": ``status@vN`` or
    ``NAME@vN``."""
    return f"status@v{version}" if kind == "status" else f"{name}@v{version}"


def correction_marks(record: Record, project: str) -> Callable[[str], dict[str, Any]]:
    """The corrections and retraction of a version of the project by its reference, as
    `get` shows them (``corrected_by``, ``retracted``): for a listing, which asks once
    per row and reads the corrections once."""
    fixes, retractions = (_index(record, project) if record.has_entries(project, "corrections")
                          else ({}, {}))
    if not fixes and not retractions:
        return lambda ref: {"corrected_by": [], "retracted": None}

    def of(ref: str) -> dict[str, Any]:
        fixed, retracted = fixes.get(ref, ()), retractions.get(ref, ())
        return {"corrected_by": [c.mark_json() for c in fixed],
                "retracted": retracted[0].mark_json() if retracted else None}

    return of


def marks_json(record: Record, project: str, kind: str, name: str, version: int) -> dict[str, Any]:
    """The marks shown on a version wherever it is read: corrections, retraction, acceptance.

    ``kind`` is "status" or "artifact". ``retracted`` is the earliest retraction (the one
    that retracted the version); ``retractions`` lists every one, oldest first, since two
    writers can retract a version at the same moment. When nothing was ever corrected
    this costs one folder listing, plus reading the version's front matter to see whether
    it is a proposal.
    """
    ref = version_ref(kind, name, version)
    out: dict[str, Any] = {"corrected_by": [], "retracted": None, "retractions": [],
                           "accepted_by": None}
    if record.has_entries(project, "corrections"):
        out["corrected_by"] = [c.mark_json() for c in corrections_of(record, project, ref)]
        out["retractions"] = [c.mark_json() for c in retractions_of(record, project, ref)]
        out["retracted"] = out["retractions"][0] if out["retractions"] else None
    if (kind != "status" and _is_proposal(record, project, name, version)
            and record.has_entries(project, "decisions")):
        out["accepted_by"] = accepted_by(record, project, ref)
    return out


def proposal_state(record: Record, project: str, name: str, version: int, proposal: bool) -> str:
    """"proposed" (a proposal no decision accepted yet), "accepted", or "" (no proposal)."""
    if not proposal:
        return ""
    return "accepted" if accepted_by(record, project, f"{name}@v{version}") else "proposed"
