"""`atlas begin` and `atlas end` as a session meets them: what the briefing shows, in
which order, what `end` checks and reports; and the JSON is the API's result."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.runner import run_atlas

from atlas_files.api import Worker, core, decisions, leases, ritual, status
from atlas_files.cli import main
from atlas_files.cli.app import cli
from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput, VersionConflict
from atlas_files.protocol import sessions
from atlas_files.protocol.telemetry.rows import write_row
from atlas_files.storage.record import Record

BEGIN_KEYS = ["identity", "project", "started_at", "status", "new", "corrections",
              "proposals", "decisions", "tasks", "leases", "machines", "repository",
              "truncated", "guard"]


def invoke(record: Record, *args: str, identity: str = "bob") -> Any:
    return CliRunner().invoke(cli, ["--record", str(record.root), "--as", identity, *args],
                              catch_exceptions=False)


@pytest.fixture
def ann(record: Record) -> Worker:
    w = Worker(record, "ann")
    status.status_write(w, "Where things stand: the loader is next.\n")
    core.put(w, "plan", "v1\n", summary="first plan")
    return w


def test_begin_json_is_the_contract_and_the_api_result(
        record: Record, ann: Worker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    monkeypatch.setattr(timeutil, "now", lambda: at)
    monkeypatch.chdir(tmp_path)  # outside any git repository: the repository key is null
    twin = Record(shutil.copytree(record.root, tmp_path / "twin"))
    out = invoke(record, "begin", "--json")
    assert out.exit_code == 0
    doc = json.loads(out.stdout)
    assert list(doc) == BEGIN_KEYS
    api_doc = json.loads(json.dumps(ritual.begin(Worker(twin, "bob")).to_json()))
    assert doc == api_doc
    assert doc["repository"] is None
    assert doc["status"]["version"] == 1 and doc["status"]["author"] == "ann"
    assert [i["name"] for i in doc["new"]] == ["plan"]


def test_begin_reads_the_status_in_full_and_marks_it_read(record: Record, ann: Worker) -> None:
    bob = Worker(record, "bob")
    text = ritual.begin(bob).text
    assert "Status of web: v1, written just now by ann" in text
    assert "the loader is next." in text
    assert [i.name for i in core.feed(bob).items] == ["plan"]  # the status was read
    status.status_write(bob, "Mine now.\n")  # no stop sign: begin counted as reading it


def test_a_retraction_of_a_version_you_read_comes_first(record: Record, ann: Worker) -> None:
    bob = Worker(record, "bob")
    core.put(ann, "notes", "n\n")
    ritual.begin(bob)
    core.get(bob, "plan")
    ritual.end(bob, status="read the plan\n")
    decisions.correct(ann, "notes@v1", "a typo in the notes")
    decisions.retract(ann, "plan@v1", "the plan assumed the old API")
    doc = ritual.begin(bob)
    found = doc.to_json()["corrections"]
    assert [c["kind"] for c in found] == ["retraction", "correction"]
    assert found[0]["you_read"] is True and found[1]["you_read"] is False
    assert "you read plan v1; ann retracted it since: the plan assumed the old API" in doc.text


def test_only_what_came_since_your_last_session(record: Record, ann: Worker) -> None:
    bob = Worker(record, "bob")
    decisions.decide(ann, topic="old", recommended="a", chosen="a", relation="agreed", why="w")
    first = ritual.begin(bob).to_json()
    assert [d["topic"] for d in first["decisions"]] == ["old"]
    ritual.end(bob, status="done\n")
    decisions.decide(ann, topic="new", recommended="a", chosen="b", relation="disagreed",
                     why="timing")
    decisions.decide(bob, topic="mine", recommended="a", chosen="a", relation="agreed",
                     why="w")
    second = ritual.begin(bob)
    assert [d["topic"] for d in second.to_json()["decisions"]] == ["new"]
    assert "Since your last session" in second.text


def test_proposals_leases_and_machines(record: Record, ann: Worker) -> None:
    core.put(ann, "idea", "An idea.\n", proposal=True)
    leases.claim(ann, "box.gpu0", "2h", "training run")
    old = timeutil.format_time(datetime.now(UTC) - timedelta(days=2))
    write_row(record, {"machine": "box", "observed_at": old, "observer": "p",
                       "reachable": True, "error": None, "gpus": []})
    now = timeutil.format_time(datetime.now(UTC))
    write_row(record, {"machine": "cube", "observed_at": now, "observer": "p",
                       "reachable": True, "error": None,
                       "gpus": [{"index": 1, "memory_used_mib": 40000, "processes": []}]})
    write_row(record, {"machine": "dark", "observed_at": now, "observer": "p",
                       "reachable": False, "error": "ssh: timed out", "gpus": []})
    doc = ritual.begin(Worker(record, "bob"))
    data = doc.to_json()
    assert [p["name"] for p in data["proposals"]] == ["idea"]
    assert [lease["resource"] for lease in data["leases"]["held"]] == ["box.gpu0"]
    assert "advisory" in data["leases"]["advisory"]
    problems = {(m["machine"], m["problem"]) for m in data["machines"]}
    assert problems == {("box", "stale"), ("dark", "unreachable"),
                        ("cube", "busy without a lease")}
    assert "box.gpu0: held by ann for" in doc.text and "Leases are advisory" in doc.text


def test_end_checks_the_status_and_reports_the_rest(record: Record, ann: Worker) -> None:
    bob = Worker(record, "bob")
    ritual.begin(bob)
    core.put(bob, "idea", "Use the cache.\n", proposal=True)
    leases.claim(bob, "box.gpu1", "1h", "tests")
    core.put(ann, "plan", "v2\n", summary="second plan")
    not_yet = ritual.end(bob, release_leases=True)
    assert not not_yet.ok and "atlas end --status" in (not_yet.todo or "")
    assert [lease.resource for lease in not_yet.leases_held] == ["box.gpu1"]
    assert not_yet.leases_released == ()  # a session that did not end keeps its leases
    row = sessions.read(record, "bob")
    assert row is not None and row.open
    done = ritual.end(bob, status="Cache idea proposed.\n", release_leases=True)
    assert done.ok and done.written is not None and done.written["version"] == 2
    assert [w.label for w in done.others] == ["plan v2"]
    assert [lease.resource for lease in done.leases_released] == ["box.gpu1"]
    assert [t.name for t in done.proposals_open] == ["idea"]
    row = sessions.read(record, "bob")
    assert row is not None and not row.open and row.ended_at == done.ended_at


def test_end_exit_codes_through_the_cli(record: Record, ann: Worker) -> None:
    assert invoke(record, "begin").exit_code == 0
    core.put(Worker(record, "bob"), "notes", "n\n")
    out = invoke(record, "end")
    assert out.exit_code == 1 and "not ended" in out.stdout
    doc = json.loads(invoke(record, "end", "--json").stdout)
    assert doc["ok"] is False and doc["wrote"][0]["name"] == "notes"
    status.status_write(ann, "moved\n")
    with pytest.raises(VersionConflict):
        ritual.end(Worker(record, "bob"), status="mine\n")
    with pytest.raises(SystemExit) as exited:
        main(["--record", str(record.root), "--as", "bob", "end", "--status", "x", "-f", "-"])
    assert exited.value.code == 2


def test_too_small_a_briefing_is_refused(record: Record) -> None:
    with pytest.raises(BadInput, match="at least"):
        ritual.begin(Worker(record, "bob"), max_chars=100)


def test_the_help_states_the_briefings_real_minimum(record: Record) -> None:
    """`--help` said x>=1 while the command needed 800: the range shown is the one held."""
    shown = run_atlas("begin", "--help").stdout
    assert f"x>={ritual.MIN_CHARS}" in " ".join(shown.split())
    r = run_atlas("begin", "--max-chars", "200", record=record.root, identity="bob")
    assert r.returncode == 2 and str(ritual.MIN_CHARS) in r.stderr
    ok = run_atlas("begin", "--max-chars", str(ritual.MIN_CHARS), record=record.root,
                   identity="bob")
    assert ok.returncode == 0, ok.stderr


def test_end_writes_the_status_of_the_project_the_session_began_on(record: Record) -> None:
    ritual.begin(Worker(record, "bob", "ml"))
    done = ritual.end(Worker(record, "bob"), status="ml: the data is loaded\n")
    assert done.ok and done.project == "ml"
    assert status.status_show(Worker(record, "bob", "ml")).doc is not None
    assert status.status_show(Worker(record, "bob", "web")).doc is None


def test_a_second_end_with_nothing_written_between_is_ok(record: Record, ann: Worker) -> None:
    bob = Worker(record, "bob")
    ritual.begin(bob)
    first = ritual.end(bob, status="done\n")
    again = ritual.end(bob)
    assert first.ok and again.ok and again.wrote == ()
    core.put(bob, "late", "written after the end\n")
    late = ritual.end(bob)
    assert not late.ok and "since your last `atlas end`" in (late.todo or "")
