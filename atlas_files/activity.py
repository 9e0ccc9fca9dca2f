"""Recent commits in a code repository, on every branch: who touched which files lately.

The other session is rarely on your branch, so every ref counts (``--all``), except the
stash and notes, which hold no one's work on the tree. Each commit comes with the files it
touched. A commit is dated by its committer date, the one ``git log --since`` filters on,
so a rebased or cherry-picked commit counts from when it was made again.

Read with one ``git log`` whose output is NUL-separated throughout: a subject or a file
name may hold any character git allows and still cannot be mistaken for a separator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from atlas_files import gitcmd, timeutil

# Each commit starts with this marker. Two NULs can only meet where a field is empty, so
# a field would have to equal the marker's text for a commit to be split wrongly, and
# the first field after it must be a commit id.
_MARK = b"\0\0\x1eatlas-commit\x1e\0"
# %H id, %ct committer time, %S the ref it was reached from, %aN/%aE author (mailmap
# applied, as the user's git shows it), %s subject. -z ends the header with a NUL, then a
# newline before the first file name when there are files.
_FORMAT = "%x00%x00%x1eatlas-commit%x1e%x00%H%x00%ct%x00%S%x00%aN%x00%aE%x00%s"
_FIELDS = 6


@dataclass(frozen=True)
class Commit:
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


def parse(out: bytes) -> list[Commit]:
    """The commits of ``git log --format=_FORMAT --name-only -z``, in its order."""
    commits = []
    for chunk in out.split(_MARK)[1:]:
        parts = chunk.split(b"\0")
        if len(parts) < _FIELDS + 1:
            continue  # not a whole header: nothing from it can be trusted
        sha, stamp, ref, author, email, subject = (
            p.decode(gitcmd.ENCODING, "replace") for p in parts[:_FIELDS])
        if not sha or not all(c in "0123456789abcdef" for c in sha) or not stamp.isdigit():
            continue
        names = parts[_FIELDS:]
        if names and names[0].startswith(b"\n"):
            names[0] = names[0][1:]  # the line break git puts between header and files
        files = tuple(n.decode(gitcmd.ENCODING, "replace") for n in names if n)
        commits.append(Commit(sha, int(stamp), _ref(ref), author, email, subject, files))
    return commits


def recent(repo: Path, since: datetime, *,
           touching: Callable[[str], bool] | None = None) -> list[Commit]:
    """Commits on every ref of ``repo`` made at or after ``since``, newest first; with
    ``touching``, only those touching a file it accepts."""
    cutoff = int(since.timestamp())
    out = gitcmd.run([
        "log", "--exclude=refs/stash", "--exclude=refs/notes/*", "--all",
        f"--max-age={cutoff}", "--source", "--name-only", "--no-renames", "-z",
        "--no-color", "--no-show-signature", f"--format={_FORMAT}",
    ], repo)
    commits = [c for c in parse(out) if c.timestamp >= cutoff]
    if touching is not None:
        commits = [c for c in commits if any(touching(f) for f in c.files)]
    commits.sort(key=lambda c: c.timestamp, reverse=True)  # stable: git's order on ties
    return commits
