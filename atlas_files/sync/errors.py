"""What can stop a sync, each with the exit code of the CLI contract.

Beside these, a sync raises the record's own VersionConflict (exit 3: a version lost the
race and is kept as a draft) and LeaseHeld (exit 4: a lease change lost the race).
"""

from __future__ import annotations

from atlas_files.facts.errors import AtlasError
from atlas_files.storage.gitcmd import GitFailed

__all__ = ["Busy", "GitFailed", "NotPushed", "SyncRefused", "UnsafeContent"]


class SyncRefused(AtlasError):
    """History would be rewritten (a published file changed or deleted, a remote that
    rewrote its history) or a config file changed on both sides: nothing is pushed."""

    exit_code = 1
    # The record's history (here or on the remote) is not what append-only allows: a
    # person repairs it, as a damaged file; the call itself was fine.
    kind = "damaged"


class UnsafeContent(SyncRefused):
    """The remote brings in what a record never holds and git (or a tool run in the
    record) would act on: a symbolic link, a submodule, git attributes, a git folder."""


class NotPushed(GitFailed):
    """The remote kept moving for longer than the retries allow."""


class Busy(AtlasError):
    """Another sync of this checkout held the lock for longer than the wait."""

    exit_code = 2
    kind = "environment"  # another process on this machine; the same call works later
