"""What exists in a record, learnt from folder listings only and cached per folder.

References (``NAME@vN``, entry ids) and links to version files are judged against this:
does the version exist, is it the newest, was it retracted. Only numbers and names are
kept, never bodies, so memory grows with the number of topics, not with their files.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from atlas_files.facts import layout
from atlas_files.facts.names import is_entry_id, is_name, split_version_ref
from atlas_files.linkcheck.filesources import Source
from atlas_files.protocol import corrections
from atlas_files.storage.record import Record


def canonical_number(digits: str) -> bool:
    """Readers see ``plan.v0002.md``, never ``plan.v2.md`` or ``plan.v00002.md``."""
    return digits.isascii() and layout.is_canonical_number(digits)


@dataclass(frozen=True)
class VersionPath:
    project: str
    name: str  # the topic, or "status"
    version: int

    @property
    def ref(self) -> str:
        return f"{self.name}@v{self.version}"


@dataclass(frozen=True)
class RefState:
    state: str  # ok | missing | superseded | retracted | bad
    detail: str = ""


class RecordIndex:
    def __init__(self, root: Path, source: Source) -> None:
        self.root = root
        self.source = source
        self._versions = lru_cache(maxsize=8192)(self._versions_uncached)
        self._entry_ids = lru_cache(maxsize=256)(self._entry_ids_uncached)
        self._retracted = lru_cache(maxsize=256)(self._retracted_uncached)

    def stream_folder(self, project: str, name: str) -> Path:
        if name == "status":
            return self.root / "projects" / project / "status"
        return self.root / "projects" / project / "artifacts" / name

    def versions(self, project: str, name: str) -> tuple[int, ...]:
        return self._versions(project, name)

    def _versions_uncached(self, project: str, name: str) -> tuple[int, ...]:
        found = set()
        for entry in self.source.listdir(self.stream_folder(project, name)):
            m = layout.VERSION_FILE.fullmatch(entry)
            if m and m.group("name") == name and canonical_number(m.group("number")):
                found.add(int(m.group("number")))
        return tuple(sorted(found))

    def latest(self, project: str, name: str) -> int:
        versions = self.versions(project, name)
        return versions[-1] if versions else 0

    def _entry_ids_uncached(self, project: str) -> frozenset[str]:
        ids = set()
        for sub in ("decisions", "corrections"):
            for entry in self.source.listdir(self.root / "projects" / project / sub):
                if layout.is_entry_file(entry):
                    ids.add(entry[:-3])
        return frozenset(ids)

    def has_entry(self, project: str, entry_id: str) -> bool:
        return entry_id in self._entry_ids(project)

    def _retracted_uncached(self, project: str) -> frozenset[str]:
        try:
            return frozenset(corrections.retracted_refs(Record(self.root), project))
        except Exception:  # noqa: BLE001 - damaged entries are reported where they lie
            return frozenset()

    def retracted(self, project: str) -> frozenset[str]:
        return self._retracted(project)

    def version_of_path(self, path: Path) -> VersionPath | None:
        """The stream version a path inside the record is, if it is one."""
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            return None
        found = layout.record_file("/".join(parts))
        if found is None or found.kind != layout.VERSION:
            return None
        return VersionPath(found.project, found.name, found.number)

    def ref_state(self, project: str, text: object, *, current: bool) -> RefState:
        """How a reference stands. Staleness is asked for only where ``current`` (it can be
        acted on there: an old version's references are history)."""
        if not isinstance(text, str):
            return RefState("bad", f"{text!r} is not a reference")
        value = text.strip()
        if is_entry_id(value):
            if self.has_entry(project, value):
                return RefState("ok")
            return RefState("missing", f"no entry {value} in project {project}")
        split = split_version_ref(value)
        if split is None or not is_name(split[0]) or split[1] < 1:
            return RefState("bad", f"{value!r} is not NAME@vN, status@vN or an entry id")
        name, version = split
        versions = self.versions(project, name)
        if version not in versions:
            label = "the status" if name == "status" else f"topic {name!r}"
            has = f"it is at v{versions[-1]}" if versions else "it has no versions"
            return RefState("missing", f"{label} of project {project} has no v{version} ({has})")
        ref = f"{name}@v{version}"
        if ref in self.retracted(project):
            return RefState("retracted", f"{ref} was retracted")
        if current and version < versions[-1]:
            return RefState("superseded", f"{ref} is superseded: v{versions[-1]} exists")
        return RefState("ok")
