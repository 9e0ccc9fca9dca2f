"""The three commit checks the pre-commit hooks run, each over what the commit changes."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from atlas_files.check import moves, staged
from atlas_files.check.families import check_families, is_versioned
from atlas_files.check.routing import Links
from atlas_files.check.run import start_run
from atlas_files.check.walk import check_changed
from atlas_files.linkcheck.filesources import IndexSource
from atlas_files.linkcheck.findings import Report
from atlas_files.linkcheck.links import is_markdown
from atlas_files.storage.record import holds_record


def _in_scope(path: Path, given: list[Path]) -> bool:
    return not given or any(path == p or p in path.parents for p in given)


def _present(repo: Path, changes: list[staged.Change], given: list[Path]) -> list[Path]:
    """The files the commit adds or changes (limited to ``given`` if any)."""
    return [repo / c.path for c in changes if c.present and _in_scope(repo / c.path, given)]


class _Records:
    """Which record (folder holding atlas.yaml, on disk or staged) a path lies in."""

    def __init__(self, repo: Path, source: IndexSource, explicit: Path | None) -> None:
        self.repo = repo
        self.source = source
        self.explicit = explicit
        self._cache: dict[Path, Path | None] = {}

    def of(self, path: Path) -> Path | None:
        if self.explicit is not None:
            ok = path == self.explicit or self.explicit in path.parents
            return self.explicit if ok else None
        folder = path.parent
        walked = []
        found: Path | None = None
        while True:
            if folder in self._cache:
                found = self._cache[folder]
                break
            walked.append(folder)
            # On disk: pre-commit leaves the working tree as staged, and asking git about
            # every folder on the way up would cost a process each.
            if holds_record(folder):
                found = folder
                break
            if folder == self.repo or self.repo not in folder.parents:
                break
            folder = folder.parent
        for f in walked:
            self._cache[f] = found
        return found


def staged_record(report: Report, repo: Path, changes: list[staged.Change], given: list[Path],
                  explicit: Path | None) -> None:
    source = staged.index_source(repo, changes)
    records = _Records(repo, source, explicit)
    changed: dict[Path, list[Path]] = defaultdict(list)
    for change in changes:
        pairs = [(change.path, change.status == "D")]
        if change.status == "R" and change.old is not None:
            pairs.append((change.old, True))
        for rel, removed in pairs:
            path = repo / rel
            if not _in_scope(path, given):
                continue
            root = records.of(path)
            if root is None:
                continue
            kind = staged.immutable_kind(path.relative_to(root).parts)
            if kind is not None and (removed or change.status in ("M", "T")):
                staged.refuse_immutable_changes(report, repo, change, kind,
                                                path.relative_to(root).as_posix())
            if not removed:
                changed[root].append(path)
    try:
        for root, files in sorted(changed.items()):
            check_changed(start_run(root, report, source), files)
        moves.check_moves(report, repo, changes, source)
    finally:
        source.close()


def staged_links(report: Report, repo: Path, changes: list[staged.Change],
                 given: list[Path], mkdocs: Path | None = None,
                 run_site_hooks: bool = False) -> None:
    source = staged.index_source(repo, changes)
    files = given or _present(repo, changes, [])
    try:
        Links(report, source, mkdocs=mkdocs, run_hooks=run_site_hooks).check_files(
            f for f in files if is_markdown(f))
        moves.check_moves(report, repo, changes, source)
    finally:
        source.close()


def staged_versions(report: Report, repo: Path, changes: list[staged.Change],
                    given: list[Path]) -> None:
    source = staged.index_source(repo, changes)
    files = given or _present(repo, changes, [])
    try:
        check_families(report, source, [f for f in files if is_versioned(f)])
    finally:
        source.close()
    for change in changes:
        for rel in (change.path, change.old):
            if rel is None or not is_versioned(rel):
                continue
            gone = change.removed == rel
            if gone or (rel == change.path and change.status in ("M", "T")):
                staged.refuse_immutable_changes(report, repo, change, "versioned file", rel)
