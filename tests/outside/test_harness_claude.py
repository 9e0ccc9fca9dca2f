"""The session ritual inside the real Claude Code binary, installed as a user installs it
(`atlas setup claude --as alice`), against a scripted model: what the model was shown is
read from the requests the binary sent, what happened from the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.runner import run_atlas
from support.scripted_model import ANTHROPIC, Say, ScriptedModel, turn
from support.sessions import STATUS, Session, author, bash, claude_session, versions

from atlas_files.storage.record import Record


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder that is also the record (atlas.yaml at its root), set up for
    Claude Code as alice; ann wrote the status and a plan before the session."""
    root = tmp_path / "project"
    Record.init(root, ["web"])
    assert run_atlas("--as", "ann", "status", "write", record=root, input=STATUS).returncode == 0
    assert run_atlas("--as", "ann", "put", "plan", record=root,
                     input="Step one.\n").returncode == 0
    out = run_atlas("setup", "claude", "--as", "alice", "--dir", str(root))
    assert out.returncode == 0, out.stderr
    return root


def session(claude: Path, project: Path, home: Path, model: ScriptedModel,
            prompt: str = "Write the loader notes.") -> Session:
    run = claude_session(claude, project, prompt, model, home=home, record=project)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    return run


def test_the_ritual_through_setup(claude_binary: Path, project: Path,
                                  harness_home: Path) -> None:
    """The briefing reaches the model; the agent's own shell writes as alice without
    ATLAS_AS in the harness's environment; the stop after a write without the status is
    blocked with the message; the status written next lets the session stop."""
    script = [
        turn(bash("printf 'Loader notes.\\n' | atlas put notes -f - --summary 'first notes'")),
        turn(Say("The notes are written.")),
        turn(bash("atlas end --status 'Notes written; the loader is next.'")),
        turn(Say("Status written; stopping.")),
    ]
    with ScriptedModel(ANTHROPIC, script) as model:
        run = session(claude_binary, project, harness_home, model)
    turns = model.turns
    assert len(turns) == 4 and model.overrun == 0
    first = turns[0].text()
    assert STATUS in first and "plan v1 by ann" in first  # the SessionStart briefing
    assert "act as alice" in first
    assert "wrote notes v1" in turns[1].text()  # the put's own output, as the tool result
    reason = turns[2].text()  # the Stop hook's block, as the model's next prompt
    assert "notes v1" in reason and "atlas --as alice end --status" in reason
    assert "ended" in turns[3].text()
    notes = versions(run.record, "projects/web/artifacts/notes/")
    assert notes == ["projects/web/artifacts/notes/notes.v0001.md"]
    assert author(run.record, notes[0]) == "alice"
    status = versions(run.record, "projects/web/status/")
    assert len(status) == 2 and author(run.record, status[-1]) == "alice"
    row = json.loads(run.record["sessions/alice.json"])
    assert row["state"] == "ended"


def test_a_turn_that_wrote_nothing_is_never_blocked(claude_binary: Path, project: Path,
                                                     harness_home: Path) -> None:
    script = [turn(bash("atlas get plan")), turn(Say("The plan has one step."))]
    with ScriptedModel(ANTHROPIC, script) as model:
        run = session(claude_binary, project, harness_home, model, "What is the plan?")
    assert len(model.turns) == 2 and model.overrun == 0
    assert "Step one." in model.turns[1].text()
    assert run.result["result"] == "The plan has one step."
    assert versions(run.record, "projects/web/status/") == [
        "projects/web/status/status.v0001.md"]


def test_a_model_that_never_writes_the_status_is_not_trapped(
        claude_binary: Path, project: Path, harness_home: Path) -> None:
    """The model stops again and again without the status: the hook blocks once, then
    the harness's stop_hook_active (or, failing that, its own limit) lets it stop."""
    script = [turn(bash("printf 'x\\n' | atlas put notes -f -"))]
    with ScriptedModel(ANTHROPIC, script, then=turn(Say("I am done."))) as model:
        session(claude_binary, project, harness_home, model)
    blocks = [r for r in model.turns if "atlas --as alice end --status" in r.text()
              and r.text().count("notes v1")]
    assert blocks, "the stop after a write without the status was never blocked"
    assert len(model.turns) <= 1 + 9  # the tool turn, then at most Claude's 8 blocks + 1
