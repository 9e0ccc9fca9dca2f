"""Recent commits in a code repository, on every branch: who touched which files lately.

The other session is rarely on your branch, so every ref counts (``--all``), except the
stash and notes, which hold no one's work on the tree. Each commit comes with the files it
touched. A commit is dated by its committer date, the one ``git log --since`` filters on,
so a rebased or cherry-picked commit counts from when it was made again.

Read with one ``git log`` whose output is NUL-separated throughout: a subject or a file
name may hold any character git allows and still cannot be mistaken for a separator.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from atlas_files.facts import timeutil
from atlas_files.storage import gitcmd

# Each commit starts with this marker. Two NULs can only meet where a field is empty, so
# a field would have to equal the marker's text for a commit to be split wrongly, and
# the first field after it must be a commit id.
_MARK = b"\0\0\x1eatlas-commit\x1e\0"
# %H id, %ct committer time, %S the ref it was reached from, %aN/%aE author (mailmap
# applied, as the user's git shows it), %s subject. -z ends the header with a NUL, then a
# newline before the first file name when there are files.
_FORMAT = "%x00%x00%x1eatlas-commit%x1e%x00%H%x00%ct%x00%S%x00%aN%x00%aE%x00%s"
_FIELDS = 6
_SHA = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1, or SHA-256 repositories


class Commit(NamedTuple):
    sha: str
    timestamp: int  # committer time, seconds since the epoch
    ref: str  # the branch (or tag, or HEAD) it was reached from
    author: str
    email: str
    subject: str
    files: tuple[str, ...]  # every path it added, changed or deleted (none for a merge)

    @property
    def at(self) -> str:
        return timeutil.format_time(datetime.fromtimestamp(self.timestamp, UTC))


def _ref(name: str) -> str:
    for prefix in ("refs/heads/", "refs/remotes/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _headers(out: bytes) -> list[list[bytes]]:
    """Each whole commit of the output, split into its six header fields and the rest."""
    found = []
    for chunk in out.split(_MARK)[1:]:
        parts = chunk.split(b"\0", _FIELDS)
        if len(parts) > _FIELDS and _SHA.fullmatch(parts[0]) and parts[1].isdigit():
            found.append(parts)  # anything else is not a whole header: nothing to trust
    return found


def _commit(parts: list[bytes]) -> Commit:
    enc = gitcmd.ENCODING
    rest = parts[_FIELDS]
    if rest.startswith(b"\n"):
        rest = rest[1:]  # the line break git puts between the header and the files
    # One decode per commit, then split: a NUL cannot be part of a file name.
    files = tuple(f for f in rest.decode(enc, "replace").split("\0") if f)
    return Commit(parts[0].decode("ascii"), int(parts[1]),
                  _ref(parts[2].decode(enc, "replace")), parts[3].decode(enc, "replace"),
                  parts[4].decode(enc, "replace"), parts[5].decode(enc, "replace"), files)


def parse(out: bytes) -> list[Commit]:
    """The commits of ``git log --format=_FORMAT --name-only -z``, in its order."""
    return [_commit(parts) for parts in _headers(out)]


def recent(repo: Path, since: datetime, *, touching: Callable[[str], bool] | None = None,
           limit: int | None = None, paths: Sequence[str] = (),
           icase: bool = False) -> tuple[list[Commit], int]:
    """(the newest ``limit`` commits on every ref of ``repo`` made at or after ``since``,
    newest first; how many there are in all). With ``touching``, only commits touching a
    file it accepts count; with ``paths`` (files relative to the root, taken literally),
    git itself looks only at commits touching one of them, and lists only those files
    (``icase``: matched as a volume that folds case matches them, git's spelling listed).
    Only the commits returned are decoded, unless ``touching`` has to look at the files of
    all of them."""
    cutoff = int(since.timestamp())
    magic = "literal,icase" if icase else "literal"
    spec = ["--", *(f":({magic}){p}" for p in paths)] if paths else []
    out = gitcmd.Git(repo, read_only=True).run(
        "log", "--exclude=refs/stash", "--exclude=refs/notes/*", "--all",
        f"--max-age={cutoff}", "--source", "--name-only", "--no-renames", "-z",
        "--no-color", "--no-show-signature", f"--format={_FORMAT}", *spec).out
    headers = [(int(p[1]), p) for p in _headers(out)]
    headers = [h for h in headers if h[0] >= cutoff]
    headers.sort(key=lambda h: h[0], reverse=True)  # stable: git's order on ties
    if touching is None:
        return [_commit(p) for _, p in headers[:limit]], len(headers)
    matched = [c for c in (_commit(p) for _, p in headers) if any(map(touching, c.files))]
    return matched[:limit], len(matched)
