"""The tables a search runs on, and how they are brought up to date with the record.

One schema serves the on-disk index and the in-memory scan alike: ``docs`` holds what each
result needs (kind, project, name, version, author, time, what it corrects or accepts),
``fts`` the text (an FTS5 table without a copy of the content: snippets are cut from the
file itself when a result is shown, which also proves the file still exists), and
``folders`` a fingerprint of each folder as it was when last read.

A folder's fingerprint is its inode and modification time, one stat: publishing or
removing a file in a folder changes its time, so a folder whose fingerprint is unchanged
needs no listing. Versions and entries are never edited in place by atlas, but a hand can
edit one (same name, same inode, the folder's time unchanged): each row keeps its file's
stamp (size and change time) as read, and every file a search may return is stat'ed and
read again when its stamp differs. A folder or file changed within the last SETTLE_NS is
not trusted (file systems stamp times with a coarse clock, so a change in the same tick
would leave the time unchanged); its fingerprint or stamp is stored empty and it is looked
at again next time.

Rows of ``fts`` whose ``docs`` row is deleted (a file removed or replaced by hand) are
left in place: a contentless FTS5 table cannot delete without the original text. They
can never match again, since rowids are never reused (AUTOINCREMENT), and a rebuild drops
them.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from atlas_files.search import collect

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

SETTLE_NS = collect.SETTLE_NS
BATCH = 2000
# bm25 weights of head (names, summaries, a decision's topic), why (a decision's why, a
# correction's text) and body: a word in a topic or a why outranks a passing mention.
WEIGHTS = (4.0, 3.0, 1.0)

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE folders (rel TEXT PRIMARY KEY, project TEXT NOT NULL, fp TEXT NOT NULL,
                      history INTEGER NOT NULL);
CREATE TABLE docs (
  rowid INTEGER PRIMARY KEY AUTOINCREMENT,
  folder TEXT NOT NULL, file TEXT NOT NULL, ino INTEGER NOT NULL,
  kind TEXT NOT NULL, project TEXT NOT NULL, name TEXT NOT NULL, version INTEGER,
  ref TEXT NOT NULL, author TEXT NOT NULL, written_at TEXT NOT NULL, target TEXT,
  proposal INTEGER NOT NULL, relation TEXT, note TEXT, latest INTEGER NOT NULL DEFAULT 1,
  stamp TEXT NOT NULL DEFAULT '',
  UNIQUE (folder, file)
);
CREATE INDEX docs_target ON docs (project, target);
"""
FTS_SCHEMA = ("CREATE VIRTUAL TABLE fts USING fts5(head, why, body, content='', "
              "tokenize='unicode61 remove_diacritics 2')")
_INSERT_DOC = (
    "INSERT INTO docs (rowid, folder, file, ino, kind, project, name, version, ref, author, "
    "written_at, target, proposal, relation, note, latest, stamp) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@cache
def has_fts5() -> bool:
    """Whether this Python's SQLite has FTS5 (a few builds leave it out)."""
    try:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute("CREATE VIRTUAL TABLE t USING fts5(a)")
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return True


@dataclass
class Store:
    """An open set of tables. ``texts`` holds the text when there is no FTS5 table (the
    scan without FTS5 matches in Python); None when FTS5 holds it."""

    conn: sqlite3.Connection
    texts: dict[int, tuple[str, str, str]] | None = None
    kind: str = "index"  # "index", or "scan" for a throwaway in-memory store

    def close(self) -> None:
        self.conn.close()


def create(conn: sqlite3.Connection, *, fts: bool, meta: dict[str, str]) -> None:
    conn.executescript(SCHEMA)
    if fts:
        conn.execute(FTS_SCHEMA)
    conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())


def fingerprint(path: str, now_ns: int) -> str:
    """``inode:mtime`` of a folder; "" when it changed too recently to be trusted, "-" when
    it does not exist."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "-"
    if not now_ns - SETTLE_NS > st.st_mtime_ns:
        return ""
    return f"{st.st_ino}:{st.st_mtime_ns}"


def sync(store: Store, record: Record, projects: Sequence[str], *, history: bool) -> None:
    """Bring the tables up to date with ``projects``' folders, in one transaction.

    Without ``history`` only the newest version of each stream is read (and whatever was
    read before stays); with it, every version, and from then on every new one too.
    """
    conn = store.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'docs'").fetchone()
        writer = _Writer(store, (row[0] if row else 0) + 1)
        for project in projects:
            _sync_project(writer, record, project, history)
        writer.flush()
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # the error that got us here is the news
            conn.execute("ROLLBACK")
        raise


def _sync_project(writer: _Writer, record: Record, project: str, history: bool) -> None:
    conn = writer.store.conn
    stored = {rel: (fp, bool(full)) for rel, fp, full in conn.execute(
        "SELECT rel, fp, history FROM folders WHERE project = ?", (project,))}
    now_ns = time.time_ns()
    for folder in collect.folders(record, project):
        fp = fingerprint(folder.path, now_ns)
        old, full = stored.pop(folder.rel, ("", False))
        # Entries are all read always; a stream's older versions once history is asked for.
        want = history or full or folder.stream is None
        # Versions and entries are never edited, but a hand can edit one in place (same
        # name, same inode, the folder's time unchanged): every file this search may
        # return is looked at, one stat each, and read again if it changed.
        edited = _edited(conn, folder, every=history or folder.stream is None)
        if fp and fp == old and (full or not want) and not edited:
            continue
        _sync_folder(writer, folder, want, edited)
        conn.execute("INSERT OR REPLACE INTO folders (rel, project, fp, history) "
                     "VALUES (?, ?, ?, ?)", (folder.rel, project, fp, int(want)))
    for rel in stored:  # a topic folder that is gone
        conn.execute("DELETE FROM docs WHERE folder = ?", (rel,))
        conn.execute("DELETE FROM folders WHERE rel = ?", (rel,))


def _edited(conn: sqlite3.Connection, folder: collect.Folder, *, every: bool) -> set[str]:
    """The files of ``folder`` whose size or change time is no longer what they were when
    read (``every``: all its files, else the newest version alone, which is all a search
    without --all-versions shows). A file gone is left to the listing."""
    rows = conn.execute(
        "SELECT file, stamp FROM docs WHERE folder = ?" + ("" if every else " AND latest = 1"),
        (folder.rel,)).fetchall()
    if not rows:
        return set()
    try:
        fd = os.open(folder.path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return set()
    edited = set()
    try:
        for file, stamp in rows:
            try:
                st = os.stat(file, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if not stamp or stamp != f"{st.st_size}:{st.st_ctime_ns}":
                edited.add(file)
    finally:
        os.close(fd)
    return edited


def _sync_folder(writer: _Writer, folder: collect.Folder, every: bool,
                 edited: set[str] | frozenset[str] = frozenset()) -> None:
    conn = writer.store.conn
    known = {file: (rowid, ino) for rowid, file, ino in conn.execute(
        "SELECT rowid, file, ino FROM docs WHERE folder = ?", (folder.rel,))}
    files = collect.listing(folder)
    gone = [(rowid,) for file, (rowid, ino) in known.items()
            if files.get(file) != ino or file in edited]
    kept = len(known) - len(gone)
    for file in edited:
        known.pop(file, None)  # read again below, if it is still wanted
    if gone:
        conn.executemany("DELETE FROM docs WHERE rowid = ?", gone)
    newest = None
    wanted = sorted(files)
    if folder.stream is not None:
        skip = len(folder.stream.name) + 2
        numbers = {f: int(f[skip:-3]) for f in wanted}
        newest = max(numbers.values(), default=0)
        if not every:
            wanted = [f for f in wanted if numbers[f] == newest]
    for file in wanted:
        ino = files[file]
        if file in known and known[file][1] == ino:
            continue
        writer.add(folder, collect.read(folder, file, ino), newest)
    if newest is not None and kept:
        # Rows read before may have been the newest then; new rows were flagged on insert.
        conn.execute("UPDATE docs SET latest = (version IS ?) WHERE folder = ? AND rowid < ?",
                     (newest, folder.rel, writer.first_rowid))


class _Writer:
    """Rows added in batches: one executemany per BATCH docs, for the docs and the text."""

    def __init__(self, store: Store, next_rowid: int) -> None:
        self.store = store
        self.first_rowid = next_rowid  # rows below it were there before this sync
        self.next_rowid = next_rowid
        self.docs: list[tuple[object, ...]] = []
        self.text: list[tuple[int, str, str, str]] = []

    def add(self, folder: collect.Folder, d: collect.Doc, newest: int | None) -> None:
        """Add ``d``; ``newest`` is its stream's newest version (None: an entry)."""
        rowid = self.next_rowid
        self.next_rowid += 1
        latest = newest is None or d.version == newest
        self.docs.append((rowid, folder.rel, d.file, d.ino, d.kind, d.project, d.name,
                          d.version, d.ref, d.author, d.written_at, d.target,
                          int(d.proposal), d.relation, d.note, int(latest), d.stamp))
        if d.kind != collect.DAMAGED:
            self.text.append((rowid, d.head, d.why, d.body))
        if len(self.docs) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.docs:
            return
        conn = self.store.conn
        conn.executemany(_INSERT_DOC, self.docs)
        if self.store.texts is None:
            conn.executemany("INSERT INTO fts (rowid, head, why, body) VALUES (?, ?, ?, ?)",
                             self.text)
        else:
            for rowid, *fields in self.text:
                self.store.texts[rowid] = (fields[0], fields[1], fields[2])
        self.docs.clear()
        self.text.clear()


def damaged_count(store: Store, projects: Sequence[str]) -> int:
    marks = ",".join("?" * len(projects))
    row = store.conn.execute(
        f"SELECT count(*) FROM docs WHERE kind = ? AND project IN ({marks})",
        (collect.DAMAGED, *projects)).fetchone()
    return int(row[0])
