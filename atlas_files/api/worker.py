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
errors are :class:`atlas_files.facts.errors.AtlasError` subclasses carrying the CLI's exit code.

On a record that travels by a git remote (:mod:`atlas_files.sync`), the API is where the
exchange happens, so that every front end (the CLI, the MCP server, a library caller)
gets it: a function marked :func:`writes` runs between a fetch and a push, one marked
:func:`reads` fetches first when the last fetch is old, as the sync settings accepted on
the clone say (``auto``), or as ``Worker.sync`` asks (``--sync``/``--no-sync``). A marked
function that calls another syncs once.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from atlas_files.facts import environment

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

__all__ = ["Worker", "reads", "writes"]

P = ParamSpec("P")
R = TypeVar("R")
# The records a marked function is syncing right now: a marked function it calls on the
# same record does not sync again (it would wait for the sync lock its caller holds).
_SYNCING: ContextVar[frozenset[str]] = ContextVar("atlas_syncing", default=frozenset())


def _syncing(worker: Worker) -> bool:
    return str(worker.record.root) in _SYNCING.get()


def _enter(worker: Worker) -> Token[frozenset[str]]:
    return _SYNCING.set(_SYNCING.get() | {str(worker.record.root)})


class Worker:
    """Who acts (``identity``), in which record, on which project (None: the default).

    A plain class, not a dataclass: it is built on every command, and a dataclass costs
    measurable milliseconds of the CLI's cold start.
    """

    __slots__ = ("record", "identity", "project", "sync")

    def __init__(self, record: Record, identity: str | None = None,
                 project: str | None = None, sync: bool | None = None) -> None:
        self.record = record
        self.identity = identity or None
        self.project = project or None
        # None: as the sync settings accepted on this clone say; True: every write syncs
        # (--sync); False: nothing syncs (--no-sync).
        self.sync = sync

    @classmethod
    def open(cls, record: str | os.PathLike[str] | None = None, identity: str | None = None,
             project: str | None = None, env: Mapping[str, str] | None = None,
             sync: bool | None = None) -> Worker:
        """Find the record as the CLI does (``record``, ``$ATLAS_RECORD``, then the nearest
        folder upward holding atlas.yaml); ``identity`` and ``project`` default to
        ``$ATLAS_AS`` and ``$ATLAS_PROJECT``."""
        # The record's modules (and YAML) are imported when a record is opened, not with
        # this package: a links check opens none (api/checks.py).
        from atlas_files.storage.record import Record  # noqa: PLC0415 - see above

        environ = os.environ if env is None else env
        return cls(Record.find(record, environ), environment.identity(identity, environ),
                   environment.project(project, environ), sync)

    @property
    def author(self) -> str:
        """The identity, required: every write names its author."""
        from atlas_files.storage.record import require_identity  # noqa: PLC0415 - see open

        return require_identity(self.identity)

    @property
    def project_name(self) -> str:
        """The project, checked to exist (the record's default when none was given)."""
        return self.record.project(self.project)

    def __repr__(self) -> str:
        return (f"Worker({self.record!r}, identity={self.identity!r}, "
                f"project={self.project!r}, sync={self.sync!r})")


def reads(fn: Callable[Concatenate[Worker, P], R]) -> Callable[Concatenate[Worker, P], R]:
    """An API read: first the remote's latest, when the record syncs by itself and the
    last fetch is older than ``fetch_every`` (a problem is a warning, never a failure)."""

    @functools.wraps(fn)
    def read(worker: Worker, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if worker.sync is False or _syncing(worker):
            return fn(worker, *args, **kwargs)
        # Imported here: a record that does not sync never loads more than the switch,
        # and `atlas --version` not even that.
        from atlas_files import sync  # noqa: PLC0415 - see above

        token = _enter(worker)
        try:
            sync.refresh(worker.record, worker.identity)
            return fn(worker, *args, **kwargs)
        finally:
            _SYNCING.reset(token)

    return read


def writes(what: str, named: str | None = None
           ) -> Callable[[Callable[Concatenate[Worker, P], R]],
                         Callable[Concatenate[Worker, P], R]]:
    """An API write: between a fetch and a push when the record syncs by itself (or the
    worker asks, ``sync=True``), so a lost race is the stop sign (exit 3) or the held sign
    (exit 4). ``what`` (and the argument ``named``, if given) names the commit."""

    def decorate(fn: Callable[Concatenate[Worker, P], R]) -> Callable[Concatenate[Worker, P], R]:
        position = fn.__code__.co_varnames.index(named) - 1 if named else -1

        @functools.wraps(fn)
        def write(worker: Worker, /, *args: P.args, **kwargs: P.kwargs) -> R:
            if worker.sync is False or _syncing(worker):
                return fn(worker, *args, **kwargs)
            from atlas_files import sync  # noqa: PLC0415 - as in reads()

            label = what
            if named:
                value = kwargs[named] if named in kwargs else args[position] \
                    if position < len(args) else None
                label = f"{what} {value}"
            token = _enter(worker)
            try:
                return sync.write(worker.record, worker.identity,
                                  f"{label} ({worker.identity})",
                                  lambda: fn(worker, *args, **kwargs), worker.sync)
            finally:
                _SYNCING.reset(token)

        return write

    return decorate
