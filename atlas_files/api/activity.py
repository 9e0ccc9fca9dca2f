"""Who is working where in the code repository: recent commits on every branch, and the
path leases around them. ``activity`` is `atlas activity`; ``repository_section`` is the
``repository`` key of the session briefing (`atlas begin`).

The repository is the git repository holding the current folder (or ``repo``); the
record, if the worker has one, may live anywhere else.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, NamedTuple

from atlas_files.api import Worker
from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput
from atlas_files.facts.text import field
from atlas_files.protocol.activity import Commit, recent
from atlas_files.protocol.leases import Lease, problems_and_leases
from atlas_files.protocol.leases.paths import check_glob, check_globs, covers, is_literal, overlaps
from atlas_files.storage import gitcmd

__all__ = ["LIMITS", "Activity", "activity", "repository_briefing", "repository_section",
           "repository_status"]

# Printed by every `atlas activity` (text, and the JSON `limits` key) and carried in the
# briefing: a reader who sees no commit must not conclude that nobody is working there.
LIMITS = (
    "This shows commits and path leases, not work in progress: a session that took no "
    "lease and has not committed yet is invisible here, and so is work on branches this "
    "clone has not fetched (`git fetch` first to see what others pushed). Ages trust the "
    "committers' clocks. Path leases are advisory."
)
DEFAULT_SINCE = "24h"
DEFAULT_LIMIT = 50  # commits listed; `total` counts them all
SECTION_LIMIT = 10  # commits in the session briefing, which has a length budget
FILES_SHOWN = 20  # files listed per commit; `files_more` counts the rest
LONGEST_SINCE_S = 366 * 86400.0


class Activity(NamedTuple):
    repo: str
    since: str
    since_at: str
    read_at: str
    paths: tuple[str, ...]
    commits: tuple[Commit, ...]  # newest first, at most the limit
    total: int  # every commit that matched, listed or not
    leases: tuple[Lease, ...] | None  # None: the worker has no record
    record: str | None
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        read_at = timeutil.parse_time(self.read_at).timestamp()
        return {
            "repo": self.repo,
            "since": self.since,
            "since_at": self.since_at,
            "read_at": self.read_at,
            "paths": list(self.paths),
            "total": self.total,
            "shown": len(self.commits),
            "commits": [self._commit(c, read_at) for c in self.commits],
            "record": self.record,
            "leases": None if self.leases is None else [x.to_json() for x in self.leases],
            "problems": list(self.problems),
            "limits": LIMITS,
        }

    def _commit(self, c: Commit, read_at: float) -> dict[str, Any]:
        # With --paths, the files asked about come first, so the cap never hides them.
        files = sorted(c.files, key=lambda f: not self._asked(f)) if self.paths else c.files
        return {"sha": c.sha, "ref": c.ref, "author": c.author, "email": c.email,
                "at": c.at, "age_s": round(read_at - c.timestamp), "subject": c.subject,
                "files": list(files[:FILES_SHOWN]),
                "files_more": max(0, len(files) - FILES_SHOWN)}

    def _asked(self, path: str) -> bool:
        return any(covers(g, path) for g in self.paths)


def _since(text: str) -> float:
    seconds = timeutil.parse_duration(text)
    if not 0 < seconds <= LONGEST_SINCE_S:
        raise BadInput(f"--since {text} is outside 1s..366d",
                       hint="e.g. --since 2h, --since 24h, --since 7d")
    return seconds


def _folders(root: Path, raw: Sequence[str]) -> dict[str, bool]:
    """Each checked glob, and whether it names a folder (anything under it counts): written
    with a trailing ``/``, or a plain path that is a folder in the repository."""
    out: dict[str, bool] = {}
    for text in raw:
        glob = check_glob(text, "the path (--paths)")
        out[glob] = out.get(glob, False) or text.endswith("/") or glob == "**" or (
            is_literal(glob) and (root / glob).is_dir())
    return out


def _leases(worker: Worker, folders: dict[str, bool]
            ) -> tuple[tuple[Lease, ...], tuple[str, ...]]:
    """The unexpired path leases meeting the asked paths (every path lease if none)."""
    problems, leases = problems_and_leases(worker.record)
    held = [lease for lease in leases if lease.covers_paths]
    if folders:
        held = [lease for lease in held
                if any(overlaps(mine, g, b_folder=f) for mine in lease.paths
                       for g, f in folders.items())]
    return tuple(held), tuple(problems)


def activity(worker_or_repo: Worker | str | os.PathLike[str] | None = None, *,
             paths: Sequence[str] = (), since: str = DEFAULT_SINCE,
             repo: str | os.PathLike[str] | None = None,
             limit: int | None = DEFAULT_LIMIT) -> Activity:
    """Commits on every ref within ``since`` (``24h``, ``90m``, ``7d``), newest first, with
    author, time, subject and files; with ``paths`` (globs relative to the repository
    root) only those touching them. Given a Worker, also the unexpired path leases (those
    meeting ``paths``, if given) from its record. The repository is ``repo``, else a path
    given as the first argument, else the one holding the current folder; NotARepository
    (exit 2) outside one."""
    worker = worker_or_repo if isinstance(worker_or_repo, Worker) else None
    start: str | os.PathLike[str] = Path.cwd()
    if repo is not None:
        start = repo
    elif worker_or_repo is not None and not isinstance(worker_or_repo, Worker):
        start = worker_or_repo
    root = gitcmd.toplevel(start)
    seconds = _since(since)
    globs = check_globs(paths, "the path (--paths)")  # also the limit on how many
    folders = _folders(root, paths)
    at = timeutil.now()
    cutoff = at - timedelta(seconds=seconds)

    def touching(path: str) -> bool:
        return any(covers(g, path) for g in globs)

    shown, total = recent(root, cutoff, touching=touching if globs else None,
                          limit=None if limit is None or limit <= 0 else limit)
    leases, problems = _leases(worker, folders) if worker else (None, ())
    return Activity(str(root), since, timeutil.format_time(cutoff), timeutil.format_time(at),
                    globs, tuple(shown), total, leases,
                    str(worker.record.root) if worker else None, problems)


def repository_status(worker: Worker, paths: Sequence[str] = ()
                      ) -> tuple[dict[str, Any] | None, str | None]:
    """(the briefing's repository section, None), or (None, why there is none): the
    current folder is not inside a git repository, or git is missing."""
    try:
        return activity(worker, paths=paths, limit=SECTION_LIMIT).to_json(), None
    except gitcmd.NotARepository as exc:
        return None, exc.message


def repository_section(worker: Worker, paths: Sequence[str] = ()) -> dict[str, Any] | None:
    """The ``repository`` key of `atlas begin`: commits within 24h on every ref, newest
    first (at most SECTION_LIMIT, ``total`` counts all), with author, age, subject and
    files, plus the unexpired leases covering ``paths`` (every path lease if none);
    None outside a git repository (``repository_status`` also says why)."""
    return repository_status(worker, paths)[0]


def repository_briefing(worker: Worker, paths: Sequence[str] = ()
                        ) -> tuple[dict[str, Any] | None, list[str]]:
    """(the ``repository`` key, the briefing's text lines for it): one line per commit
    (age, author, branch, subject, files), the path leases, and the limits; outside a git
    repository (None, one line saying why)."""
    section, reason = repository_status(worker, paths)
    if section is None:
        return None, [f"Repository: none ({reason})."]
    return section, briefing_lines(section)


BRIEF_COMMITS = 5  # commit lines in the briefing's text (the JSON has SECTION_LIMIT)
BRIEF_LEASES = 5  # lease lines in it
BRIEF_LINE = 160  # characters of one line: the briefing has a length budget
BRIEF_LIMITS = ("Commits and path leases only: a session that took no lease and has not "
                "committed yet is invisible here.")


def _clip(line: str) -> str:
    # A committed file name, an author or a subject may hold a newline: escaped, the
    # line stays one line of atlas's.
    return field(line, BRIEF_LINE)


def briefing_lines(section: dict[str, Any]) -> list[str]:
    """The section as the briefing's text: a few short lines, since the briefing never cuts
    them (its budget cuts the other sections around them)."""
    where = f" touching {', '.join(section['paths'])}" if section["paths"] else ""
    lines = [_clip(f"Repository {section['repo']}: {section['total']} commit(s) on all "
                   f"branches in the last {section['since']}{where}, newest first:")]
    for c in section["commits"][:BRIEF_COMMITS]:
        files = ", ".join(c["files"])
        more = len(c["files"]) + c["files_more"]
        lines.append(_clip(f"- {timeutil.format_duration(max(0, c['age_s']))} ago, "
                           f"{c['author']} on {c['ref']}: {c['subject']} [{more} file(s): "
                           f"{files}]"))
    if section["total"] > min(section["shown"], BRIEF_COMMITS):
        lines.append(f"- and {section['total'] - min(section['shown'], BRIEF_COMMITS)} more: "
                     "`atlas activity` lists them")
    held = section["leases"] or []
    for lease in held[:BRIEF_LEASES]:
        left = timeutil.format_duration(lease["expires_in_s"] or 0)
        lines.append(_clip(f"- lease {lease['resource']}: {lease['holder']} holds "
                           f"{', '.join(lease['paths'])} for {left} more: {lease['why']}"))
    if len(held) > BRIEF_LEASES:
        lines.append(f"- and {len(held) - BRIEF_LEASES} more path leases: `atlas lease ls`")
    lines.append(BRIEF_LIMITS)
    return lines
