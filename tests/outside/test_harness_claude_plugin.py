"""The Claude Code plugin of this repository, checked and used by the real binary: the
validator passes it (strict), one command installs it from the repository as a
marketplace, and the ritual and the MCP server then work through it as through `atlas
setup claude`, with the identity configured at install time."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.runner import run_atlas
from support.scripted_model import ANTHROPIC, Call, Say, ScriptedModel, turn
from support.sessions import STATUS, author, bash, claude_env, claude_session, versions

from atlas_files.storage.record import Record

REPO = Path(__file__).resolve().parents[2]
# Claude Code names a plugin's MCP tools mcp__plugin_<plugin>_<server>__<tool>.
PUT = "mcp__plugin_atlas_atlas__put"
PLUGIN = REPO / "plugin"


def claude(binary: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A `claude` subcommand (not a session) with the test's HOME; no model is asked."""
    with ScriptedModel(ANTHROPIC, []) as model:  # nothing should call it; if it does, here
        return subprocess.run([str(binary), *args], capture_output=True, text=True,
                              env=claude_env(home, model), cwd=home, timeout=120,
                              stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("target", [PLUGIN, REPO], ids=["plugin", "marketplace"])
def test_the_validator_passes_the_plugin_and_the_marketplace(
        claude_binary: Path, harness_home: Path, target: Path) -> None:
    out = claude(claude_binary, harness_home, "plugin", "validate", "--strict", str(target))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Validation passed" in out.stdout


def test_the_skill_teaches_the_protocol_briefly() -> None:
    text = (PLUGIN / "skills" / "atlas" / "SKILL.md").read_text()
    assert len(text) < 2000
    for command in ("atlas begin", "atlas get", "atlas put", "atlas lease claim",
                    "atlas decide", "atlas end --status"):
        assert command in text
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "Stop", "PreToolUse", "PostToolUse"}
    assert hooks["PreToolUse"][0]["hooks"][0]["command"] == "atlas guard --hook claude"
    assert hooks["PostToolUse"][0]["hooks"][0]["command"] == "atlas news --hook claude"


@pytest.fixture
def installed(claude_binary: Path, harness_home: Path, tmp_path: Path) -> Path:
    """The plugin installed for the user, in one command, from this repository as its
    marketplace, with the identity alice; a project that is a record, without `setup`."""
    out = claude(claude_binary, harness_home, "plugin", "install", "atlas", "--marketplace",
                 str(REPO), "--config", "identity=alice")
    assert out.returncode == 0, out.stdout + out.stderr
    root = tmp_path / "project"
    Record.init(root, ["web"])
    assert run_atlas("--as", "ann", "status", "write", record=root, input=STATUS).returncode == 0
    assert run_atlas("--as", "ann", "put", "plan", record=root, input="Step one.\n"
                     ).returncode == 0
    assert not (root / ".claude").exists()
    return root


def test_the_ritual_through_the_plugin(claude_binary: Path, harness_home: Path,
                                       installed: Path) -> None:
    script = [
        turn(bash("printf 'Notes.\\n' | atlas put notes -f -")),
        turn(Say("Written.")),
        turn(bash("atlas end --status 'Notes written.'")),
        turn(Say("Done.")),
    ]
    with ScriptedModel(ANTHROPIC, script) as model:
        run = claude_session(claude_binary, installed, "Write notes.", model,
                             home=harness_home, record=installed)
    assert run.returncode == 0, run.stderr[-2000:]
    turns = model.turns
    assert len(turns) == 4 and model.overrun == 0
    assert STATUS in turns[0].text() and "you are alice" in turns[0].text()
    assert "atlas:atlas" in turns[0].text()  # the plugin's skill, offered to the model
    assert "notes v1" in turns[2].text() and "end --status" in turns[2].text()
    notes = versions(run.record, "projects/web/artifacts/notes/")
    assert [author(run.record, p) for p in notes] == ["alice"]
    assert author(run.record, versions(run.record, "projects/web/status/")[-1]) == "alice"


def test_a_stale_put_through_the_plugins_mcp_server_shows_the_model_the_stop_sign(
        claude_binary: Path, harness_home: Path, installed: Path) -> None:
    """The server the plugin registers is the one Claude Code connects to; a put with a
    stale expect comes back to the model as the stop sign's text."""
    assert run_atlas("--as", "ann", "put", "plan", record=installed, input="Step two.\n"
                     ).returncode == 0  # plan is at v2 now; alice read v1
    script = [turn(Call(PUT, {"name": "plan", "body": "Step one, mine.\n",
                                             "expect": 1})),
              turn(Say("Someone wrote first; I will read v2."))]
    with ScriptedModel(ANTHROPIC, script) as model:
        run = claude_session(claude_binary, installed, "Update the plan.", model,
                             home=harness_home, record=installed,
                             allowed_tools=("Bash", PUT),
                             # The plugin's server is alwaysLoad (its tools are there from
                             # the first turn); a loaded machine may need more than the
                             # default 5 s to start it.
                             env={"MCP_CONNECT_TIMEOUT_MS": "60000"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert PUT in model.turns[0].tool_names()
    result = model.turns[1].body["messages"][-1]["content"][0]  # what the put answered
    shown = json.dumps(result)
    assert result["type"] == "tool_result" and result.get("is_error") is True, shown
    assert "stop: you read v1 of plan, but it is at v2" in shown and "ann" in shown, shown
    assert versions(run.record, "projects/web/artifacts/plan/") == [
        "projects/web/artifacts/plan/plan.v0001.md", "projects/web/artifacts/plan/plan.v0002.md"]
