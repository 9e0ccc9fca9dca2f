"""The search index is derived and disposable: kept up to date by each search, rebuilt
when damaged, replaced by a scan when it cannot be written, never touched by writers."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from support.git import git
from support.runner import atlas_command, child_env

from atlas_files.facts.errors import AtlasWarning
from atlas_files.protocol import artifacts, corrections, decisions, status
from atlas_files.search import index, search, store
from atlas_files.storage.record import Record


def ids(doc: dict[str, Any]) -> list[str]:
    return [r["id"] for r in doc["results"]]


def quiet(record: Record, query: str, **kw: Any) -> tuple[list[str], list[str]]:
    """(result ids, warnings) of one search."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AtlasWarning)
        doc = search(record, query, **kw)
    return ids(doc), [str(w.message) for w in caught]


def seeded(record: Record) -> None:
    artifacts.put(record, "plan", "the kestrel plan, first draft\n", author="ann")
    artifacts.put(record, "plan", "the kestrel plan, second draft\n", author="ann", expect=1)
    artifacts.put(record, "notes", "a kestrel was seen\n", author="bob")
    status.write(record, "hunting kestrel bugs\n", author="ann")
    d = decisions.decide(record, topic="birds", recommended="kestrel", chosen="kestrel",
                         relation="agreed", why="kestrel fits", author="ann")
    corrections.correct(record, d.id, what="a kestrel is a falcon", author="bob")


def test_index_lives_in_the_ignored_cache_and_git_never_sees_it(record: Record) -> None:
    seeded(record)
    search(record, "kestrel")
    path = index.index_path(record)
    assert path == record.root / ".atlas-cache" / "search.sqlite" and path.is_file()
    if shutil.which("git"):
        git(record.root, "init", "-q")
        status = git(record.root, "status", "--porcelain", "--untracked-files=all")
        assert ".atlas-cache" not in status and "projects/" in status


def test_writers_never_touch_the_index(record: Record) -> None:
    seeded(record)
    search(record, "kestrel")
    path = index.index_path(record)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    artifacts.put(record, "plan", "third\n", author="ann", expect=2)
    decisions.decide(record, topic="t", recommended="a", chosen="b", relation="agreed",
                     why="w", author="ann")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_each_search_sees_what_changed_since(record: Record) -> None:
    seeded(record)
    assert ids(search(record, "kestrel", kinds=["artifact"])) != []
    artifacts.put(record, "plan", "an osprey now\n", author="ann", expect=2)
    artifacts.put(record, "fresh", "osprey too\n", author="ann")
    assert sorted(ids(search(record, "osprey"))) == ["fresh@v1", "plan@v3"]
    # A topic removed by hand is gone from the results; so is its folder's row.
    for p in (record.root / "projects/web/artifacts/fresh").iterdir():
        p.chmod(0o644)
    shutil.rmtree(record.root / "projects/web/artifacts/fresh")
    assert ids(search(record, "osprey")) == ["plan@v3"]


def test_an_index_deleted_under_an_open_connection_is_rebuilt_not_scanned(
        record: Record, monkeypatch: pytest.MonkeyPatch) -> None:
    # Another searcher deleted the index between this one opening it and writing to it:
    # SQLite says "readonly" (the file moved), which is no read-only record.
    seeded(record)
    search(record, "kestrel")
    artifacts.put(record, "fresh", "an osprey\n", author="ann")
    opened = index._open_current

    def open_then_lose(path: Path) -> Any:
        found = opened(path)
        os.unlink(path)
        return found

    monkeypatch.setattr(index, "_open_current", open_then_lose)
    found, said = quiet(record, "osprey")
    assert found == ["fresh@v1"] and said == []


def test_a_file_added_in_the_same_clock_tick_is_not_missed(record: Record) -> None:
    artifacts.put(record, "plan", "first\n", author="ann")
    folder = record.root / "projects/web/artifacts/plan"
    search(record, "first")  # the folder changed just now: its fingerprint is not trusted
    st = folder.stat()
    artifacts.put(record, "plan", "second heron\n", author="ann", expect=1)
    os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns))  # as if in the same tick
    assert ids(search(record, "heron")) == ["plan@v2"]


def test_a_file_replaced_under_its_name_is_read_again(record: Record) -> None:
    v = artifacts.put(record, "plan", "old words\n", author="ann")
    assert ids(search(record, "old")) == ["plan@v1"]
    data = v.path.read_bytes().replace(b"old words", b"new heron")
    tmp = v.path.with_name("replacement")
    tmp.write_bytes(data)
    os.replace(tmp, v.path)  # a new inode, as `atlas check --fix` or a git restore makes
    time.sleep(0.01)
    assert ids(search(record, "heron")) == ["plan@v1"]
    assert ids(search(record, "old")) == []


def test_a_version_that_vanished_after_the_update_is_never_shown(record: Record) -> None:
    artifacts.put(record, "plan", "heron one\n", author="ann")
    v2 = artifacts.put(record, "plan", "heron two\n", author="ann", expect=1)
    folder = record.root / "projects/web/artifacts/plan"
    old = time.time_ns() - 10**10
    os.utime(folder, ns=(old, old))  # settled: the next search trusts the fingerprint
    assert ids(search(record, "heron", all_versions=True)) == ["plan@v2", "plan@v1"]
    v2.path.unlink()
    os.utime(folder, ns=(old, old))  # the removal hidden from the fingerprint
    assert ids(search(record, "heron", all_versions=True)) == ["plan@v1"]


@pytest.mark.parametrize("damage", ["delete", "truncate", "last-page", "empty", "garbage",
                                    "other-atlas"])
def test_damaged_index_is_rebuilt_and_answers_the_same(record: Record, damage: str) -> None:
    seeded(record)
    first = search(record, "kestrel", all_projects=True)
    path = index.index_path(record)
    if damage == "delete":
        path.unlink()
    elif damage == "truncate":
        with open(path, "r+b") as fh:
            fh.truncate(path.stat().st_size // 2)
    elif damage == "last-page":
        with open(path, "r+b") as fh:
            fh.truncate(path.stat().st_size - 4096)
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "garbage":
        path.write_bytes(os.urandom(path.stat().st_size))
    else:
        conn = sqlite3.connect(path)
        conn.execute("UPDATE meta SET value = '1/0.0.1' WHERE key = 'format'")
        conn.commit()
        conn.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", AtlasWarning)  # a rebuild is silent
        again = search(record, "kestrel", all_projects=True)
    assert again == first and len(first["results"]) == 5
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] \
        == index.FORMAT
    conn.close()


def test_an_unwritable_index_falls_back_to_a_scan_and_says_so(record: Record) -> None:
    seeded(record)
    expected = search(record, "kestrel", all_versions=True)
    shutil.rmtree(record.root / ".atlas-cache")
    (record.root / ".atlas-cache").write_text("not a folder")  # nothing can be written there
    found, said = quiet(record, "kestrel", all_versions=True)
    assert found == ids(expected)
    assert len(said) == 1 and "cannot be written" in said[0] and "read directly" in said[0]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_record_falls_back_to_a_scan(record: Record) -> None:
    seeded(record)
    modes = {}
    for folder, _, _ in os.walk(record.root):
        modes[folder] = os.stat(folder).st_mode
        os.chmod(folder, 0o555)
    try:
        found, said = quiet(record, "kestrel")
    finally:
        for folder, mode in modes.items():
            os.chmod(folder, mode)
    assert len(found) == 5 and len(said) == 1 and "cannot be written" in said[0]


def test_without_fts5_every_file_is_scanned_with_the_same_matches(
        record: Record, monkeypatch: pytest.MonkeyPatch) -> None:
    seeded(record)
    artifacts.put(record, "long", "kestrel " + "filler " * 300 + "\n", author="ann")
    queries = ["kestrel", '"kestrel plan"', "kest*", "falcon", "draft kestrel"]
    expected = [ids(search(record, q, all_versions=True)) for q in queries]
    monkeypatch.setattr(store, "has_fts5", lambda: False)
    for q, want in zip(queries, expected, strict=True):
        found, said = quiet(record, q, all_versions=True)
        assert found == want, q
        assert len(said) == 1 and "no FTS5" in said[0]


def test_a_damaged_version_is_left_out_with_a_warning(record: Record) -> None:
    artifacts.put(record, "plan", "kestrel\n", author="ann")
    bad = artifacts.put(record, "other", "kestrel too\n", author="ann")
    bad.path.chmod(0o644)
    bad.path.write_bytes(b"no front matter at all, kestrel\n")
    found, said = quiet(record, "kestrel")
    assert found == ["plan@v1"]
    assert said == ["1 file in the searched projects cannot be read and is left out of the "
                    "search (`atlas check` says which)"]


def test_a_rebuild_killed_halfway_leaves_nothing_that_matters(record: Record) -> None:
    seeded(record)
    search(record, "kestrel")
    leftover = index.cache_dir(record) / (index.INDEX_NAME + ".tmp-999999-dead")
    leftover.write_bytes(b"half")
    index.index_path(record).unlink()
    assert len(ids(search(record, "kestrel"))) == 5
    assert not leftover.exists()


def test_the_index_reads_only_changed_folders(record: Record,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from atlas_files.search import collect

    # A file's change time cannot be set back like a folder's: trust fresh ones at once.
    monkeypatch.setattr(collect, "SETTLE_NS", 0, raising=False)
    for i in range(5):
        artifacts.put(record, f"t{i}", f"kestrel {i}\n", author="ann")
    old = time.time_ns() - 10**10
    for folder in (record.root / "projects/web").rglob("*"):
        if folder.is_dir():
            os.utime(folder, ns=(old, old))
    search(record, "kestrel")
    read: list[str] = []
    real = collect.read

    def spy(folder: collect.Folder, file: str, ino: int) -> collect.Doc:
        read.append(file)
        return real(folder, file, ino)

    monkeypatch.setattr(collect, "read", spy)
    assert len(ids(search(record, "kestrel"))) == 5
    assert read == []
    artifacts.put(record, "t3", "kestrel again\n", author="ann", expect=1)
    assert len(ids(search(record, "kestrel"))) == 5
    assert read == ["t3.v0002.md"]
    # An edit in place (issue 31 item 21) is noticed by a stat, and that file alone read.
    _edit_in_place(record.root / "projects/web/artifacts/t1/t1.v0001.md", b"kestrel",
                   b"osprey")
    assert ids(search(record, "osprey")) == ["t1@v1"]
    assert read == ["t3.v0002.md", "t1.v0001.md"]


def test_index_size_stays_small(record: Record, tmp_path: Path) -> None:
    seeded(record)
    search(record, "kestrel", all_versions=True)
    assert index.index_path(record).stat().st_size < 1_000_000


KILLED = r"""
import os, sys
from atlas_files.storage.record import Record
from atlas_files.search import search, store
real = store._Writer.flush
def flush_then_die(self):
    real(self)
    os._exit(9)  # killed inside the transaction: rows written, nothing committed
store._Writer.flush = flush_then_die
search(Record(sys.argv[1]), "kestrel")
"""


def test_a_search_killed_while_writing_the_index_harms_nothing(record: Record) -> None:

    seeded(record)
    before = search(record, "kestrel")
    artifacts.put(record, "plan", "a kestrel again\n", author="ann", expect=2)
    artifacts.put(record, "late", "kestrel late\n", author="ann")
    done = subprocess.run([sys.executable, "-c", KILLED, str(record.root)], check=False)
    assert done.returncode == 9
    assert (index.cache_dir(record) / "search.sqlite-journal").exists()  # a hot journal
    after = search(record, "kestrel")
    want = [i for i in ids(before) if i != "plan@v2"] + ["plan@v3", "late@v1"]
    assert sorted(ids(after)) == sorted(want)


def test_an_index_that_cannot_be_updated_falls_back_to_a_scan(
        record: Record, monkeypatch: pytest.MonkeyPatch) -> None:
    seeded(record)
    expected = ids(search(record, "kestrel"))

    def full(*args: Any, **kwargs: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    artifacts.put(record, "late", "kestrel late\n", author="ann")
    monkeypatch.setattr(store, "sync", full)  # the module index.py writes with
    real_open_scan = index.open_scan

    def open_scan(*args: Any, **kwargs: Any) -> store.Store:
        monkeypatch.undo()  # the scan reads files with the real sync
        return real_open_scan(*args, **kwargs)

    monkeypatch.setattr(index, "open_scan", open_scan)
    found, said = quiet(record, "kestrel")
    assert sorted(found) == sorted(expected + ["late@v1"])
    assert len(said) == 1 and "disk is full" in said[0]


# -- in place edits (issue 31 item 21) ------------------------------------------------------


def _settled(record: Record, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every folder's time set back, and fresh file times trusted at once: the index then
    believes each folder unchanged and each file as read, unless a stamp says otherwise."""
    from atlas_files.search import collect

    monkeypatch.setattr(collect, "SETTLE_NS", 0, raising=False)
    old = time.time_ns() - 10**10
    for folder, _, _ in os.walk(record.root / "projects"):
        os.utime(folder, ns=(old, old))


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """What an editor that writes over the file does: same name, same inode, and the
    folder's time untouched (a version is read-only, so the mode is lifted first)."""
    folder_times = path.parent.stat()
    path.chmod(0o644)
    data = path.read_bytes()
    assert old in data
    with open(path, "r+b") as fh:
        fh.write(data.replace(old, new))
        fh.truncate()
    os.utime(path.parent, ns=(folder_times.st_atime_ns, folder_times.st_mtime_ns))


@pytest.mark.parametrize("what", ["latest", "status", "decision", "earlier"])
def test_a_version_edited_in_place_is_searched_as_it_reads_now(
        record: Record, monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    artifacts.put(record, "plan", "the plan of the kestrel\n", author="ann")
    v2 = artifacts.put(record, "plan", "the plan, second of the kestrel\n", author="ann",
                       expect=1)
    s, _ = status.write(record, "hunting the kestrel\n", author="ann")
    d = decisions.decide(record, topic="birds", recommended="r", chosen="c",
                         relation="agreed", why="the kestrel is best", author="ann")
    history = what == "earlier"
    target = {"latest": v2.path, "status": s.path, "decision": d.path,
              "earlier": v2.path.with_name("plan.v0001.md")}[what]
    expected = {"latest": "plan@v2", "status": "status@v1", "decision": d.id,
                "earlier": "plan@v1"}[what]
    _settled(record, monkeypatch)
    assert expected in ids(search(record, "kestrel", all_versions=history))
    assert ids(search(record, "osprey", all_versions=history)) == []
    _edit_in_place(target, b"kestrel", b"osprey")
    # The edit's new word is found, and the old word no longer finds the edited file.
    assert ids(search(record, "osprey", all_versions=history)) == [expected]
    assert expected not in ids(search(record, "kestrel", all_versions=history))
    out = search(record, "osprey", all_versions=history)["results"][0]
    assert "**osprey**" in out["snippet"]


# -- an index that this record's searches did not make (issue 25, "look at") ---------------


def _plant_row(path: Path, folder: str, file: str, **fields: Any) -> None:
    """Add a row (and its text) to the index at ``path``, as someone editing it would."""
    conn = sqlite3.connect(path)
    rowid = conn.execute("SELECT max(rowid) FROM docs").fetchone()[0] + 1
    row = {"rowid": rowid, "folder": folder, "file": file, "ino": 1, "kind": "artifact",
           "project": "web", "name": "plan", "version": 9, "ref": "plan@v9",
           "author": "mallory", "written_at": "2026-01-01T00:00:00Z", "target": None,
           "proposal": 0, "relation": None, "note": None, "latest": 1} | fields
    marks = ", ".join("?" * len(row))
    conn.execute(f"INSERT OR REPLACE INTO docs ({', '.join(row)}) VALUES ({marks})",
                 list(row.values()))
    conn.execute("INSERT INTO fts (rowid, head, why, body) VALUES (?, 'hunter', '', 'hunter')",
                 (rowid,))
    conn.commit()
    conn.close()


def test_an_index_copied_in_from_elsewhere_is_rebuilt_not_believed(
        record: Record, tmp_path: Path) -> None:
    """An index made by another record's search (committed to git with the record, or
    planted by another writer of it) names rows of its own making: one here leads to a
    diary outside the record. It is not the file this record's searches made, so it is
    rebuilt, and the diary is never read."""
    diary = tmp_path / "diary.md"
    diary.write_text("---\ntitle: diary\n---\nmy password is hunter2, the hunter said\n")
    other = Record.init(tmp_path / "other", ["web"])
    artifacts.put(other, "plan", "a plan\n", author="eve")
    search(other, "plan")
    _plant_row(index.index_path(other), "projects/web/artifacts/../../../..", "diary.md")
    seeded(record)
    search(record, "kestrel")
    shutil.copyfile(index.index_path(other), index.index_path(record))
    found = search(record, "hunter")
    assert found["results"] == []
    assert sorted(ids(search(record, "kestrel", kinds=["artifact"]))) == ["notes@v1", "plan@v2"]


def test_a_row_of_the_index_never_leads_a_read_outside_the_record(
        record: Record, tmp_path: Path) -> None:
    """Even a row in this record's own index (edited in place by another writer of the
    record) is only a candidate: the file read is found from the record's layout, and
    what a result says comes from that file."""
    diary = tmp_path / "diary.md"
    diary.write_text("---\ntitle: diary\n---\nmy password is hunter2, the hunter said\n")
    seeded(record)
    search(record, "kestrel")
    path = index.index_path(record)
    _plant_row(path, "projects/web/artifacts/../../../..", "diary.md")
    _plant_row(path, "projects/web/artifacts/plan", "plan.v0002.md", name="plan",
               version=2, ref="plan@v2", author="mallory")
    found = search(record, "hunter")["results"]
    assert all("hunter2" not in r["snippet"] for r in found)
    assert [(r["id"], r["author"]) for r in found] == []  # plan@v2 does not say hunter
    shown = search(record, "kestrel", kinds=["artifact"])["results"]
    assert {(r["id"], r["author"]) for r in shown} == {("plan@v2", "ann"), ("notes@v1", "bob")}


@pytest.mark.parametrize("planted", ["symlink", "fifo", "folder"])
def test_a_planted_special_file_in_place_of_the_index_costs_nothing(
        record: Record, tmp_path: Path, planted: str) -> None:
    """A symlink is replaced, never written through (the file it names stays as it was);
    a named pipe is replaced without a wait; a folder makes the search read the files."""
    seeded(record)
    search(record, "kestrel")
    expected = ids(search(record, "kestrel"))
    path = index.index_path(record)
    path.unlink()
    victim = tmp_path / "victim.db"
    conn = sqlite3.connect(victim)
    conn.execute("CREATE TABLE precious (x)")
    conn.commit()
    conn.close()
    before = (victim.read_bytes(), victim.stat().st_mtime_ns)
    if planted == "symlink":
        path.symlink_to(victim)
    elif planted == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    child = subprocess.run(
        atlas_command("--record", str(record.root), "-p", "web", "search", "kestrel", "--json"),
        capture_output=True, text=True, timeout=60,
        env=child_env())
    assert child.returncode == 0, child.stderr
    assert ids(json.loads(child.stdout)) == expected
    assert "Traceback" not in child.stderr
    assert (victim.read_bytes(), victim.stat().st_mtime_ns) == before
    if planted != "folder":
        assert path.is_file() and not path.is_symlink()
    else:
        assert "cannot be written" in child.stderr
