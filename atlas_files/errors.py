"""One base error; each subclass carries the exit code of the CLI contract.

Every message says what is wrong; ``hint`` says what to do next. The CLI prints the two
as at most two plain lines and exits with ``exit_code``.
"""

from __future__ import annotations

import warnings


class AtlasError(Exception):
    """A problem the user (or the record) can fix. Never a bug."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class BadInput(AtlasError):
    """Bad input or usage; nothing was written."""

    exit_code = 2


class NotFound(BadInput):
    """A name, version, record or id that does not exist."""


class DamagedFile(BadInput):
    """A file in the record cannot be read as its kind (hand edit, bad encoding)."""


class RecordGone(NotFound):
    """The record a command opened was deleted, moved or replaced while the command ran;
    nothing was written."""


class BrokenInstall(AtlasError):
    """A package atlas needs cannot be imported in this Python (installed without its
    dependencies, or half removed): nothing that needs it was done."""

    exit_code = 2


class VersionConflict(AtlasError):
    """The version-jump stop sign: someone wrote since you read. Nothing was written."""

    exit_code = 3


class LeaseHeld(AtlasError):
    """The resource is held by another (or the lease changed under you)."""

    exit_code = 4


class AtlasWarning(UserWarning):
    """Something the user should know that did not stop the command (the CLI prints it as
    `atlas: warning: ...`): a write that landed but whose receipt could not be updated, a
    damaged file skipped in a listing."""


def warn(message: str) -> None:
    warnings.warn(AtlasWarning(message), stacklevel=2)
