"""Many machines: a git remote as the record's transport (`atlas sync`).

A mechanism below the API: the API's writes go through :func:`write` and its reads
through :func:`refresh` (``atlas_files.api.writes`` and ``reads``), so the CLI, the MCP
server and a library caller all sync alike. Every version, entry and
lease generation is a new file whose name only a true collision can collide on, so the
record travels by git without merges of shared files: commit what atlas wrote here,
fetch, refuse if either side changed published history, keep a local file that collides
with the remote's as a draft, rebuild local commits on the fetched head, and push without
force. The push is the compare-and-set across machines.

* :func:`atlas_files.sync.run.sync`: one `atlas sync`.
* :func:`atlas_files.sync.run.synced_write`: a write (any API call) that fetches first and
  pushes after; a lost version becomes a draft and raises VersionConflict (exit 3), a lost
  lease change raises LeaseHeld (exit 4).
* :func:`write` (here): the switch every front end's writes go through; it calls
  ``synced_write`` when the sync settings accepted on this clone say ``auto: true`` or
  the caller asks.
* :func:`refresh` (here): what a read calls: a sync when the last fetch is older than
  ``fetch_every``, and a warning, never an error, when it cannot.
* :mod:`atlas_files.sync.accepted`: atlas.yaml's ``sync:`` block travels with the record,
  so a clone acts on it only once a person there accepted it (`atlas sync accept`).

This module is light on purpose (the engine is imported only when a record syncs).

What never travels: receipts, session rows and telemetry are live rows of one machine
(see NOT_TRAVELLING).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from atlas_files.facts.errors import AtlasError, warn
from atlas_files.storage.config import SyncConfig
from atlas_files.storage.record import Record

__all__ = ["NOT_TRAVELLING", "refresh", "settings", "write"]

if TYPE_CHECKING:
    from atlas_files.sync.accepted import Standing

T = TypeVar("T")

NOT_TRAVELLING = (
    "What does not travel: read receipts, session rows and telemetry are live rows of one "
    "machine and stay on it (another machine reads telemetry through the MCP server of the "
    "machine that probes, or runs a prober itself). A machine that never syncs is "
    "invisible to the others; lease expiry is still judged by each reader's clock."
)
# A read waits this long for a sync of the same checkout already running, then reads the
# record as it is.
READ_LOCK_WAIT_S = 2.0


def settings(record: Record, override: bool | None = None) -> SyncConfig | None:
    """The sync settings that apply to a write: None when it does not sync (no ``auto``
    accepted on this clone and no ``--sync``, or ``--no-sync``). With ``--sync``, the
    accepted settings or NotAccepted (see :mod:`atlas_files.sync.accepted`)."""
    if override is False:
        return None
    from atlas_files.sync import accepted  # noqa: PLC0415 - only a record that syncs

    if override is True:
        return accepted.standing(record, without_block=True).explicit()
    if record.config.sync is None:
        return None
    standing = accepted.standing(record)
    _say_pending(record, standing)
    return standing.cfg if standing.cfg is not None and standing.cfg.auto else None


def _say_pending(record: Record, standing: Standing) -> None:
    """Warn, on every command that would sync by itself, that atlas.yaml's sync block
    waits for a person here: a change from the remote must not pass unseen."""
    pending, cfg = standing.pending, record.config.sync
    if pending is None or not ((cfg is not None and cfg.auto)
                               or (standing.cfg is not None and standing.cfg.auto)):
        return
    from atlas_files.sync.accepted import HINT  # noqa: PLC0415 - only a record that syncs

    warn(f"{pending.sentence()}: {HINT}")


def write(record: Record, identity: str | None, what: str, fn: Callable[[], T],
          sync: bool | None = None) -> T:
    """``fn()`` (a write by ``identity``), synced when ``sync`` is True, or when it is None
    and the sync settings accepted on this clone say ``auto``. The one switch every API
    write goes through."""
    cfg = settings(record, sync)
    if cfg is None:
        return fn()
    # The engine (subprocess and git's output parsing, ~18 ms of imports) loads only for
    # a record that syncs: a write or read of any other record pays nothing for it.
    from atlas_files.sync import run  # noqa: PLC0415 - optional and heavy, see above

    return run.synced_write(record, identity, what, fn, cfg)


def refresh(record: Record, identity: str | None) -> None:
    """Before a read of a record whose accepted sync settings say ``auto``: sync if the
    last fetch is older than ``fetch_every``. Never fails the read: a problem is a
    warning, and the read shows the record as it is here."""
    if record.config.sync is None:
        return
    try:
        cfg = settings(record)
    except AtlasError as exc:
        warn(f"could not sync before reading ({exc.message}); this shows the record as "
             "of its last sync")
        return
    if cfg is None:
        return
    # Like the engine below, the sync state loads only for a record that syncs: every
    # read command calls this, and a record that does not sync pays nothing for it.
    from atlas_files.sync.errors import Busy  # noqa: PLC0415 - see above
    from atlas_files.sync.state import Local  # noqa: PLC0415 - idem

    age = Local(record).fetch_age()
    if age is not None and age < cfg.fetch_every_s:
        return
    from atlas_files.sync import run  # noqa: PLC0415 - optional and heavy, as in write()

    try:
        run.sync(record, identity, cfg, lock_wait_s=READ_LOCK_WAIT_S)
    except Busy:
        return  # another sync of this checkout is at it right now
    except AtlasError as exc:
        warn(f"could not sync before reading ({exc.message}); this shows the record as "
             "of its last sync")
