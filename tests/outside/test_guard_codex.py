"""The edit guard inside the real Codex CLI (0.171.0), installed by `atlas setup codex --as
alice`, against a scripted Responses API. Codex offers a model it has no metadata for no
`apply_patch` tool: the model feeds the patch to `apply_patch` through its shell, and
Codex runs the PreToolUse hook for it as `Bash` before it applies the patch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.git import GitRepo, git_env
from support.runner import run_atlas
from support.scripted_model import RESPONSES, Call, Say, ScriptedModel, turn
from support.sessions import codex_session

from atlas_files.storage.record import Record

METRICS = "src/metrics.py"


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "project", git_env())
    repo.git("config", "user.name", "alice")
    repo.git("config", "user.email", "alice@example.invalid")
    Record.init(repo.path, ["web"])
    repo.write(METRICS, "one\n")
    out = run_atlas("setup", "codex", "--as", "alice", "--dir", str(repo.path))
    assert out.returncode == 0, out.stderr
    repo.commit("Start", author="alice", ago_s=3 * 3600)
    return repo


def patch_call(path: str) -> Call:
    patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-one\n+two\n*** End Patch\n"
    return Call("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"})


def outputs(model: ScriptedModel) -> list[str]:
    """What the model was handed back for its tool calls, from the last request."""
    return [str(item.get("output")) for item in model.turns[-1].body["input"]
            if isinstance(item, dict) and item.get("type") == "function_call_output"]


def test_a_patch_under_bobs_lease_is_denied_and_the_model_told_why(
        codex_binary: Path, repo: GitRepo, harness_home: Path) -> None:
    assert run_atlas("--as", "bob", "lease", "claim", "repo.metrics", "--paths", METRICS,
                     "--for", "2h", "--why", "rewriting the export",
                     record=repo.path).returncode == 0
    script = [turn(patch_call(METRICS)), turn(Say("Bob holds it; waiting."))]
    with ScriptedModel(RESPONSES, script) as model:
        run = codex_session(codex_binary, repo.path, "Edit the metrics.", model,
                            home=harness_home, record=repo.path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (repo.path / METRICS).read_text() == "one\n"
    told = "\n".join(outputs(model))
    assert "Command blocked by PreToolUse hook" in told
    assert "bob's path lease repo.metrics" in told and "rewriting the export" in told
    assert "atlas lease break repo.metrics" in told  # how a person goes ahead in Codex


def test_bobs_recent_commit_reaches_the_model_and_the_patch_applies(
        codex_binary: Path, repo: GitRepo, harness_home: Path) -> None:
    repo.git("checkout", "-q", "-b", "bob/export")
    repo.commit("Rewrite the export", METRICS, author="bob", ago_s=11 * 60)
    repo.git("checkout", "-q", "main")
    script = [turn(patch_call(METRICS)), turn(Say("Applied; I will read bob's commit."))]
    with ScriptedModel(RESPONSES, script) as model:
        run = codex_session(codex_binary, repo.path, "Edit the metrics.", model,
                            home=harness_home, record=repo.path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (repo.path / METRICS).read_text() == "two\n"
    shown = json.dumps(model.turns[-1].body["input"])
    assert "bob <bob@example.invalid> committed to src/metrics.py 11m ago on bob/export" \
        in shown
