"""Finishing a move of the work tree that a killed sync left half done.

Before a sync checks out the new head (`git reset --keep`), it writes a journal naming the
old head and the new one. A kill in between leaves some files of the move written and
others not, and the branch at either head. The next sync finds the journal and finishes
the move: the branch to the new head, and exactly the paths that differ between the two
heads made as the new head has them. A file there whose bytes are neither the old nor the
new version's, nor a start of the new one (git writes a file in place, so a kill can cut
it short), was written after the kill: a version is kept as a draft first, anything else
stops the sync for a person to look at.
"""

from __future__ import annotations

from atlas_files.storage import fsio
from atlas_files.storage.gitcmd import Git
from atlas_files.storage.record import Record
from atlas_files.sync import drafts, repo
from atlas_files.sync.errors import SyncRefused
from atlas_files.sync.paths import kind, read_only
from atlas_files.sync.state import Local

# The largest file a move is judged by: far over any version's body_limit.
MOVED_LIMIT = 64 << 20


def _nul(paths: list[str]) -> bytes:
    return "\0".join(paths).encode("utf-8", "surrogateescape")


def finish_move(git: Git, facts: repo.Facts, local: Local, record: Record,
                head: str | None) -> tuple[str, list[drafts.Collision]] | None:
    """Finish the move the journal names; returns the new head and any drafts kept, or
    None when there was no move to finish."""
    journal = local.journal()
    if journal is None:
        return None
    old, new = journal.get("old"), journal.get("new")
    branch = f"refs/heads/{facts.branch}"
    if not (isinstance(old, str) and isinstance(new, str)) or \
            journal.get("branch") != branch or head not in (old, new):
        local.end_move()  # the branch moved on since: nothing of it to finish
        return None
    changes = repo.diff(git, old, new)
    # Judged without following a symlink: git's checkout below replaces one, never
    # writes through it.
    present = [c for c in changes if fsio.file_mtime(facts.top / c.path) is not None]
    hashes = git.out("hash-object", "--stdin-paths", input="\n".join(
        c.path for c in present).encode("utf-8", "surrogateescape")).split() if present else []
    seen = dict(zip([c.path for c in present], hashes, strict=True))
    kept = []
    for c in present:
        if seen[c.path] in (c.old_blob, c.blob):
            continue
        try:
            here = fsio.read_nofollow(facts.top / c.path, MOVED_LIMIT)
        except OSError:
            here = None  # a symlink, a pipe or a huge file: nothing atlas or git wrote
        if here is None:
            raise SyncRefused(
                f"a sync was killed while moving files, and {c.path} is now no plain file "
                "atlas can read (a symlink, a named pipe or a file over "
                f"{MOVED_LIMIT >> 20} MiB)", hint="move it aside, then run `atlas sync` again")
        theirs = repo.blob_bytes(git, new, c.path) if c.xy != "D" else b""
        if len(here) < len(theirs) and theirs.startswith(here):
            # git writes a checked-out file in place, so a kill leaves a prefix of the
            # new bytes; atlas publishes whole files only. The checkout below finishes it.
            continue
        rel = facts.to_record(c.path)
        if rel is None or not kind(rel).history:
            raise SyncRefused(
                f"a sync was killed while moving files, and {c.path} now holds bytes that "
                "are neither the old nor the new version",
                hint="move that file aside, then run `atlas sync` again")
        # Someone published here after the kill, under a name the move brings in.
        kept.append(drafts.keep(record, rel, here, theirs))
    git.run("update-ref", branch, new)
    keep = [c.path for c in changes if c.xy != "D"]
    if keep:
        git.run("checkout", "-q", new, "--pathspec-from-file=-", "--pathspec-file-nul",
                input=_nul(keep))
        read_only(facts.top, keep, facts.to_record)
    gone = [c for c in changes if c.xy == "D"]
    if gone:
        git.run("rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                "--pathspec-file-nul", input=_nul([c.path for c in gone]))
        for c in gone:
            if seen.get(c.path) == c.old_blob:
                (facts.top / c.path).unlink()
    local.end_move()
    return new, kept
