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
import time
from pathlib import Path
from typing import Any

from atlas_files.facts import layout
from atlas_files.facts.errors import AtlasError, BadInput
from atlas_files.storage.config import CONFIG_NAME, SyncConfig, from_mapping
from atlas_files.storage.frontmatter import YamlError, load_yaml
from atlas_files.storage.gitcmd import (
    NETWORK_TIMEOUT_S,
    Git,
    Started,
    check_version,
    failed,
)
from atlas_files.storage.record import Record
from atlas_files.sync import accepted, drafts, gitdir, incoming, repo
from atlas_files.sync.errors import GitFailed, NotPushed, SyncRefused, UnsafeContent
from atlas_files.sync.paths import kind, listing, read_only
from atlas_files.sync.rebuild import rebuild
from atlas_files.sync.recovery import finish_move
from atlas_files.sync.state import Local, clear_stale_locks

# A push lost to a faster one is retried after a fetch, at most this often and this long,
# after a random pause whose ceiling doubles with each loss up to BACKOFF_CAP_S: under
# heavy contention every attempt but one per push is wasted work, so the clones must
# spread out until about one of them tries per cycle.
MAX_ATTEMPTS = 60
MAX_SECONDS = 300.0
BACKOFF_FIRST_S = 0.05
BACKOFF_CAP_S = 5.0
# What git says when a push lost the race (the ref moved since we fetched).
_LOST_RACE = ("fetch first", "non-fast-forward", "cannot lock ref", "failed to update ref",
              "but expected", "stale info", "failed to lock")


class Tally:
    """What one sync did so far. (A plain class: see git.Done on start-up cost.)"""

    def __init__(self) -> None:
        self.came_in: dict[str, None] = {}
        self.left_out: list[str] = []
        self.collisions: list[drafts.Collision] = []
        self.drafts_removed: list[str] = []
        self.pushes: list[tuple[str | None, str]] = []
        self.retries = 0
        self.recovered: list[str] = []
        self.config_changes: list[accepted.ConfigChange] = []


def _jitter(ceiling: float) -> float:
    """A random pause in [0, ceiling): the random module's import is not worth a number
    that only has to differ between clones."""
    return ceiling * int.from_bytes(os.urandom(4), "big") / 2 ** 32


class Engine:
    """One sync of one checkout; the caller holds the checkout's lock (``local``)."""

    def __init__(self, record: Record, cfg: SyncConfig, identity: str | None) -> None:
        self.local = Local(record)
        check_version(self.local.folder / "git-version", within=record.opened)
        self.record = record
        self.cfg = cfg
        self.identity = identity
        self.git = Git(record.root, identity=identity)
        self.tally = Tally()
        self.head: str | None = None
        self.theirs: str | None = None

    # -- the checkout ---------------------------------------------------------------------

    def start(self, died_at: float | None) -> None:
        """Learn where the record lies in git; tidy up after a sync that was killed."""
        self.facts = repo.read_facts(self.git, self.record.root)
        self.git = Git(self.facts.top, {"GIT_REFLOG_ACTION": "atlas sync"}, self.identity)
        self.branch = self.cfg.branch or self.facts.branch
        self.local_ref = f"refs/heads/{self.facts.branch}"
        self.tracking = f"refs/remotes/{self.cfg.remote}/{self.branch}"
        if not repo.remote_defined(self.git, self.facts.common_dir, self.cfg.remote):
            raise BadInput(
                f"sync.remote is {self.cfg.remote!r}, but this clone's git config defines no "
                "remote of that name (with a URL); atlas syncs only with a remote the clone "
                "itself defines, never a path or a URL written in the record",
                hint="`git remote -v` lists this clone's remotes: add it (`git remote add "
                "NAME URL`), or name one of them under sync: in atlas.yaml")
        if died_at is not None:
            self.tally.recovered += clear_stale_locks(
                self.facts.git_dir, self.facts.common_dir, [self.local_ref, self.tracking],
                died_at)
        self._refresh()
        self._check_checkout()
        finished = finish_move(self.git, self.facts, self.local, self.record, self.head)
        if finished is not None:
            self.head, kept = finished
            for collision in kept:
                self._kept(collision)
            self.tally.recovered.append(f"finished moving to {self.head[:12]}")

    def _check_checkout(self) -> None:
        """Refuse a checkout whose commit holds what a sync would never let in (a first
        clone's, or one moved by plain git): once per head, since each head a sync moves
        to or makes was judged on the way (``trust_head``)."""
        if self.head is None or self.local.checked_head() == self.head:
            return
        paths = incoming.check_checkout(self.git, self.head, self.facts.prefix, self._rel,
                                        self.where)
        read_only(self.facts.top, paths, self._rel)  # `git clone` wrote them 0644
        self.local.checked(self.head)

    def trust_head(self) -> None:
        """Remember the head a finished sync left: what came in was checked as it came,
        what went out was atlas's own."""
        if self.head is not None:
            self.local.checked(self.head)

    def _kept(self, collision: drafts.Collision) -> None:
        self.tally.collisions.append(collision)
        self.tally.drafts_removed += collision.replaced

    @property
    def where(self) -> str:
        return f"{self.cfg.remote}/{self.branch}"

    def _refresh(self) -> None:
        found = repo.heads(self.git, self.facts.common_dir, [self.local_ref, self.tracking])
        self.head = found.get(self.local_ref)
        self.theirs = found.get(self.tracking)

    def _rel(self, git_path: str) -> str | None:
        return self.facts.to_record(git_path)

    # -- step 1: commit what atlas wrote here ---------------------------------------------

    def commit_local(self, what: str, written: list[Path] | None = None) -> list[str]:
        """Commit the record's new files (and atlas.yaml, the README, the .gitignore when
        changed); refuse a published file changed or deleted in place. Returns the paths
        committed, relative to the record.

        ``written``: the files a write has just published (fsio.journal), committed
        without a `git status` of the whole work tree; whatever else changed meanwhile is
        the next sync's to see, as it would be had it changed a moment later."""
        new = self._new_files() if written is None else self._travelling(written)
        if not new:
            return []
        nul = "\0".join(new).encode("utf-8", "surrogateescape")
        # --force: a .gitignore from the remote cannot keep atlas's own files from travelling.
        self.git.run("add", "--force", "--pathspec-from-file=-", "--pathspec-file-nul",
                     input=nul)
        rels = [r for r in (self._rel(p) for p in new) if r is not None]
        message = f"atlas: {what}\n\n" + "\n".join(
            kind(r).describe() if kind(r).history else r for r in rels[:50])
        if len(rels) > 50:
            message += f"\n... and {len(rels) - 50} more"
        # Without git's `maintenance run --auto` child (a process on every write): it is
        # run here only when git's own sample says it could find work.
        self.git.committing("-c", "maintenance.auto=false", "commit", "-q", "--no-verify",
                            "-m", message, "--pathspec-from-file=-", "--pathspec-file-nul",
                            input=nul)
        self._refresh()
        threshold = gitdir.gc_auto(self.git, self.facts.common_dir, self.facts.git_dir,
                                   self.local.folder / "gc-auto", self.record.opened)
        if gitdir.loose_objects_due(self.facts.common_dir, threshold):
            self._tidy()
        return rels

    def _travelling(self, written: list[Path]) -> list[str]:
        """The files of ``written`` that travel, as git names them (from the top)."""
        found = []
        for path in written:
            rel = os.path.relpath(path, self.record.root).replace(os.sep, "/")
            if not rel.startswith("../") and kind(rel).travels:
                found.append(self.facts.prefix + rel)
        return found

    def _new_files(self) -> list[str]:
        """The work tree's new files that travel, as git names them; SyncRefused for
        history changed in place, BadInput for changes outside a record that shares its
        repository."""
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
                f"place here: {listing(edited)}; nothing was committed or pushed",
                hint="put each back (`git checkout -- PATH`) and write the change as a new "
                "version (`atlas put NAME`) or a correction (`atlas correct REF`)",
            )
        if outside and self.facts.prefix:
            raise BadInput(
                "the record lies inside a repository with uncommitted changes outside it "
                f"({listing(outside)}); atlas sync moves the whole checkout to the "
                "remote's head, so it will not run over them",
                hint="commit or stash them, or give the record a branch of its own checked "
                "out as a worktree beside the code (see docs/sync.md)",
            )
        self.tally.left_out = [r for r in (self._rel(p) for p in left) if r is not None]
        return new

    # -- steps 2-4: fetch, check, integrate ------------------------------------------------

    def _begin_fetch(self) -> Started:
        # Only the one branch, no tags, no FETCH_HEAD; and no `git maintenance run --auto`
        # child after every fetch (a process on every sync): _end_fetch runs it when the
        # fetch brought something in, the only time it can have work to do.
        return self.git.start("fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                              "--no-auto-maintenance", self.cfg.remote,
                              f"+refs/heads/{self.branch}:{self.tracking}")

    def _end_fetch(self, pending: Started, before: str | None) -> None:
        done = pending.finish(ok=(0, 1, 128))
        if done.code != 0:
            if "couldn't find remote ref" not in done.err:
                err = failed(("fetch", self.cfg.remote), done)
                raise GitFailed(err.message, hint=(
                    f"check that the remote {self.cfg.remote!r} exists (`git remote -v`) and "
                    "that you can reach it; sync.remote in atlas.yaml names another"))
            self.local.fetched()
            self.head = repo.heads(self.git, self.facts.common_dir,
                                   [self.local_ref]).get(self.local_ref)
            self.theirs = None  # the branch is not on the remote (yet): the push makes it
            return
        self.local.fetched()
        self._refresh()
        if self.theirs != before:
            self._tidy()  # objects came in: what fetch itself would have run

    def _tidy(self) -> None:
        """git's automatic tidying, which atlas's fetch and commit do not start themselves.
        Its verdict never fails a sync (gc reports its own trouble the next time git runs
        it)."""
        with contextlib.suppress(GitFailed):
            self.git.run("maintenance", "run", "--auto", "--quiet")

    def pull(self) -> None:
        before = self.theirs
        self._end_fetch(self._begin_fetch(), before)
        self.integrate(before)

    def commit_and_pull(self, what: str) -> None:
        """Commit what atlas wrote here while the fetch runs beside it (they touch
        different refs), then integrate what the fetch brought."""
        before = self.theirs
        pending = self._begin_fetch()
        try:
            self.commit_local(what)
        except BaseException:
            pending.stop()
            raise
        self._end_fetch(pending, before)
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
            # Only this side moved: what it would push must not change published history.
            self._check_history(repo.diff(self.git, theirs, head), theirs, head,
                                "in this checkout's commits")
            return
        if before and before != theirs and not repo.is_ancestor(self.git, before, theirs):
            raise SyncRefused(
                f"{self.where} was rewritten (force-pushed): it no longer contains "
                f"{before[:12]}, which it held before; history is append-only, so nothing "
                "was integrated or pushed",
                hint="ask whoever force-pushed to push the lost commits back (they are in "
                f"this checkout as {before[:12]}), then sync")
        remote = repo.diff(self.git, base, theirs)
        self._check_history(remote, base, theirs, "on the remote")
        incoming.check(self.git, remote, self._rel, self.where, theirs)
        self._config_came_in(remote, head, theirs)
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
                    f"({listing(outside)}); atlas sync pushes only the record's own commits",
                    hint="push them yourself (`git push`), or keep the record on a branch of "
                    "its own checked out as a worktree (docs/sync.md)")
        added = {c.path: c for c in remote if c.xy == "A"}
        lost = {c.path: added[c.path] for c in local
                if c.xy == "A" and c.path in added and added[c.path].blob != c.blob}
        for path in lost:
            rel = self._rel(path) or path
            self._kept(drafts.keep(self.record, rel, repo.blob_bytes(self.git, head, path),
                                   repo.blob_start(self.git, theirs, path,
                                                   drafts.META_LIMIT)))
        new = rebuild(self.git, self.facts.git_dir, base, head, theirs, lost, self.where)
        self._move(head, new)
        self._came_in(remote)

    def _config_came_in(self, changes: list[repo.Change], head: str, theirs: str) -> None:
        """Say what an atlas.yaml from the remote changes, and what of it waits for a
        person here; refuse one atlas cannot read (every command here would stop)."""
        path = self.facts.prefix + CONFIG_NAME
        if not any(c.path == path and c.xy != "D" for c in changes):
            return
        after = self._parsed_config(theirs, path)
        if after is None:
            raise UnsafeContent(
                f"{self.where} brings in an atlas.yaml that atlas cannot read; nothing was "
                "integrated, checked out or pushed",
                hint=f"see who changed it (`git log -p {theirs[:12]} -- {path}`); whoever "
                "can push there should fix it, then sync again")
        before = self._parsed_config(head, path) or {}
        self.tally.config_changes += accepted.config_changes(before, after)

    def _parsed_config(self, commit: str, path: str) -> dict[str, Any] | None:
        """atlas.yaml of ``commit`` as a mapping atlas can act on; None if it cannot be
        read as one (or the commit has none)."""
        try:
            text = repo.blob_bytes(self.git, commit, path).decode("utf-8")
            data = load_yaml(text)
            if not isinstance(data, dict):
                return None
            from_mapping(data, Path(path))
        except (GitFailed, UnicodeDecodeError, YamlError, AtlasError):
            return None
        return data

    def _came_in(self, changes: list[repo.Change]) -> None:
        for c in changes:
            rel = self._rel(c.path)
            if rel is not None and c.xy != "D":
                self.tally.came_in[rel] = None
        read_only(self.facts.top, [c.path for c in changes if c.xy != "D"], self._rel)

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
            f"{where}: {listing(bad)}; nothing was integrated or pushed", hint=hint)

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

    # -- step 5: push, and try again after a lost race ------------------------------------

    def push(self) -> bool:
        """Push the head without force; False if the remote moved first."""
        assert self.head is not None
        done = self.git.run("push", "--porcelain", self.cfg.remote,
                            f"{self.head}:refs/heads/{self.branch}", ok=(0, 1, 128),
                            timeout=NETWORK_TIMEOUT_S)
        if done.code == 0:
            self.tally.pushes.append((self.theirs, self.head))
            self._clear_drafts(self.theirs, self.head)
            self.theirs = self.head
            return True
        said = done.out.decode("utf-8", "replace") + done.err
        if any(m in said for m in _LOST_RACE):
            return False
        raise failed(("push", self.cfg.remote), done)

    def exchange(self) -> None:
        """Push until the remote takes it, fetching and integrating after each lost race."""
        deadline = time.monotonic() + MAX_SECONDS
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
            time.sleep(_jitter(min(BACKOFF_CAP_S, BACKOFF_FIRST_S * 2 ** min(attempt, 10))))
            self.pull()

    # -- what happened ----------------------------------------------------------------------

    def _pushed(self, old: str | None, new: str) -> list[str]:
        """The record's files one push carried, relative to the record."""
        if old is None:
            listing = self.git.run("ls-tree", "-r", "--name-only", "-z", new).out
            paths = [p.decode("utf-8", "surrogateescape") for p in listing.split(b"\0") if p]
        else:
            paths = [c.path for c in repo.diff(self.git, old, new) if c.xy != "D"]
        return [rel for rel in map(self._rel, paths) if rel is not None]

    def _clear_drafts(self, old: str | None, new: str) -> None:
        """Remove the drafts that the versions just pushed supersede (drafts.superseded);
        a checkout without drafts pays one stat."""
        if not os.path.isdir(os.path.join(self.record.root, layout.DRAFTS)):
            return
        self.tally.drafts_removed += drafts.superseded(
            self.record, self._pushed(old, new),
            lambda rel: repo.blob_start(self.git, new, self.facts.prefix + rel,
                                        drafts.META_LIMIT))

    def went_out(self) -> list[str]:
        out: dict[str, None] = {}
        for old, new in self.tally.pushes:
            out.update(dict.fromkeys(self._pushed(old, new)))
        return list(out)

