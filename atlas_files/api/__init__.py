"""The public API: what every front end (the CLI, the MCP server, sync) calls.

One module per family of commands, mirroring the CLI, each importing only what its
commands need (agents call `atlas` hundreds of times; `status show` must not pay for the
site generator):

* :mod:`atlas_files.api.core`: init, status, put, get, ls, history, diff, feed
* :mod:`atlas_files.api.leases`: claim, renew, release, break, ls, show
* :mod:`atlas_files.api.decisions`: decide, decisions, correct, retract
* :mod:`atlas_files.api.telemetry`: sample, probe, approve, ls
* :mod:`atlas_files.api.checks`: check; :mod:`atlas_files.api.site`: site build

Every function takes a :class:`Worker` (who acts, in which record and project) and returns
a frozen result whose ``to_json()`` is exactly the document ``atlas ... --json`` prints;
errors are :class:`atlas_files.errors.AtlasError` subclasses carrying the CLI's exit code.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from atlas_files.record import Record

__all__ = ["Worker"]


class Worker:
    """Who acts (``identity``), in which record, on which project (None: the default).

    A plain class, not a dataclass: it is built on every command, and a dataclass costs
    measurable milliseconds of the CLI's cold start.
    """

    __slots__ = ("record", "identity", "project")

    def __init__(self, record: Record, identity: str | None = None,
                 project: str | None = None) -> None:
        self.record = record
        self.identity = identity or None
        self.project = project or None

    @classmethod
    def open(cls, record: str | os.PathLike[str] | None = None, identity: str | None = None,
             project: str | None = None, env: Mapping[str, str] | None = None) -> Worker:
        """Find the record as the CLI does (``record``, ``$ATLAS_RECORD``, then the nearest
        folder upward holding atlas.yaml); ``identity`` and ``project`` default to
        ``$ATLAS_AS`` and ``$ATLAS_PROJECT``."""
        # The record's modules (and YAML) are imported when a record is opened, not with
        # this package: a links check opens none (api/checks.py).
        from atlas_files.record import Record  # noqa: PLC0415

        environ = os.environ if env is None else env
        return cls(Record.find(record, environ), identity or environ.get("ATLAS_AS"),
                   project or environ.get("ATLAS_PROJECT"))

    @property
    def author(self) -> str:
        """The identity, required: every write names its author."""
        from atlas_files.record import require_identity  # noqa: PLC0415 - see open

        return require_identity(self.identity)

    @property
    def project_name(self) -> str:
        """The project, checked to exist (the record's default when none was given)."""
        return self.record.project(self.project)

    def __repr__(self) -> str:
        return f"Worker({self.record!r}, identity={self.identity!r}, project={self.project!r})"
