"""The session ritual inside the real Gemini CLI, installed as a user installs it (`atlas
setup gemini --as alice`), against a scripted Gemini API. Gemini CLI lets no hook set the
agent's shell environment; setup's BeforeTool hook on the shell tool hands an atlas
command the identity instead, so the agent's plain `atlas put` acts as alice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.runner import run_atlas
from support.scripted_model import GEMINI, Call, Say, ScriptedModel, turn
from support.sessions import STATUS, author, gemini_session, versions

from atlas_files.storage.record import Record


def shell(command: str) -> Call:
    return Call("run_shell_command", {"command": command})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    Record.init(root, ["web"])
    assert run_atlas("--as", "ann", "status", "write", record=root, input=STATUS).returncode == 0
    out = run_atlas("setup", "gemini", "--as", "alice", "--dir", str(root))
    assert out.returncode == 0, out.stderr
    return root


def test_the_ritual_in_gemini_cli(gemini_binary: Path, project: Path,
                                  harness_home: Path) -> None:
    script = [
        turn(shell("printf 'Notes.\\n' | atlas put notes -f -")),
        turn(Say("Notes written.")),
        turn(shell("atlas end --status 'Notes written; loader next.'")),
        turn(Say("Status written.")),
    ]
    with ScriptedModel(GEMINI, script) as model:
        run = gemini_session(gemini_binary, project, "Write notes.", model, home=harness_home,
                             record=project)
    assert run.returncode == 0, run.stderr[-3000:]
    turns = model.turns
    assert len(turns) == 4 and model.overrun == 0
    first = turns[0].text()
    assert STATUS in first  # SessionStart's additionalContext, before the prompt
    assert "act as alice where `atlas setup gemini --as alice` installed" in first
    assert "wrote notes v1" in turns[1].text()
    reason = turns[2].text()  # AfterAgent's deny: the reason is the model's next prompt
    assert "notes v1" in reason and "atlas --as alice end --status" in reason
    assert [author(run.record, p) for p in
            versions(run.record, "projects/web/artifacts/notes/")] == ["alice"]
    assert author(run.record, versions(run.record, "projects/web/status/")[-1]) == "alice"
    assert json.loads(run.record["sessions/alice.json"])["state"] == "ended"
