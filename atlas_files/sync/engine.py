"""The steps of one sync: commit what atlas wrote here, fetch, check, integrate, push.

The push without force is the compare-and-set: the remote's ref moves only if it still
points where this checkout last saw it, so of two clones that published the same version
number (or lease generation) only the first push lands. The other fetches, finds the
path added on both sides with different bytes, keeps its own file as a draft, rebuilds
its other commits on the fetched head (no merge commits: linear history) and pushes again.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from dataclasses import dataclass, field

from atlas_files.config import SyncConfig
from atlas_files.errors import AtlasError, BadInput
from atlas_files.record import Record
from atlas_files.sync import drafts, repo
from atlas_files.sync.git import (
    NETWORK_TIMEOUT_S,
    Done,
    Git,
    GitFailed,
    check_version,
    failed,
)
from atlas_files.sync.paths import kind
from atlas_files.sync.state import Local, clear_stale_locks

# A push lost to a faster one is retried after a fetch, at most this often and this long,
# with a random pause that grows with the attempts (so racing clones spread out).
MAX_ATTEMPTS = 60
MAX_SECONDS = 180.0
# What git says when a push lost the race (the ref moved since we fetched).
_LOST_RACE = ("fetch first", "non-fast-forward", "cannot lock ref", "failed to update ref",
              "but expected", "stale info", "failed to lock")
_NO_IDENTITY = ("tell me who you are", "unable to auto-detect", "empty ident")
_LIST_LIMIT = 5


class SyncRefused(AtlasError):
    """History would be rewritten (a published file changed or deleted, a remote that
    rewrote its history) or a config file changed on both sides: nothing is pushed."""

    exit_code = 1


class NotPushed(GitFailed):
    """The remote kept moving for longer than the retries allow."""


@dataclass
class Tally:
    came_in: dict[str, None] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    collisions: list[drafts.Collision] = field(default_factory=list)
    pushes: list[tuple[str | None, str]] = field(default_factory=list)
    retries: int = 0
    recovered: list[str] = field(default_factory=list)


def _listing(paths: list[str]) -> str:
    shown = ", ".join(paths[:_LIST_LIMIT])
    return shown + (f" and {len(paths) - _LIST_LIMIT} more" if len(paths) > _LIST_LIMIT else "")


class Engine:
    """One sync of one checkout; the caller holds the checkout's lock (``local``)."""

    def __init__(self, record: Record, cfg: SyncConfig, identity: str | None) -> None:
        check_version()
        self.record = record
        self.cfg = cfg
        self.identity = identity
        self.local = Local(record.root)
        self.git = Git(record.root)
        self.tally = Tally()
        self.head: str | None = None
        self.theirs: str | None = None
        self._ident_env: dict[str, str] = {}

    # -- the checkout ---------------------------------------------------------------------

    def start(self, died_at: float | None) -> None:
        """Learn where the record lies in git; tidy up after a sync that was killed."""
        self.facts = repo.read_facts(self.git, self.record.root)
        self.git = Git(self.facts.top, {"GIT_REFLOG_ACTION": "atlas sync"})
        self.branch = self.cfg.branch or self.facts.branch
        self.local_ref = f"refs/heads/{self.facts.branch}"
        self.tracking = f"refs/remotes/{self.cfg.remote}/{self.branch}"
        if died_at is not None:
            self.tally.recovered += clear_stale_locks(
                self.facts.git_dir, self.facts.common_dir, [self.local_ref, self.tracking],
                died_at)
        self._refresh()
        self._recover()

    @property
    def where(self) -> str:
        return f"{self.cfg.remote}/{self.branch}"

    def _refresh(self) -> None:
        found = repo.heads(self.git, [self.local_ref, self.tracking])
        self.head = found.get(self.local_ref)
        self.theirs = found.get(self.tracking)

    def _rel(self, git_path: str) -> str | None:
        return self.facts.to_record(git_path)

    # -- step 1: commit what atlas wrote here ---------------------------------------------

    def commit_local(self, what: str) -> list[str]:
        """Commit the record's new files (and atlas.yaml, the README, the .gitignore when
        changed); refuse a published file changed or deleted in place. Returns the paths
        committed, relative to the record."""
        changes = repo.status(self.git)
        repo.require_clean_index(changes)
        new: list[str] = []
        edited: list[str] = []
        outside: list[str] = []
        left: list[str] = []
        for c in changes:
            rel = self._rel(c.path)
            if rel is None:
                if c.xy != "??":
                    outside.append(c.path)
                continue
            k = kind(rel)
            if c.xy == "??":
                (new if k.travels else left).append(c.path)
            elif k.history:
                # A staged new file (perhaps stamped by `atlas check --fix` since) is new;
                # any other state of a tracked history file is an edit or a deletion.
                if c.xy in ("A ", "AM"):
                    new.append(c.path)
                elif c.xy != "AD":
                    edited.append(c.path)
            elif k.what == "config" and "D" not in c.xy:
                new.append(c.path)
            else:
                left.append(c.path)
        if edited:
            raise SyncRefused(
                "history is append-only, but published files were changed or deleted in "
                f"place here: {_listing(edited)}; nothing was committed or pushed",
                hint="put each back (`git checkout -- PATH`) and write the change as a new "
                "version (`atlas put NAME`) or a correction (`atlas correct REF`)",
            )
        if outside and self.facts.prefix:
            raise BadInput(
                "the record lies inside a repository with uncommitted changes outside it "
                f"({_listing(outside)}); atlas sync moves the whole checkout to the "
                "remote's head, so it will not run over them",
                hint="commit or stash them, or give the record a branch of its own checked "
                "out as a worktree beside the code (see docs/sync.md)",
            )
        self.tally.left_out = [r for r in (self._rel(p) for p in left) if r is not None]
        if not new:
            return []
        listing = "\0".join(new).encode("utf-8", "surrogateescape")
        self.git.run("add", "--pathspec-from-file=-", "--pathspec-file-nul", input=listing)
        rels = [r for r in (self._rel(p) for p in new) if r is not None]
        message = f"atlas: {what}\n\n" + "\n".join(
            kind(r).describe() if kind(r).history else r for r in rels[:50])
        if len(rels) > 50:
            message += f"\n... and {len(rels) - 50} more"
        self._with_identity("commit", "-q", "--no-verify", "-m", message,
                            "--pathspec-from-file=-", "--pathspec-file-nul", input=listing)
        self._refresh()
        return rels

    def _with_identity(self, *args: str, input: bytes | None = None,
                       env: dict[str, str] | None = None) -> Done:
        """Run a committing git command; where git knows no user, commit as the acting
        identity rather than fail."""
        done = self.git.run(*args, input=input, env={**(env or {}), **self._ident_env},
                            ok=(0, 128))
        if done.code != 0 and not self._ident_env and \
                any(m in done.err.lower() for m in _NO_IDENTITY):
            who = self.identity or "atlas"
            self._ident_env = {"GIT_COMMITTER_NAME": who, "GIT_AUTHOR_NAME": who,
                               "GIT_COMMITTER_EMAIL": f"{who}@atlas.invalid",
                               "GIT_AUTHOR_EMAIL": f"{who}@atlas.invalid"}
            done = self.git.run(*args, input=input, env={**(env or {}), **self._ident_env},
                                ok=(0, 128))
        if done.code != 0:
            raise failed(args, done)
        return done

    # -- steps 2-4: fetch, check, integrate ------------------------------------------------

    def fetch(self) -> None:
        done = self.git.run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                            self.cfg.remote, f"+refs/heads/{self.branch}:{self.tracking}",
                            ok=(0, 1, 128), timeout=NETWORK_TIMEOUT_S)
        if done.code != 0:
            if "couldn't find remote ref" not in done.err:
                err = failed(("fetch", self.cfg.remote), done)
                raise GitFailed(err.message, hint=(
                    f"check that the remote {self.cfg.remote!r} exists (`git remote -v`) and "
                    "that you can reach it; sync.remote in atlas.yaml names another"))
            self.local.fetched()
            self.head = repo.heads(self.git, [self.local_ref]).get(self.local_ref)
            self.theirs = None  # the branch is not on the remote (yet): the push makes it
            return
        self.local.fetched()
        self._refresh()

    def pull(self) -> None:
        before = self.theirs
        self.fetch()
        self.integrate(before)

    def integrate(self, before: str | None) -> None:
        head, theirs = self.head, self.theirs
        if theirs is None or head == theirs:
            return
        if head is None:
            raise BadInput("this checkout has no commit yet and the remote's branch exists",
                           hint="clone the remote instead (`git clone URL DIR`), then sync")
        base = repo.merge_base(self.git, head, theirs)
        if base is None:
            raise SyncRefused(
                f"this checkout and {self.where} share no history",
                hint="clone the remote (`git clone URL DIR`) and write there; see docs/sync.md")
        if base == theirs:
            return  # only this side moved: the push will say if it still may
        if before and before != theirs and not repo.is_ancestor(self.git, before, theirs):
            raise SyncRefused(
                f"{self.where} was rewritten (force-pushed): it no longer contains "
                f"{before[:12]}, which it held before; history is append-only, so nothing "
                "was integrated or pushed",
                hint="ask whoever force-pushed to push the lost commits back (they are in "
                f"this checkout as {before[:12]}), then sync")
        remote = repo.diff(self.git, base, theirs)
        self._check_history(remote, base, theirs, "on the remote")
        if base == head:
            self._move(head, theirs)
            self._came_in(remote)
            return
        local = repo.diff(self.git, base, head)
        self._check_history(local, base, head, "in this checkout's commits")
        if self.facts.prefix:
            outside = [c.path for c in local if self._rel(c.path) is None]
            if outside:
                raise BadInput(
                    "this checkout has commits outside the record that are not on the remote "
                    f"({_listing(outside)}); atlas sync pushes only the record's own commits",
                    hint="push them yourself (`git push`), or keep the record on a branch of "
                    "its own checked out as a worktree (docs/sync.md)")
        added = {c.path: c for c in remote if c.xy == "A"}
        lost = {c.path: added[c.path] for c in local
                if c.xy == "A" and c.path in added and added[c.path].blob != c.blob}
        for path in lost:
            rel = self._rel(path) or path
            self.tally.collisions.append(drafts.keep(
                self.record, rel, repo.blob_bytes(self.git, head, path),
                repo.blob_bytes(self.git, theirs, path)))
        new = self._rebuild(base, head, theirs, lost)
        self._move(head, new)
        self._came_in(remote)

    def _came_in(self, changes: list[repo.Change]) -> None:
        for c in changes:
            rel = self._rel(c.path)
            if rel is not None and c.xy != "D":
                self.tally.came_in[rel] = None

    def _check_history(self, changes: list[repo.Change], old: str, new: str,
                       where: str) -> None:
        bad = [c.path for c in changes if c.xy != "A" and (rel := self._rel(c.path))
               and kind(rel).history]
        if not bad:
            return
        culprit = self.git.out("log", "-1", "--format=%h by %an: %s", f"{old}..{new}", "--",
                               bad[0])
        if where == "on the remote":
            hint = (f"published history was changed {where} ({culprit}); whoever can push "
                    "there should restore those files (`git revert`), then everyone syncs")
        else:
            hint = (f"a local commit changed published history ({culprit}); restore the "
                    f"files (`git checkout {old[:12]} -- PATH`, then `git commit`) and sync")
        raise SyncRefused(
            "history is append-only, but published files were changed or deleted "
            f"{where}: {_listing(bad)}; nothing was integrated or pushed", hint=hint)

    def _rebuild(self, base: str, head: str, theirs: str,
                 lost: dict[str, repo.Change]) -> str:
        """This checkout's commits since ``base``, made again on ``theirs``, one by one;
        a path in ``lost`` takes the remote's bytes. Returns the new head."""
        log = self.git.run("log", "--reverse", "--no-merges", "-z",
                           "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%B", f"{base}..{head}").out
        prev, prev_tree = theirs, repo.tree_of(self.git, theirs)
        for record in log.split(b"\0"):
            if not record.strip():
                continue
            sha, name, email, date, message = (
                record.decode("utf-8", "surrogateescape").split("\x1f", 4))
            done = self.git.run("merge-tree", "--write-tree", "--name-only", "--no-messages",
                                "-z", prev, sha, ok=(0, 1))
            parts = [p for p in done.out.split(b"\0") if p.strip()]
            tree = parts[0].decode().strip()
            conflicted = {p.decode("utf-8", "surrogateescape") for p in parts[1:]}
            if conflicted - set(lost):
                paths = sorted(conflicted - set(lost))
                raise SyncRefused(
                    f"{_listing(paths)} changed both here and on {self.where}, differently; "
                    "nothing was integrated or pushed",
                    hint="merge them by hand: `git pull --rebase`, resolve, `git rebase "
                    "--continue`, then `atlas sync`")
            if conflicted:
                tree = self._patched(tree, [lost[p] for p in sorted(conflicted)])
            if tree == prev_tree:
                continue  # all it added lost the race
            env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
                   "GIT_AUTHOR_DATE": date}
            prev = self._with_identity("commit-tree", tree, "-p", prev, "-F", "-",
                                       input=message.encode("utf-8", "surrogateescape"),
                                       env=env).text
            prev_tree = tree
        return prev

    def _patched(self, tree: str, entries: list[repo.Change]) -> str:
        """``tree`` with ``entries`` (mode, blob, path) put in, through a scratch index."""
        index = self.facts.git_dir / f"atlas-sync-index-{os.getpid()}"
        env = {"GIT_INDEX_FILE": str(index)}
        try:
            self.git.run("read-tree", tree, env=env)
            info = b"".join(f"{c.mode} {c.blob}\t{c.path}\0".encode("utf-8", "surrogateescape")
                            for c in entries)
            self.git.run("update-index", "-z", "--index-info", input=info, env=env)
            return self.git.out("write-tree", env=env)
        finally:
            with contextlib.suppress(FileNotFoundError):
                index.unlink()

    # -- moving the work tree, and finishing a move a killed sync left --------------------

    def _move(self, old: str, new: str) -> None:
        """Check out ``new`` in place of ``old``, under a journal: a sync killed midway
        leaves it for the next sync, which finishes the move (``_recover``)."""
        self.local.begin_move({"branch": self.local_ref, "old": old, "new": new})
        done = self.git.run("reset", "-q", "--keep", new, ok=(0, 1, 128))
        if done.code != 0:
            self.local.end_move()
            raise GitFailed(
                f"could not move the checkout to {self.where}'s head: {done.err[-300:]}",
                hint="a file in the way is not atlas's: move it aside, then `atlas sync`")
        self.local.end_move()
        self.head = new

    def _recover(self) -> None:
        journal = self.local.journal()
        if journal is None:
            return
        old, new = journal.get("old"), journal.get("new")
        if not (isinstance(old, str) and isinstance(new, str)) or \
                journal.get("branch") != self.local_ref or self.head not in (old, new):
            self.local.end_move()  # the branch moved on since: nothing of it to finish
            return
        changes = repo.diff(self.git, old, new)
        top = self.facts.top
        present = [c for c in changes if (top / c.path).is_file()]
        hashes = self.git.out("hash-object", "--stdin-paths", input="\n".join(
            c.path for c in present).encode("utf-8", "surrogateescape")).split() \
            if present else []
        seen = dict(zip([c.path for c in present], hashes, strict=True))
        for c in present:
            if seen[c.path] in (c.old_blob, c.blob):
                continue
            rel = self._rel(c.path)
            if rel is None or not kind(rel).history:
                raise SyncRefused(
                    f"a sync was killed while moving files, and {c.path} now holds bytes "
                    "that are neither the old nor the new version",
                    hint="move that file aside, then run `atlas sync` again")
            # Someone published here after the kill, under a name the move brings in.
            self.tally.collisions.append(drafts.keep(
                self.record, rel, (top / c.path).read_bytes(),
                repo.blob_bytes(self.git, new, c.path)))
        self.git.run("update-ref", self.local_ref, new)
        keep = [c.path for c in changes if c.xy != "D"]
        if keep:
            self.git.run("checkout", "-q", new, "--pathspec-from-file=-",
                         "--pathspec-file-nul",
                         input="\0".join(keep).encode("utf-8", "surrogateescape"))
        gone = [c for c in changes if c.xy == "D"]
        if gone:
            self.git.run("rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                         "--pathspec-file-nul",
                         input="\0".join(c.path for c in gone).encode("utf-8",
                                                                       "surrogateescape"))
            for c in gone:
                if seen.get(c.path) == c.old_blob:
                    (top / c.path).unlink()
        self.local.end_move()
        self.head = new
        self.tally.recovered.append(f"finished moving to {new[:12]}")

    # -- step 5: push, and try again after a lost race ------------------------------------

    def push(self) -> bool:
        """Push the head without force; False if the remote moved first."""
        assert self.head is not None
        done = self.git.run("push", "--porcelain", self.cfg.remote,
                            f"{self.head}:refs/heads/{self.branch}", ok=(0, 1, 128),
                            timeout=NETWORK_TIMEOUT_S)
        if done.code == 0:
            self.tally.pushes.append((self.theirs, self.head))
            self.theirs = self.head
            return True
        said = done.out.decode("utf-8", "replace") + done.err
        if any(m in said for m in _LOST_RACE):
            return False
        raise failed(("push", self.cfg.remote), done)

    def exchange(self, *, fetch_first: bool) -> None:
        """Fetch and integrate (if asked), then push until the remote takes it."""
        deadline = time.monotonic() + MAX_SECONDS
        if fetch_first:
            self.pull()
        attempt = 0
        while self.head is not None and self.head != self.theirs:
            if self.push():
                return
            attempt += 1
            self.tally.retries += 1
            if attempt >= MAX_ATTEMPTS or time.monotonic() > deadline:
                raise NotPushed(
                    f"{self.where} kept moving: {attempt} pushes lost the race in a row",
                    hint="what was written here is committed here and not lost; run "
                    "`atlas sync` again")
            time.sleep(random.uniform(0, min(1.0, 0.02 * 2 ** min(attempt, 6))))
            self.pull()

    # -- what happened ----------------------------------------------------------------------

    def went_out(self) -> list[str]:
        out: dict[str, None] = {}
        for old, new in self.tally.pushes:
            if old is None:
                listing = self.git.run("ls-tree", "-r", "--name-only", "-z", new).out
                paths = [p.decode("utf-8", "surrogateescape")
                         for p in listing.split(b"\0") if p]
            else:
                paths = [c.path for c in repo.diff(self.git, old, new) if c.xy != "D"]
            for p in paths:
                rel = self._rel(p)
                if rel is not None:
                    out[rel] = None
        return list(out)

