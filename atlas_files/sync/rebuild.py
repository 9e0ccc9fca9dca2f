"""This checkout's commits made again on the remote's head: linear history, no merges.

Each local commit is merged onto the new head with `git merge-tree --write-tree` (a merge
computed in the object store, the work tree untouched) and committed with a single parent.
Paths that collided take the remote's bytes (the local file is kept as a draft first); a
config file changed on both sides differently stops the sync for a person to merge.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from atlas_files.storage.gitcmd import Git
from atlas_files.sync import repo
from atlas_files.sync.errors import SyncRefused
from atlas_files.sync.paths import listing


def rebuild(git: Git, git_dir: Path, base: str, head: str, theirs: str,
            lost: dict[str, repo.Change], where: str) -> str:
    """This checkout's commits since ``base``, made again on ``theirs``, one by one; a
    path in ``lost`` takes the remote's bytes. Returns the new head."""
    log = git.run("log", "--reverse", "--no-merges", "-z",
                  "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%B", f"{base}..{head}").out
    prev, prev_tree = theirs, repo.tree_of(git, theirs)
    for entry in log.split(b"\0"):
        if not entry.strip():
            continue
        sha, name, email, date, message = (
            entry.decode("utf-8", "surrogateescape").split("\x1f", 4))
        # With two commits, merge-tree takes their merge base itself: the fetched base
        # for the first commit, and again for each later one against the rebuilt chain.
        done = git.run("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z",
                       prev, sha, ok=(0, 1))
        parts = [p for p in done.out.split(b"\0") if p.strip()]
        tree = parts[0].decode().strip()
        conflicted = {p.decode("utf-8", "surrogateescape") for p in parts[1:]}
        if conflicted - set(lost):
            raise SyncRefused(
                f"{listing(sorted(conflicted - set(lost)))} changed both here and on "
                f"{where}, differently; nothing was integrated or pushed",
                hint="merge them by hand: `git pull --rebase`, resolve, `git rebase "
                "--continue`, then `atlas sync`")
        if conflicted:
            tree = _patched(git, git_dir, tree, [lost[p] for p in sorted(conflicted)])
        if tree == prev_tree:
            continue  # all it added lost the race
        env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date}
        prev = git.committing("commit-tree", tree, "-p", prev, "-F", "-",
                              input=message.encode("utf-8", "surrogateescape"), env=env).text
        prev_tree = tree
    return prev


def _patched(git: Git, git_dir: Path, tree: str, entries: list[repo.Change]) -> str:
    """``tree`` with ``entries`` (mode, blob, path) put in, through a scratch index."""
    index = git_dir / f"atlas-sync-index-{os.getpid()}"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git.run("read-tree", tree, env=env)
        info = b"".join(f"{c.mode} {c.blob}\t{c.path}\0".encode("utf-8", "surrogateescape")
                        for c in entries)
        git.run("update-index", "-z", "--index-info", input=info, env=env)
        return git.out("write-tree", env=env)
    finally:
        with contextlib.suppress(FileNotFoundError):
            index.unlink()
