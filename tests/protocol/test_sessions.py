"""Session rows: what `atlas begin` records, what `atlas check` says of them, and how a
session's own writes are found in the record (no bookkeeping in the writers)."""

from __future__ import annotations

import json

import pytest

from atlas_files.api import Worker, core, decisions, leases, ritual, status
from atlas_files.api import checks as check_api
from atlas_files.facts.errors import DamagedFile
from atlas_files.protocol import sessions
from atlas_files.storage import schemas
from atlas_files.storage.record import Record


def _open_row(record: Record, who: str = "bob") -> sessions.Row:
    ritual.begin(Worker(record, who))
    row = sessions.read(record, who)
    assert row is not None
    return row


def test_begin_writes_a_row_that_atlas_check_accepts(record: Record) -> None:
    ann = Worker(record, "ann")
    status.status_write(ann, "Where things stand.\n")
    core.put(ann, "plan", "A plan.\n")
    leases.claim(ann, "box.gpu0", "1h", "training")
    row = _open_row(record)
    assert row.open and row.project == "web"
    assert row.saw.status == 1 and row.saw.topics == {"plan": 1}
    assert row.saw.leases == {"box.gpu0": 1}
    data = json.loads((record.root / "sessions" / "bob.json").read_text())
    assert schemas.errors("session", data) == []
    assert check_api.check(record.root).ok


def test_atlas_check_reports_a_session_row_that_breaks_its_schema(record: Record) -> None:
    _open_row(record)
    path = record.root / "sessions" / "bob.json"
    data = json.loads(path.read_text())
    data["state"] = "paused"
    path.write_text(json.dumps(data))
    findings = check_api.check(record.root).findings
    assert any(f.code == "ATL001" and "sessions" in str(f.path) for f in findings)
    (record.root / "sessions" / "carol.json").write_text(path.read_text().replace(
        '"paused"', '"open"'))
    findings = check_api.check(record.root).findings
    assert any(f.code == "ATL004" and "carol.json" in str(f.path) for f in findings)


def test_sessions_are_kept_out_of_git(record: Record) -> None:
    assert "sessions/" in (record.root / ".gitignore").read_text().splitlines()


def test_a_damaged_row_is_named_and_begin_replaces_it(record: Record) -> None:
    (record.root / "sessions").mkdir()
    (record.root / "sessions" / "bob.json").write_text("{not json")
    with pytest.raises(DamagedFile, match="session row is damaged"):
        sessions.read(record, "bob")
    with pytest.warns(UserWarning, match="damaged"):
        ritual.begin(Worker(record, "bob"))
    assert sessions.read(record, "bob") is not None


def test_each_kind_of_write_since_begin_is_found_with_its_author(record: Record) -> None:
    ann, bob = Worker(record, "ann"), Worker(record, "bob")
    status.status_write(ann, "s1\n")
    core.put(ann, "plan", "p1\n")
    row = _open_row(record)
    assert sessions.writes_since(record, row) == []
    status.status_show(bob)
    status.status_write(bob, "s2\n")
    core.get(bob, "plan")
    core.put(bob, "plan", "p2\n")
    core.put(bob, "fresh", "a new topic\n")
    core.put(ann, "other", "by ann\n")
    decisions.decide(bob, topic="t", recommended="a", chosen="a", relation="agreed", why="w")
    decisions.correct(bob, "plan@v1", "wrong")
    leases.claim(bob, "box.gpu1", "1h", "run")
    found = sessions.writes_since(record, row)
    mine = {(w.kind, w.name) for w in sessions.mine(found, "bob")}
    assert {("status", "status"), ("put", "plan"), ("put", "fresh"), ("lease", "box.gpu1")} \
        <= mine
    assert {w.kind for w in sessions.mine(found, "bob")} >= {"decision", "correction"}
    assert [(w.kind, w.name) for w in sessions.others(found, "bob")] == [("put", "other")]


def test_entries_written_before_the_session_began_are_not_counted(record: Record) -> None:
    bob = Worker(record, "bob")
    decisions.decide(bob, topic="t", recommended="a", chosen="a", relation="agreed", why="w")
    leases.claim(bob, "box.gpu1", "1h", "run")
    row = _open_row(record)
    assert sessions.writes_since(record, row) == []


