"""The git-aware checks, for a commit: judge what changed, never the whole world.

``git diff --cached`` says what the commit adds, changes, deletes and renames. Versions,
entries and lease generations are immutable: a commit may add them, never change, delete
or rename them. The one change allowed to a committed file is the digest line that
``atlas check --fix`` stamps on a file that had none (front matter and body otherwise
byte-identical). Only the changed files are read, from git's index (what will be
committed), so a one-file commit costs about the same in a record of a hundred files or of
a hundred thousand.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from atlas_files.facts import layout
from atlas_files.facts.errors import BadInput
from atlas_files.linkcheck.filesources import IndexSource
from atlas_files.linkcheck.findings import Report
from atlas_files.storage import frontmatter
from atlas_files.storage.gitcmd import Git, GitFailed, blob, toplevel

IMMUTABLE_WORDS = {"version": "a version", "entry": "an entry", "generation": "a lease generation"}
REMEDY = {
    "version": "versions are immutable; write the next version",
    "entry": "entries are immutable; write a correction (`atlas correct ID --what TEXT`)",
    "generation": "generations are immutable; change a lease with `atlas lease`",
}


@dataclass(frozen=True)
class Change:
    status: str  # A added, M modified, D deleted, R renamed, C copied, T type changed
    path: str  # repo-relative, posix; the new path of a rename
    old: str | None = None  # the old path of a rename or copy
    blob: str | None = None  # the staged content's object id (None for a deletion)

    @property
    def removed(self) -> str | None:
        """The path this change takes out of the tree, if any."""
        if self.status == "D":
            return self.path
        if self.status == "R":
            return self.old
        return None

    @property
    def present(self) -> bool:
        return self.status != "D"


def staged_map(changes: list[Change]) -> dict[str, str | None]:
    """Path -> staged object id, or None for a path the commit removes."""
    out: dict[str, str | None] = {}
    for change in changes:
        gone = change.removed
        if gone is not None:
            out[gone] = None
    for change in changes:
        if change.present:
            out[change.path] = change.blob
    return out


def index_source(repo: Path, changes: list[Change]) -> IndexSource:
    return IndexSource(repo, staged_map(changes))


def repo_root(cwd: Path) -> Path:
    try:
        return toplevel(cwd).resolve()
    except GitFailed:
        raise BadInput(
            f"--staged checks a commit, but {cwd} is not inside a git repository",
            hint="run it inside the repository (the pre-commit hooks do), or drop --staged",
        ) from None


def staged_changes(repo: Path) -> list[Change]:
    """What the commit changes, with the object id of each staged file: reading those by id
    later never makes git read the index again (on a big repository, each read of the
    index costs as much as the rest of the check)."""
    out = Git(repo, read_only=True).run(
        "diff", "--cached", "--raw", "-z", "-M", "--no-ext-diff", "--no-abbrev").out
    items = [os.fsdecode(x) for x in out.split(b"\0")]
    changes: list[Change] = []
    i = 0
    while i < len(items) and items[i].startswith(":"):
        fields = items[i].split()
        status, blob = fields[4][0], fields[3]
        blob_or_none = None if status == "D" or set(blob) == {"0"} else blob
        if status in ("R", "C"):
            changes.append(Change(status, items[i + 2], items[i + 1], blob_or_none))
            i += 3
        else:
            changes.append(Change(status, items[i + 1], None, blob_or_none))
            i += 2
    return changes


def immutable_kind(rel_in_record: tuple[str, ...]) -> str | None:
    """"version", "entry" or "generation" for a path (relative to its record), else None."""
    found = layout.record_file("/".join(rel_in_record))
    if found is None or not found.immutable or (found.kind == layout.ENTRY
                                                 and not found.canonical):
        return None  # a stray note among the entries is no entry: it may change
    return found.kind


def only_stamped(repo: Path, rel: str) -> bool:
    """True if the staged file differs from HEAD's only by a digest line added where HEAD's
    had none: what `atlas check --fix` does, and the one change a version may receive."""
    old, new = blob(repo, f"HEAD:{rel}"), blob(repo, f":{rel}")
    if old is None or new is None:
        return False
    try:
        before, after = frontmatter.parse(old), frontmatter.parse(new)
    except (ValueError, RecursionError, OverflowError):  # damaged: no mere stamp
        return False
    if before.meta.get("digest") is not None or after.meta.get("digest") is None:
        return False
    rest = {k: v for k, v in after.meta.items() if k != "digest"}
    return rest == before.meta and before.body == after.body


def refuse_immutable_changes(report: Report, repo: Path, change: Change, kind: str,
                             shown: str) -> None:
    """Report a change to an immutable file of ``kind`` ("version", ... or "versioned file");
    ``shown`` is how to name the changed path."""
    word = IMMUTABLE_WORDS.get(kind, f"a {kind}")
    if change.status == "D":
        report.add(repo / change.path, 1, "ATL041",
                   f"this commit deletes {shown}, {word}: history is never removed")
    elif change.status == "R" and change.old is not None:
        report.add(repo / change.old, 1, "ATL041",
                   f"this commit renames {shown}, {word}, to {change.path}: a version keeps its "
                   "name for good")
    elif change.status in ("M", "T"):
        if only_stamped(repo, change.path):
            return
        report.add(repo / change.path, 1, "ATL040",
                   f"this commit edits {shown}, {word}: "
                   f"{REMEDY.get(kind, REMEDY['version'])}")
