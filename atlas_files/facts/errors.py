"""One base error; each subclass carries the exit code of the CLI contract and the kind
its error document says.

The error document is what `atlas ... --json` prints on failure and what an MCP tool's
failure carries in its ``_meta``: one ``kind`` per class, read by both.

Every message says what is wrong; ``hint`` says what to do next. The CLI prints the two
as at most two plain lines and exits with ``exit_code``.
"""

from __future__ import annotations

import warnings
from typing import Any

# Every `kind` an error document can carry: the classes' own, and the CLI's for what is
# not an AtlasError (a usage error, an interrupt, the system refusing a file operation).
# (An MCP tool that fails on a bug says `bug`; the CLI shows a bug's traceback instead.)
KINDS = ("bad_input", "not_found", "damaged", "version_conflict", "lease_held", "usage",
         "environment", "interrupted")


def document(kind: str, message: str, hint: str | None, exit_code: int) -> dict[str, Any]:
    """The error document: what `atlas ... --json` prints on failure, and what an MCP
    tool's failure carries in its ``_meta``."""
    return {"error": {"kind": kind, "message": message, "hint": hint, "exit_code": exit_code}}


class AtlasError(Exception):
    """A problem the user (or the record) can fix. Never a bug."""

    exit_code = 2
    # What is outside the call and the record: a tool atlas runs, git, the disk, this
    # machine's setup. A subclass whose cause is the call or the record says so.
    kind = "environment"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class BadInput(AtlasError):
    """Bad input or usage; nothing was written."""

    exit_code = 2
    kind = "bad_input"


class NotFound(BadInput):
    """A name, version, record or id that does not exist."""

    kind = "not_found"


class DamagedFile(BadInput):
    """A file in the record cannot be read as its kind (hand edit, bad encoding)."""

    kind = "damaged"  # the record needs fixing, not the call (same exit code as bad input)


class RecordGone(NotFound):
    """The record a command opened was deleted, moved or replaced while the command ran;
    nothing was written."""


class BrokenInstall(AtlasError):
    """A package atlas needs cannot be imported in this Python (installed without its
    dependencies, or half removed): nothing that needs it was done."""

    exit_code = 2
    kind = "environment"


class VersionConflict(AtlasError):
    """The version-jump stop sign: someone wrote since you read. Nothing was written."""

    exit_code = 3
    kind = "version_conflict"


class LeaseHeld(AtlasError):
    """The resource is held by another (or the lease changed under you)."""

    exit_code = 4
    kind = "lease_held"


class AtlasWarning(UserWarning):
    """Something the user should know that did not stop the command (the CLI prints it as
    `atlas: warning: ...`): a write that landed but whose receipt could not be updated, a
    damaged file skipped in a listing."""


def warn(message: str) -> None:
    warnings.warn(AtlasWarning(message), stacklevel=2)
