"""The decisions demo scene records what the issue asks for, and leaves a valid record."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from support.runner import run_atlas

from atlas_files.cli.demo import decisions as scene_module
from atlas_files.protocol import corrections, decisions
from atlas_files.storage import entries
from atlas_files.storage.record import Record


@pytest.fixture
def demo_record(tmp_path: Path) -> tuple[Record, list[str]]:
    record = Record.init(tmp_path / "demo", ["web", "ml"])
    said: list[str] = []
    if importlib.util.find_spec("atlas_files.cli.demo.core") is not None:
        from atlas_files.cli.demo import core

        core.scene(record, lambda line: None)
    scene_module.scene(record, said.append)
    return record, said


def test_the_scene_records_three_relations_a_correction_and_an_accepted_proposal(
    demo_record: tuple[Record, list[str]],
) -> None:
    record, said = demo_record
    log = decisions.list_decisions(record, "ml") + decisions.list_decisions(record, "web")
    assert {d.relation for d in log} == {"agreed", "disagreed", "timed-out"}
    assert all(d.why for d in log)
    disagreed = next(d for d in log if d.relation == "disagreed")
    assert "timing" in disagreed.why

    [fix] = corrections.list_corrections(record, "ml")
    corrected = record.status_stream("ml").read(int(fix.ref.split("@v")[1]))
    assert fix.kind == "correction" and fix.author == corrected.author  # its own bad write

    accepting = [d for d in log if d.accepts]
    assert len(accepting) == 1
    name, version = accepting[0].accepts.split("@v")  # type: ignore[union-attr]
    assert corrections.proposal_state(record, "ml", name, int(version), True) == "accepted"

    text = "\n".join(said)
    assert "exit 2" in text and "accepted" in text and "corrected" in text


def test_the_scene_leaves_only_valid_entries(demo_record: tuple[Record, list[str]]) -> None:
    record, _ = demo_record
    for project in ("web", "ml"):
        for sub in ("decisions", "corrections"):
            for path in entries.entry_paths(record.root / "projects" / project / sub):
                entry = entries.read_entry(path)
                assert entry.digest_ok is True and entry.name_ok
                assert entries.validate(entry) == [], path
    if importlib.util.find_spec("atlas_files.cli.check") is not None:
        r = run_atlas("check", "--json", record=record.root)
        assert r.returncode == 0, r.stdout + r.stderr


def test_the_scene_runs_the_cli_through_the_shared_demo_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scenes show exit codes with one runner (atlas_files.cli.demo.atlas_cli), not each its
    own copy: the refused `decide` goes through it and its real exit code is shown."""
    from atlas_files.cli import demo

    calls: list[tuple[str | None, tuple[str, ...]]] = []
    real = demo.atlas_cli

    def recording(record: Record, who: str | None, *args: str,
                  body: str | None = None) -> tuple[int, str, str]:
        calls.append((who, args))
        return real(record, who, *args, body=body)

    monkeypatch.setattr(demo, "atlas_cli", recording)
    record = Record.init(tmp_path / "demo", ["web", "ml"])
    said: list[str] = []
    scene_module.scene(record, said.append)
    assert [(who, args[2]) for who, args in calls] == [("bob", "decide")]
    assert "bob: atlas decide without --relation -> exit 2, nothing written" in said
