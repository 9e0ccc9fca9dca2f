"""The edit guard and the news hook inside the real Claude Code binary, installed as a user
installs them (`atlas setup claude --as alice`), against a scripted model. What the model
was shown is read from the requests the binary sent; what happened, from the files.

The story is the source text's third: before starting work in a file, a session learns
that another is in it (bob's lease, or bob's commit eleven minutes ago on his branch), and
is told so at the edit, not at commit time."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.git import GitRepo, git_env
from support.runner import run_atlas
from support.scripted_model import ANTHROPIC, Call, Say, ScriptedModel, Turn, turn
from support.sessions import Session, claude_session

from atlas_files.storage.record import Record

METRICS = "src/metrics.py"
WHY = "rewriting the metrics export"


class Midway(ScriptedModel):
    """A scripted model that runs ``before[n]`` when the request for turn ``n`` arrives,
    before answering it: another identity writing while the session works."""

    def __init__(self, script: list[Turn], before: dict[int, Callable[[], None]]) -> None:
        super().__init__(ANTHROPIC, script)
        self.before = before
        self.seen = 0

    def respond(self, method: str, path: str, body: Any) -> Any:
        if method == "POST" and self.wire.is_turn(path, body):
            hook = self.before.pop(self.seen, None)
            self.seen += 1
            if hook is not None:
                hook()
        return super().respond(method, path, body)


@pytest.fixture
def project(tmp_path: Path) -> GitRepo:
    """A code repository that holds its record at the root, set up for Claude Code as
    alice; alice committed src/metrics.py and src/loader.py, and ann a plan."""
    repo = GitRepo(tmp_path / "project", git_env())
    repo.git("config", "user.name", "alice")
    repo.git("config", "user.email", "alice@example.invalid")
    Record.init(repo.path, ["web"])
    repo.write(METRICS, "Start\n")
    repo.write("src/loader.py", "Start\n")
    assert run_atlas("--as", "ann", "put", "plan", record=repo.path,
                     input="Step one.\n").returncode == 0
    out = run_atlas("setup", "claude", "--as", "alice", "--dir", str(repo.path))
    assert out.returncode == 0, out.stderr
    repo.commit("Start", author="alice", ago_s=3 * 3600)  # the hooks' settings too
    return repo


def edit(path: Path, old: str, new: str) -> Call:
    return Call("Edit", {"file_path": str(path), "old_string": old, "new_string": new})


def bash(command: str) -> Call:
    return Call("Bash", {"command": command, "description": "run atlas"})


def session(claude: Path, repo: GitRepo, home: Path, model: ScriptedModel,
            prompt: str = "Work on the metrics export.") -> Session:
    run = claude_session(claude, repo.path, prompt, model, home=home, record=repo.path,
                         allowed_tools=("Bash", "Edit", "Write"))
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    return run


def tool_results(model: ScriptedModel) -> list[dict[str, Any]]:
    """Every tool result the model was shown, in order (from the last request, which
    carries the whole conversation)."""
    last = model.turns[-1].body["messages"]
    return [b for m in last if isinstance(m.get("content"), list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"]


def said(model: ScriptedModel, needle: str) -> int:
    """How many messages of the conversation (as of the last request) contain
    ``needle``: the hooks' context reaches the model as messages of their own."""
    last = model.turns[-1].body["messages"]
    return sum(1 for m in last if needle in json.dumps(m))


def test_an_edit_under_bobs_lease_is_stopped_and_the_model_told_who_why_and_how_long(
        claude_binary: Path, project: GitRepo, harness_home: Path) -> None:
    assert run_atlas("--as", "bob", "lease", "claim", "repo.metrics", "--paths", METRICS,
                     "--for", "2h", "--why", WHY, record=project.path).returncode == 0
    target = project.path / METRICS
    script = [turn(edit(target, "Start", "alice was here")),
              turn(Say("Bob holds it; I will wait."))]
    with ScriptedModel(ANTHROPIC, script) as model:
        session(claude_binary, project, harness_home, model)
    assert target.read_text() == "Start\n"  # the edit never ran
    shown = model.turns[1].text()
    assert "bob's path lease repo.metrics" in shown and WHY in shown
    assert "for 1h59m more" in shown or "for 2h more" in shown  # the time left
    assert "--relation disagreed" in shown and "advisory" in shown
    results = tool_results(model)
    assert results and results[0]["is_error"] is True  # headless: the ask is a denial
    row = json.loads((project.path / "sessions" / "alice.json").read_text())
    stopped = [t for t in row["hooks"]["told"] if t["kind"] == "stopped"]
    assert stopped and stopped[0]["by"] == "bob" and stopped[0]["after"] is None


def test_an_edit_no_lease_covers_goes_through_without_a_word(
        claude_binary: Path, project: GitRepo, harness_home: Path) -> None:
    assert run_atlas("--as", "bob", "lease", "claim", "repo.loader", "--paths",
                     "src/loader.py", "--for", "2h", "--why", "loader", record=project.path
                     ).returncode == 0  # a lease elsewhere covers nothing edited here
    target = project.path / METRICS
    script = [turn(edit(target, "Start", "alice was here")), turn(Say("Done."))]
    with ScriptedModel(ANTHROPIC, script) as model:
        session(claude_binary, project, harness_home, model)
    assert target.read_text() == "alice was here\n"
    assert said(model, "PreToolUse") == 0  # no hook context at all
    assert said(model, "atlas guard") == 0 and said(model, "'s path lease") == 0
    assert tool_results(model)[0].get("is_error") is not True


def test_bobs_commit_eleven_minutes_ago_on_his_branch_reaches_the_model_without_a_block(
        claude_binary: Path, project: GitRepo, harness_home: Path) -> None:
    project.git("checkout", "-q", "-b", "bob/export")
    sha = project.commit("Rewrite the metrics export", METRICS, author="bob", ago_s=11 * 60)
    project.git("checkout", "-q", "main")
    target = project.path / METRICS
    script = [turn(edit(target, "Start", "alice was here")), turn(Say("Noted."))]
    with ScriptedModel(ANTHROPIC, script) as model:
        session(claude_binary, project, harness_home, model)
    assert target.read_text() == "alice was here\n"  # not blocked
    shown = model.turns[1].text()
    assert "bob <bob@example.invalid> committed to src/metrics.py 11m ago on bob/export" \
        in shown
    assert '"Rewrite the metrics export"' in shown and sha[:10] in shown
    assert tool_results(model)[0].get("is_error") is not True


def test_an_edit_of_a_published_version_is_refused_with_the_put_command(
        claude_binary: Path, project: GitRepo, harness_home: Path) -> None:
    version = project.path / "projects" / "web" / "artifacts" / "plan" / "plan.v0001.md"
    before = version.read_bytes()
    script = [turn(edit(version, "based_on: 0", "based_on: 1")), turn(Say("Understood."))]
    with ScriptedModel(ANTHROPIC, script) as model:
        session(claude_binary, project, harness_home, model)
    assert version.read_bytes() == before
    result = tool_results(model)[0]
    assert result["is_error"] is True
    text = json.dumps(result)
    assert "immutable" in text
    assert "atlas --as alice put plan -f FILE --expect 1" in text


def test_news_of_a_topic_the_session_read_reaches_the_model_once(
        claude_binary: Path, project: GitRepo, harness_home: Path) -> None:
    with open(project.path / "atlas.yaml", "a", encoding="utf-8") as fh:
        fh.write("news:\n  every: 0s\n")  # look after every tool call (default 3m)

    def bob_writes() -> None:
        assert run_atlas("--as", "bob", "put", "plan", "--expect", "1", "--summary",
                         "the loader moves to Friday", record=project.path,
                         input="Step one.\nStep two: the loader, Friday.\n",
                         process=True).returncode == 0

    script = [turn(bash("atlas get plan")), turn(bash("git status --short")),
              turn(bash("git log --oneline -1")), turn(Say("I will read plan v2 next."))]
    with Midway(script, {1: bob_writes}) as model:
        session(claude_binary, project, harness_home, model)
    assert len(model.turns) == 4
    assert "plan v2 by bob" not in model.turns[1].text()  # bob had not written yet
    assert "plan v2 by bob" in model.turns[2].text()
    assert "the loader moves to Friday" in model.turns[2].text()
    assert said(model, "plan v2 by bob") == 1  # once, not again after the next tool call


def test_the_plugin_guards_as_its_configured_identity(
        claude_binary: Path, harness_home: Path, tmp_path: Path) -> None:
    """Installed as the plugin (no `atlas setup`), with the identity alice given at
    install time: bob's lease stops alice's edit, and alice's own lease lets it through."""
    from test_harness_claude_plugin import REPO, claude

    out = claude(claude_binary, harness_home, "plugin", "install", "atlas", "--marketplace",
                 str(REPO), "--config", "identity=alice")
    assert out.returncode == 0, out.stdout + out.stderr
    repo = GitRepo(tmp_path / "plain", git_env())
    Record.init(repo.path, ["web"])
    repo.commit("Start", METRICS, "src/loader.py", author="alice", ago_s=3 * 3600)
    assert run_atlas("--as", "bob", "lease", "claim", "repo.metrics", "--paths", METRICS,
                     "--for", "2h", "--why", WHY, record=repo.path).returncode == 0
    assert run_atlas("--as", "alice", "lease", "claim", "repo.loader", "--paths",
                     "src/loader.py", "--for", "2h", "--why", "mine",
                     record=repo.path).returncode == 0
    assert not (repo.path / ".claude").exists()
    script = [turn(edit(repo.path / METRICS, "Start", "alice was here")),
              turn(edit(repo.path / "src/loader.py", "Start", "alice was here")),
              turn(Say("Loader done; metrics waits for bob."))]
    with ScriptedModel(ANTHROPIC, script) as model:
        session(claude_binary, repo, harness_home, model)
    assert (repo.path / METRICS).read_text() == "Start\n"
    assert (repo.path / "src/loader.py").read_text() == "alice was here\n"
    assert "bob's path lease repo.metrics" in model.turns[1].text()
    assert "You are alice" in model.turns[1].text()
