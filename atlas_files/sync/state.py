"""This checkout's own sync state, under ``.atlas-cache/sync/`` (ignored by git, never
travels): the lock that lets one sync run at a time, the marker that tells the next sync
that the last one died, the journal of a work-tree move in flight, and when the last fetch
succeeded.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from atlas_files.facts import layout
from atlas_files.storage import fsio
from atlas_files.storage.record import Record
from atlas_files.sync.errors import Busy

# git's own lock files that a killed git command leaves behind, relative to the git dir
# (per work tree) or the common dir (shared refs). Each one blocks every later command.
WORKTREE_LOCKS = ("index.lock", "HEAD.lock", "ORIG_HEAD.lock")
COMMON_LOCKS = ("packed-refs.lock", "config.lock", "shallow.lock")
# A journal names a branch and two commits: a few hundred bytes.
JOURNAL_LIMIT = 64 * 1024
# A git child of a killed sync may still be finishing: give it this long to let go.
ORPHAN_GRACE_S = 1.0


class Local:
    """Every file here is opened through fsio, walked from the record's held descriptor:
    a clone checks out whatever was committed, and a symlink committed at one of these
    names (`git add -f`) must be replaced, never followed."""

    def __init__(self, record: Record) -> None:
        self.folder = record.path(layout.CACHE, "sync")  # never through a symlink
        self.within = record.opened
        self.lock_path = self.folder / "lock"
        self.marker = self.folder / "running"
        self.journal_path = self.folder / "journal.json"
        self.fetched_path = self.folder / "fetched"
        self.checked_path = self.folder / "checked-head"

    def _ensure(self) -> None:
        if not self.folder.is_dir():
            fsio.make_folders(self.folder, within=self.within)
            # Ignored even in a record whose .gitignore predates the cache folder.
            fsio.replace_atomic(self.folder / ".gitignore", b"*\n", within=self.within)

    @contextlib.contextmanager
    def session(self, wait_s: float) -> Iterator[float | None]:
        """Hold this checkout's sync lock. Yields when the previous sync started if it died
        without finishing (its marker is still there), else None."""
        self._ensure()
        try:
            with fsio.locked(self.lock_path, wait_s, within=self.within):
                died_at = fsio.file_mtime(self.marker)
                # The marker of a sync that died stays as it is until a sync finishes: its
                # time says since when git locks may be debris of dead syncs, however
                # many died in a row before reaching the cleanup.
                fsio.replace_atomic(self.marker, f"{os.getpid()}\n".encode(), durable=False,
                                    within=self.within)
                if died_at is not None:
                    fsio.touch(self.marker, (died_at, died_at), within=self.within)
                try:
                    yield died_at
                finally:
                    # An exception is no death: git's children have exited. Only a kill
                    # leaves the marker for the next sync to find. (unlink removes a
                    # symlink itself, never what it points at.)
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.marker)
        except TimeoutError:
            raise Busy(f"another sync of this checkout has been running for over {wait_s:.0f} s",
                       hint="wait for it to finish, then run `atlas sync`") from None

    def fetch_age(self) -> float | None:
        """Seconds since the last successful fetch; None if there was none."""
        mtime = fsio.file_mtime(self.fetched_path)
        return None if mtime is None else max(0.0, time.time() - mtime)

    def fetched(self) -> None:
        self._ensure()
        fsio.touch(self.fetched_path, within=self.within)

    def checked_head(self) -> str | None:
        """The last head whose whole tree a sync found holding only what a record may."""
        data = fsio.read_cache(self.checked_path, within=self.within)
        return None if data is None else data.decode("ascii", "replace").strip()

    def checked(self, head: str) -> None:
        fsio.keep_cache(self.checked_path, f"{head}\n".encode(), within=self.within)

    def journal(self) -> dict[str, Any] | None:
        """The move in flight, {} for a journal that cannot be believed (torn, or a
        symlink, a named pipe or a huge file in its place), None for none."""
        if not os.path.lexists(self.journal_path):
            return None
        data = fsio.read_cache(self.journal_path, JOURNAL_LIMIT, within=self.within)
        try:
            found = json.loads(data) if data is not None else None
        except ValueError:
            found = None
        # A torn journal: the move it announced may or may not have begun.
        return found if isinstance(found, dict) else {}

    def begin_move(self, data: dict[str, Any]) -> None:
        fsio.replace_atomic(self.journal_path, json.dumps(data).encode(), within=self.within)

    def end_move(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.journal_path)


def clear_stale_locks(git_dir: Path, common_dir: Path, refs: list[str],
                      since: float) -> list[str]:
    """Remove git lock files a killed sync left behind (made at or after ``since``, when
    that sync started); returns what was removed. Called only while holding this
    checkout's sync lock and only when the last sync's marker says it died; a lock older
    than that sync belongs to someone else and is left for git to report."""
    candidates = [git_dir / name for name in WORKTREE_LOCKS]
    candidates += [common_dir / name for name in COMMON_LOCKS]
    candidates += [common_dir / f"{ref}.lock" for ref in refs]
    present = [p for p in candidates if p.exists()]
    if not present:
        return []
    deadline = time.monotonic() + ORPHAN_GRACE_S
    while present and time.monotonic() < deadline:
        time.sleep(0.05)
        present = [p for p in present if p.exists()]
    removed = []
    for p in present:
        with contextlib.suppress(FileNotFoundError):
            if os.stat(p).st_mtime >= since - 1.0:
                os.unlink(p)
                removed.append(p.name)
    return removed
