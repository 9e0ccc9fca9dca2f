"""The record and its git remote: `atlas sync` and `atlas sync accept`.

Every other API function syncs by itself where the record says so (see
:func:`atlas_files.api.reads` and :func:`atlas_files.api.writes`); these are the
exchange a person asks for, and the acceptance of the ``sync:`` settings a clone acts on
(:mod:`atlas_files.sync.accepted`). The engine is imported only when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atlas_files.api import Worker

if TYPE_CHECKING:
    from atlas_files.sync.run import Review, SyncReport


def sync(worker: Worker) -> SyncReport:
    """Commit what atlas wrote here, fetch, integrate, push, with the sync settings
    accepted on this clone (NotAccepted, exit 2, when atlas.yaml holds a block this clone
    never accepted)."""
    from atlas_files.sync import run  # noqa: PLC0415 - subprocess and git: only here

    return run.sync(worker.record, worker.identity)


def review(worker: Worker) -> Review:
    """What :func:`accept` would accept: atlas.yaml's sync block beside the one accepted on
    this clone, and the URL the block's remote has in the clone's git config."""
    from atlas_files.sync import run  # noqa: PLC0415 - as in sync()

    return run.review(worker.record)


def accept(worker: Worker) -> Review:
    """Accept atlas.yaml's sync block on this clone, for the person running atlas."""
    from atlas_files.sync import run  # noqa: PLC0415 - as in sync()

    return run.accept(worker.record)
