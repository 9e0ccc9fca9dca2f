"""`atlas search`: full text over status, artifacts, decisions and corrections.

One public function, ``search``, returns exactly what `atlas search --json` prints. It
reads the record through a derived index (``index.py``: SQLite FTS5 in the record's
``.atlas-cache/``, brought up to date by folder fingerprints on every search, rebuilt
when missing or damaged) and falls back to reading the files directly, with a warning,
when the index cannot be written or this Python has no FTS5. Writers never touch it.

sqlite3 is imported only below this package, and only when a search runs, so no other
command pays for it at start-up.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from atlas_files.facts.errors import BadInput, warn
from atlas_files.search import index, results, store
from atlas_files.search import query as querymod

if TYPE_CHECKING:
    from atlas_files.search.query import Query
    from atlas_files.search.store import Store
    from atlas_files.storage.record import Record

DEFAULT_LIMIT = 20
MAX_LIMIT = 1000
# `--kind` values; correction covers retractions too (a retraction is a kind of
# correction), and retraction alone may be asked for.
KIND_CHOICES = ("status", "artifact", "decision", "correction", "retraction", "task")
_SPARE = 16  # rows fetched beyond the limit, in case some file vanished meanwhile


def _kinds(kinds: Sequence[str]) -> list[str]:
    wanted = list(dict.fromkeys(kinds)) or list(KIND_CHOICES)
    for kind in wanted:
        if kind not in KIND_CHOICES:
            raise BadInput(f"unknown kind {kind[:40]!r}",
                           hint="--kind is one of " + ", ".join(KIND_CHOICES))
    if "correction" in wanted and "retraction" not in wanted:
        wanted.append("retraction")
    return wanted


def search(
    record: Record,
    query: str,
    *,
    kinds: Sequence[str] = (),
    project: str | None = None,
    all_projects: bool = False,
    all_versions: bool = False,
    limit: int = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """Search ``record``: ``{"query", "results": [{"kind", "project", "name", "version",
    "id", "author", "written_at", "snippet", "marks"}]}``, best match first.

    Searches the newest version of each topic and of the status (every version with
    ``all_versions``), every decision, correction and retraction, in ``project`` (the
    default project) or in every project (``all_projects``). Bad input (a query that
    cannot be understood, an unknown kind, a limit out of range, both a project and
    all_projects) raises BadInput before anything is read.
    """
    q = querymod.parse(query)
    wanted = _kinds(kinds)
    if not 1 <= limit <= MAX_LIMIT:
        raise BadInput(f"--limit {limit}: give a number from 1 to {MAX_LIMIT}")
    if all_projects and project:
        raise BadInput("both a project and --all-projects were given",
                       hint="pass one of them: --project NAME searches one project, "
                       "--all-projects every one")
    projects = list(record.config.projects) if all_projects else [record.project(project)]
    return {"query": query, "results": _run(record, q, wanted, projects, all_versions, limit)}


def _run(record: Record, q: Query, kinds: list[str], projects: list[str], all_versions: bool,
         limit: int) -> list[dict[str, Any]]:

    st = _open(record, projects, all_versions)
    try:
        return _answer(st, record, q, kinds, projects, all_versions, limit)
    except sqlite3.DatabaseError:
        if st.kind != "index":
            raise
        # Damaged where the update did not look (a page only the query touches): rebuild
        # once; a scan answers if even that cannot be done.
        st.close()
        try:
            st = index.rebuild_now(record, projects, all_versions)
        except index.Unwritable as exc:
            _say_scanned(exc.reason)
            st = index.open_scan(record, projects, all_versions)
        return _answer(st, record, q, kinds, projects, all_versions, limit)
    finally:
        st.close()


def _open(record: Record, projects: list[str], history: bool) -> Store:
    if not store.has_fts5():
        warn("this Python's SQLite has no FTS5, so there is no search index: the record's "
             "files were read directly for this search (slower, same matches)")
        return index.open_scan(record, projects, history)
    try:
        return index.open_index(record, projects, history)
    except index.Unwritable as exc:
        _say_scanned(exc.reason)
        return index.open_scan(record, projects, history)


def _say_scanned(reason: str) -> None:
    warn(f"the search index cannot be written ({reason}): the record's files were read "
         "directly for this search (slower, same results)")


def _answer(st: Store, record: Record, q: Query, kinds: list[str], projects: list[str],
            all_versions: bool, limit: int) -> list[dict[str, Any]]:
    hits = results.matching(st, q, kinds, projects, all_versions, limit + _SPARE)
    out = results.results(st, record, q, hits, limit)
    damaged = store.damaged_count(st, projects)
    if damaged:
        many = damaged != 1
        warn(f"{damaged} file{'s' if many else ''} in the searched projects cannot be read "
             f"and {'are' if many else 'is'} left out of the search (`atlas check` says "
             "which)")
    return out
