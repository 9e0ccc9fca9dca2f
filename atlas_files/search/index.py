"""The on-disk index: where it lives, when it is rebuilt, and who may write it.

It lives in ``<record>/.atlas-cache/search.sqlite``. The folder carries its own
``.gitignore`` (``*``), so it stays out of git even in a record whose ``.gitignore`` was
written before it existed. It is derived and disposable: deleting it is always safe.

Every writer of the index (a search bringing it up to date, or rebuilding it) holds one
lock file for the whole write, so there is one writer at a time; searches read without
it, and SQLite's own locking keeps a reader from seeing half a transaction. A rebuild is
written to a temp file and renamed into place, so a reader sees the old index or the new,
never part of one. The index is rebuilt when it is missing, not an SQLite file, shorter
than its header says (truncated), from another version of atlas, or when SQLite reports
it damaged while it is brought up to date.

Over NFS the lock and SQLite's locking rest on the server's byte-range locks; where those
are unreliable the index may be damaged, which the next search notices and repairs by a
rebuild. Nothing a search returns depends on the index being right: results name only
files that are read when the result is shown.

The cache folder lies in the record, where any writer of it (or a commit) can put a file:
an index is believed only if it is the very file a rebuild made there (its meta names the
file's own device and inode, which a copy, a checkout or a planted file does not have),
and a symlink or anything but a plain file in its place is rebuilt over, never opened.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files import __version__
from atlas_files.facts import layout
from atlas_files.facts.errors import DamagedFile
from atlas_files.search import store as storemod
from atlas_files.storage import fsio

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

CACHE_DIR = layout.CACHE  # ignored by the record's .gitignore, and by its own
INDEX_NAME = "search.sqlite"
LOCK_NAME = "search.lock"
SCHEMA_VERSION = 2  # 2: each row's file stamp (size, change time); the index's own "made"
# What a rebuild is keyed on: the layout of the tables and what atlas puts in them.
FORMAT = f"{SCHEMA_VERSION}/{__version__}"
BUSY_S = 30.0       # how long SQLite waits for another process's transaction
LOCK_WAIT_S = 120.0  # how long a search waits for another to finish writing the index


class Unwritable(Exception):
    """The index cannot be written here (a read-only record, or the lock never came)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def cache_dir(record: Record) -> Path:
    return record.root / CACHE_DIR


def index_path(record: Record) -> Path:
    return cache_dir(record) / INDEX_NAME


def _prepare(record: Record) -> Path:
    """The cache folder, made if need be, with its own .gitignore; Unwritable if it cannot
    be made or written."""
    try:
        folder = record.make_folders(record.path(CACHE_DIR))  # in the opened record
        ignore = folder / ".gitignore"
        if not os.path.lexists(ignore):
            fsio.replace_atomic(ignore, b"# derived by `atlas search`; safe to delete\n*\n",
                                durable=False, within=record.opened)
        if not os.access(folder, os.W_OK):
            raise PermissionError(13, "Permission denied", str(folder))
    except OSError as exc:
        raise Unwritable(f"{exc.strerror or exc}: {exc.filename or record.root}") from None
    except Exception as exc:  # noqa: BLE001 - BadInput: a symlink leading outside the record
        raise Unwritable(str(exc)) from None
    return folder


@contextlib.contextmanager
def _locked(path: Path, wait_s: float) -> Iterator[None]:
    """Hold the index's write lock; Unwritable if another holds it for ``wait_s``."""
    try:
        with fsio.locked(path, wait_s):
            yield
    except TimeoutError:
        raise Unwritable(f"another search held the index for over {wait_s:.0f} s") from None
    except (OSError, DamagedFile) as exc:
        reason = exc.message if isinstance(exc, DamagedFile) else exc.strerror
        raise Unwritable(f"{reason}: {path}") from None


def _connect(path: Path | str) -> sqlite3.Connection:
    # Autocommit: transactions are begun by hand (BEGIN IMMEDIATE for a sync). No fsync:
    # the journal still protects the index from a process killed mid-write (the OS holds
    # what was written); only a machine crash can damage it, and it is disposable.
    conn = sqlite3.connect(str(path), timeout=BUSY_S, isolation_level=None)
    # A file in the cache folder may have been put there by someone else: nothing its
    # schema holds (a view, a trigger) may call a function with side effects.
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    return conn


def _identity(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}"


def _open_current(path: Path) -> storemod.Store | None:
    """The index at ``path`` if it is whole, of this format, and the very file a search
    made there; None otherwise (it is then rebuilt in its place)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):  # a symlink may lead anywhere; a named pipe hangs
        return None
    try:
        conn = _connect(path)
    except sqlite3.DatabaseError:
        return None
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        now = os.lstat(path)
        # The header says how many pages there are; a file cut short is damaged even where
        # the pages a query happens to touch are intact. An index made anywhere else (a
        # copy, one committed to git or planted by another writer of the record) names
        # another file than this one, and is never believed: a rebuild replaces it.
        if meta.get("format") != FORMAT or meta.get("made") != _identity(st) \
                or _identity(now) != _identity(st) or now.st_size < pages * size:
            conn.close()
            return None
    except (sqlite3.DatabaseError, OSError):
        conn.close()
        return None
    return storemod.Store(conn)


def _rebuild(folder: Path, record: Record, projects: Sequence[str],
             history: bool) -> storemod.Store:
    """Write a fresh index of ``projects`` beside the old one, then rename it into place."""
    path = folder / INDEX_NAME
    for leftover in folder.glob(INDEX_NAME + ".tmp-*"):  # a rebuild killed halfway
        with contextlib.suppress(OSError):
            leftover.unlink()
    tmp = folder / f"{INDEX_NAME}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        conn = _connect(tmp)
        try:
            # A half-built file is thrown away, never read: no journal, no syncs until the end.
            conn.execute("PRAGMA journal_mode = OFF")
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute("PRAGMA cache_size = -65536")
            # The file keeps its inode when renamed into place: what proves it ours.
            made = _identity(os.lstat(tmp))
            storemod.create(conn, fts=True, meta={"format": FORMAT, "made": made})
            storemod.sync(storemod.Store(conn), record, projects, history=history)
        finally:
            conn.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        # A journal left by a process killed while writing the old file must not be
        # applied to the new one.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + "-journal")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return storemod.Store(_connect(path))


def open_index(record: Record, projects: Sequence[str], history: bool) -> storemod.Store:
    """The index, up to date with ``projects`` (every version of every stream with
    ``history``); Unwritable when it cannot be written (read-only, disk full, ...)."""
    folder = _prepare(record)
    with _locked(folder / LOCK_NAME, LOCK_WAIT_S):
        try:
            store = _open_current(folder / INDEX_NAME)
            if store is None:
                return _rebuild(folder, record, projects, history)
            try:
                storemod.sync(store, record, projects, history=history)
            except sqlite3.DatabaseError as exc:
                store.close()
                if _read_only(exc):
                    raise
                return _rebuild(folder, record, projects, history)  # damaged: start over
            return store
        except (sqlite3.Error, OSError) as exc:
            raise Unwritable(_reason(exc, folder)) from None


def rebuild_now(record: Record, projects: Sequence[str], history: bool) -> storemod.Store:
    """Rebuild under the lock (a query found the index damaged); Unwritable as above."""
    folder = _prepare(record)
    with _locked(folder / LOCK_NAME, LOCK_WAIT_S):
        try:
            return _rebuild(folder, record, projects, history)
        except (sqlite3.Error, OSError) as exc:
            raise Unwritable(_reason(exc, folder)) from None


def _reason(exc: Exception, folder: Path) -> str:
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}: {exc.filename or folder}"
    return f"SQLite: {exc}"


def _read_only(exc: sqlite3.DatabaseError) -> bool:
    """The index cannot be written here (a read-only record, no permission), as opposed
    to the file having been deleted or replaced under the open connection (SQLite's
    READONLY_DBMOVED), which a rebuild cures."""
    if getattr(exc, "sqlite_errorname", "") == "SQLITE_READONLY_DBMOVED":
        return False
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def open_scan(record: Record, projects: Sequence[str], history: bool) -> storemod.Store:
    """A throwaway store in memory, read from every file: the same tables, never saved.
    Without FTS5 the text stays in Python and is matched there."""
    conn = _connect(":memory:")
    fts = storemod.has_fts5()
    storemod.create(conn, fts=fts, meta={"format": FORMAT})
    store = storemod.Store(conn, None if fts else {}, kind="scan")
    storemod.sync(store, record, projects, history=history)
    return store
