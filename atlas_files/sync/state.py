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

from atlas_files import fsio, layout
from atlas_files.record import Record
from atlas_files.sync.errors import Busy

# git's own lock files that a killed git command leaves behind, relative to the git dir
# (per work tree) or the common dir (shared refs). Each one blocks every later command.
WORKTREE_LOCKS = ("index.lock", "HEAD.lock", "ORIG_HEAD.lock")
COMMON_LOCKS = ("packed-refs.lock", "config.lock", "shallow.lock")
# A git child of a killed sync may still be finishing: give it this long to let go.
ORPHAN_GRACE_S = 1.0


class Local:
    def __init__(self, record: Record) -> None:
        self.folder = record.path(layout.CACHE, "sync")  # never through a symlink
        self.lock_path = self.folder / "lock"
        self.marker = self.folder / "running"
        self.journal_path = self.folder / "journal.json"
        self.fetched_path = self.folder / "fetched"

    def _ensure(self) -> None:
        if not self.folder.is_dir():
            self.folder.mkdir(parents=True, exist_ok=True)
            # Ignored even in a record whose .gitignore predates the cache folder.
            fsio.replace_atomic(self.folder / ".gitignore", b"*\n")

    @contextlib.contextmanager
    def session(self, wait_s: float) -> Iterator[float | None]:
        """Hold this checkout's sync lock. Yields when the previous sync started if it died
        without finishing (its marker is still there), else None."""
        self._ensure()
        try:
            with fsio.locked(self.lock_path, wait_s):
                died_at: float | None = None
                with contextlib.suppress(FileNotFoundError):
                    died_at = os.stat(self.marker).st_mtime
                # The marker of a sync that died stays as it is until a sync finishes: its
                # time says since when git locks may be debris of dead syncs, however
                # many died in a row before reaching the cleanup.
                fsio.replace_atomic(self.marker, f"{os.getpid()}\n".encode(), durable=False)
                if died_at is not None:
                    os.utime(self.marker, (died_at, died_at))
                try:
                    yield died_at
                finally:
                    # An exception is no death: git's children have exited. Only a kill
                    # leaves the marker for the next sync to find.
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.marker)
        except TimeoutError:
            raise Busy(f"another sync of this checkout has been running for over {wait_s:.0f} s",
                       hint="wait for it to finish, then run `atlas sync`") from None

    def fetch_age(self) -> float | None:
        """Seconds since the last successful fetch; None if there was none."""
        try:
            return max(0.0, time.time() - os.stat(self.fetched_path).st_mtime)
        except OSError:
            return None

    def fetched(self) -> None:
        self._ensure()
        with open(self.fetched_path, "a"):
            pass
        os.utime(self.fetched_path)

    def journal(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.journal_path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}  # a torn journal: the move it announced may or may not have begun
        return data if isinstance(data, dict) else {}

    def begin_move(self, data: dict[str, Any]) -> None:
        fsio.replace_atomic(self.journal_path, json.dumps(data).encode())

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
