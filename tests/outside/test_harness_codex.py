"""The session ritual inside the real Codex CLI, installed as a user installs it (`atlas
setup codex --as alice`), against a scripted Responses API."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support.runner import run_atlas
from support.scripted_model import RESPONSES, Call, Say, ScriptedModel, turn
from support.sessions import STATUS, author, codex_home, codex_session, versions

from atlas_files.storage.record import Record


def shell(command: str) -> Call:
    return Call("exec_command", {"cmd": command})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    Record.init(root, ["web"])
    assert run_atlas("--as", "ann", "status", "write", record=root, input=STATUS).returncode == 0
    out = run_atlas("setup", "codex", "--as", "alice", "--dir", str(root))
    assert out.returncode == 0, out.stderr
    return root


def trust(codex: Path, project: Path, home: Path, *extra: str) -> Any:
    """`atlas setup codex --as alice --trust`, with this Codex on PATH and HOME the
    harness's (whose ~/.codex/config.toml Codex writes the trust into)."""
    path = f"{codex.parent}{os.pathsep}{os.environ['PATH']}"
    return run_atlas("setup", "codex", "--as", "alice", "--dir", str(project), "--trust",
                     *extra, env={"HOME": str(home), "PATH": path}, process=True)


def test_the_ritual_in_codex(codex_binary: Path, project: Path, harness_home: Path) -> None:
    """Installed as a user does: setup, the project trusted, the hooks trusted ahead of
    time by `setup --trust` (no per-run bypass), then an unattended `codex exec`."""
    script = [
        turn(shell("printf 'Notes.\\n' | atlas put notes -f -")),
        turn(Say("Notes written.")),
        turn(shell("atlas end --status 'Notes written; loader next.'")),
        turn(Say("Status written.")),
    ]
    with ScriptedModel(RESPONSES, script) as model:
        codex_home(harness_home, project, model)
        trusted = trust(codex_binary, project, harness_home, "--json")
        assert trusted.returncode == 0, trusted.stderr
        assert "now trusts the atlas hooks" in " ".join(trusted.json()["notes"])
        assert "trusted_hash" in (harness_home / ".codex" / "config.toml").read_text()
        run = codex_session(codex_binary, project, "Write notes.", model, home=harness_home,
                            record=project, trust_hooks=False)
    assert run.returncode == 0, run.stderr[-3000:]
    turns = model.turns
    assert len(turns) == 4 and model.overrun == 0
    assert STATUS in turns[0].text()  # the SessionStart briefing
    # ... which says what is true of Codex: setup gave its shell ATLAS_AS (issue 40, 14)
    assert "act as alice where `atlas setup codex --as alice`" in turns[0].text()
    assert "does not know who you are" not in turns[0].text()
    assert "wrote notes v1" in turns[1].text()  # the agent's shell wrote as alice
    reason = turns[2].text()  # the Stop hook's block, as the model's next input
    assert "notes v1" in reason and "atlas --as alice end --status" in reason
    notes = versions(run.record, "projects/web/artifacts/notes/")
    assert [author(run.record, p) for p in notes] == ["alice"]
    assert author(run.record, versions(run.record, "projects/web/status/")[-1]) == "alice"
    assert json.loads(run.record["sessions/alice.json"])["state"] == "ended"


def test_codex_skips_hooks_nobody_trusted(codex_binary: Path, project: Path,
                                          harness_home: Path) -> None:
    """Why `atlas setup codex` says what to trust: in a trusted project, hooks no person
    trusted never run in `codex exec`, and nothing says so."""
    with ScriptedModel(RESPONSES, [turn(Say("Hello."))]) as model:
        run = codex_session(codex_binary, project, "Say hello.", model, home=harness_home,
                            record=project, trust_hooks=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert STATUS not in model.turns[0].text()
    assert "sessions/alice.json" not in run.record
    out = run_atlas("setup", "codex", "--as", "alice", "--dir", str(project), "--json")
    assert "/hooks" in " ".join(out.json()["notes"])


def test_trust_needs_codex_and_a_trusted_project(codex_binary: Path, project: Path,
                                                 harness_home: Path) -> None:
    """--trust refuses, saying what to do by hand, where no codex is on PATH or Codex
    does not read the project (not trusted); the hooks stay written either way."""
    out = run_atlas("setup", "codex", "--as", "alice", "--dir", str(project), "--trust",
                    env={"HOME": str(harness_home), "PATH": "/usr/bin:/bin"}, process=True)
    assert out.returncode == 2 and "no `codex` is on PATH" in out.stderr
    assert "/hooks" in out.stderr and (project / ".codex" / "hooks.json").exists()
    out = trust(codex_binary, project, harness_home)
    assert out.returncode == 2 and "codex exec --trust" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert run_atlas("setup", "claude", "--trust", "--dir", str(project)).returncode == 2
