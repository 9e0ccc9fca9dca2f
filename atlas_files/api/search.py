"""`atlas search`: full text over status, topics, decisions, corrections and retractions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from atlas_files import search as searchmod
from atlas_files.api import Worker, reads


@dataclass(frozen=True)
class SearchResults:
    doc: dict[str, Any]

    @property
    def results(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.doc["results"]
        return rows

    def to_json(self) -> dict[str, Any]:
        return self.doc


@reads
def search(worker: Worker, query: str, *, kinds: Sequence[str] = (),
           all_projects: bool = False, all_versions: bool = False,
           limit: int = searchmod.DEFAULT_LIMIT) -> SearchResults:
    """Ranked results, best first; the index under .atlas-cache/ is brought up to date
    (or the files are read directly where it cannot be written)."""
    return SearchResults(searchmod.search(
        worker.record, query, kinds=kinds, project=worker.project, all_projects=all_projects,
        all_versions=all_versions, limit=limit))
