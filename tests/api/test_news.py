"""News while a session works (`atlas news --hook H`, each harness's post-tool hook): only
what concerns the session, only others' writes, each piece once, at most once every
`news.every`, within `news.limit` characters, as context and never a block. The real
entry point in child processes, fed each harness's exact post-tool JSON."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.git import GitRepo, git_env
from support.runner import Result, atlas_command
from support.runner import run_atlas as run_in_process_or_child

from atlas_files.storage.record import Record

METRICS = "src/metrics.py"


def run_atlas(*args: str, **kwargs: Any) -> Result:
    return run_in_process_or_child(*args, process=True, **kwargs)


def config(root: Path, text: str) -> None:
    with open(root / "atlas.yaml", "a", encoding="utf-8") as fh:
        fh.write(text)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """The record at the root of alice's clone; ann wrote plan and design; alice read
    plan, then began her session; the news hook may look after every tool call."""
    repo = GitRepo(tmp_path / "code", git_env())
    Record.init(repo.path, ["web"])
    config(repo.path, "news:\n  every: 0s\n")
    repo.write(METRICS, "one\n")
    repo.commit("Start", author="alice", ago_s=3600)
    for name in ("plan", "design"):
        put(repo, "ann", name, "v1\n", f"{name} one")
    assert run_atlas("--as", "alice", "get", "plan", record=repo.path).returncode == 0
    assert run_atlas("--as", "alice", "begin", record=repo.path).returncode == 0
    return repo


def put(repo: GitRepo, who: str, name: str, body: str, summary: str,
        *extra: str) -> None:
    out = run_atlas("--as", who, "put", name, "--summary", summary, *extra,
                    record=repo.path, input=body)
    assert out.returncode == 0, out.stderr


def post_event(harness: str, cwd: Path, tool: str = "Bash",
               tool_input: dict[str, Any] | None = None,
               event_name: str | None = None) -> dict[str, Any]:
    """A harness's post-tool event (Claude/Codex PostToolUse, Gemini AfterTool, Cursor
    postToolUse) after ``tool`` ran."""
    tool_input = tool_input or {"command": "ls"}
    if harness in ("claude", "codex"):
        return {"session_id": "s-1", "transcript_path": None, "cwd": str(cwd),
                "hook_event_name": event_name or "PostToolUse", "tool_name": tool,
                "tool_input": tool_input, "tool_use_id": "t-1", "tool_response": {}}
    if harness == "gemini":
        return {"session_id": "g-1", "transcript_path": "x", "cwd": str(cwd),
                "hook_event_name": event_name or "AfterTool",
                "timestamp": "2026-01-31T12:00:00.000Z", "tool_name": "run_shell_command",
                "tool_input": tool_input, "tool_response": {"llmContent": "ok"}}
    return {"conversation_id": "c", "generation_id": "g", "hook_event_name": "postToolUse",
            "workspace_roots": [str(cwd)], "tool_name": "Shell", "tool_input": tool_input,
            "tool_output": "ok"}


def news(repo: GitRepo, harness: str = "claude", ev: dict[str, Any] | None = None,
         identity: str = "alice") -> str | None:
    """The context the model is handed after a tool call; None when nothing is said."""
    out = run_atlas("--as", identity, "news", "--hook", harness,
                    input=json.dumps(ev or post_event(harness, repo.path)),
                    cwd=repo.path.parent)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    if not out.stdout.strip():
        assert harness == "claude"
        return None
    doc = json.loads(out.stdout)
    if doc == {}:
        return None
    if harness == "cursor":
        return str(doc["additional_context"])
    spec = doc["hookSpecificOutput"]
    assert spec["hookEventName"] == (ev or {}).get("hook_event_name", (
        "AfterTool" if harness == "gemini" else "PostToolUse"))
    return str(spec["additionalContext"])


@pytest.mark.parametrize("harness", ("claude", "codex", "gemini", "cursor"))
def test_a_newer_version_of_a_topic_read_is_told_once_with_who_and_what(
        repo: GitRepo, harness: str) -> None:
    assert news(repo, harness) is None  # nothing yet
    put(repo, "bob", "plan", "v2\n", "the loader moves to Friday", "--expect", "1")
    said = news(repo, harness)
    assert said is not None
    assert "plan v2 by bob" in said and "(you read v1)" in said
    assert "the loader moves to Friday" in said and "`atlas get plan`" in said
    assert news(repo, harness) is None  # once


def test_what_the_session_never_read_and_its_own_writes_are_not_news(repo: GitRepo) -> None:
    put(repo, "bob", "design", "v2\n", "not read by alice", "--expect", "1")
    put(repo, "alice", "plan", "v2\n", "mine", "--expect", "1")
    put(repo, "bob", "fresh", "v1\n", "a new topic")  # the feed tells of it, not news
    assert news(repo) is None


def test_what_the_session_wrote_counts_as_read(repo: GitRepo) -> None:
    put(repo, "alice", "plan", "v2\n", "mine", "--expect", "1")
    put(repo, "alice", "plan", "v3\n", "mine again")  # judged by her own v2
    assert news(repo) is None
    put(repo, "bob", "plan", "v4\n", "the loader moves", "--expect", "3")
    said = news(repo) or ""
    assert "plan v4 by bob" in said and "(you read v3)" in said
    assert run_atlas("--as", "bob", "correct", "plan@v3", "--what", "step two is Monday",
                     record=repo.path).returncode == 0
    assert "bob corrected plan@v3, which you read: step two is Monday" in (news(repo) or "")


def test_a_correction_of_what_was_read_or_of_what_it_links_to_is_told(
        repo: GitRepo) -> None:
    put(repo, "ann", "notes", "n\n", "notes one")
    put(repo, "ann", "plan", "v2 cites notes\n", "cites notes", "--expect", "1",
        "--link", "notes@v1")
    assert run_atlas("--as", "alice", "get", "plan", record=repo.path).returncode == 0
    news(repo)  # plan v2 is news now (ann wrote it); let it pass
    assert run_atlas("--as", "bob", "retract", "notes@v1", "--why", "wrong numbers",
                     record=repo.path).returncode == 0
    assert run_atlas("--as", "bob", "correct", "design@v1", "--what", "unrelated",
                     record=repo.path).returncode == 0
    said = news(repo) or ""
    assert "bob retracted notes@v1, which a version you read links to: wrong numbers" in said
    assert "design@v1" not in said  # alice never read design
    assert run_atlas("--as", "bob", "correct", "plan@v2", "--what", "step two is Monday",
                     record=repo.path).returncode == 0
    assert "bob corrected plan@v2, which you read: step two is Monday" in (news(repo) or "")


def test_the_status_moving_is_told(repo: GitRepo) -> None:
    assert run_atlas("--as", "bob", "status", "write", "--summary", "loader shipped",
                     record=repo.path, input="Loader shipped.\n").returncode == 0
    said = news(repo) or ""
    assert "the status of web moved to v1 (by bob" in said and "loader shipped" in said


def test_a_new_lease_of_another_on_a_file_edited_this_session_is_told(repo: GitRepo) -> None:
    edit = post_event("claude", repo.path, "Edit", {"file_path": str(repo.path / METRICS)})
    assert news(repo, ev=edit) is None  # the edit is noted
    for resource, path in (("repo.metrics", METRICS), ("repo.other", "src/other.py")):
        assert run_atlas("--as", "bob", "lease", "claim", resource, "--paths", path, "--for",
                         "1h", "--why", "taking it over", record=repo.path).returncode == 0
    said = news(repo) or ""
    assert "bob took the path lease repo.metrics on src/metrics.py, which you edited" in said
    assert "repo.other" not in said


def test_news_every_bounds_how_often_it_looks(repo: GitRepo) -> None:
    text = (repo.path / "atlas.yaml").read_text().replace("every: 0s", "every: 1h")
    (repo.path / "atlas.yaml").write_text(text)
    assert news(repo) is None  # the first look: nothing
    put(repo, "bob", "plan", "v2\n", "later", "--expect", "1")
    assert news(repo) is None  # within the hour: it does not look again
    by_hand = run_atlas("--as", "alice", "news", "--json", record=repo.path)
    assert by_hand.returncode == 0
    doc = by_hand.json()
    assert [n["refs"] for n in doc["news"]] == [["plan@v2"]] and doc["cut"] == 0
    assert news(repo) is None  # told by hand: not again


def test_news_is_bounded_and_counts_what_it_cut(repo: GitRepo) -> None:
    text = (repo.path / "atlas.yaml").read_text().replace("every: 0s", "every: 0s\n  limit: 300")
    (repo.path / "atlas.yaml").write_text(text)
    names = [f"topic-{i:02d}" for i in range(12)]
    for name in names:
        put(repo, "ann", name, "v1\n", "first")
        assert run_atlas("--as", "alice", "get", name, record=repo.path).returncode == 0
    news(repo)
    for name in names:
        put(repo, "bob", name, "v2\n", "a rather long summary of what changed here",
            "--expect", "1")
    said = news(repo) or ""
    assert len(said) <= 300
    shown = said.count(" by bob")
    assert 0 < shown < 12 and f"… and {12 - shown} more: `atlas feed`" in said
    assert news(repo) is None  # the cut ones count as told too: the feed lists them


@pytest.mark.parametrize("harness", ("claude", "codex"))
def test_a_prompt_submit_hook_gets_the_news_under_its_own_event(
        repo: GitRepo, harness: str) -> None:
    put(repo, "bob", "plan", "v2\n", "new plan", "--expect", "1")
    ev = {"session_id": "s", "cwd": str(repo.path), "hook_event_name": "UserPromptSubmit",
          "prompt": "go on", "transcript_path": None}
    assert "plan v2 by bob" in (news(repo, harness, ev) or "")


def test_without_a_session_or_a_record_nothing_is_said(repo: GitRepo, tmp_path: Path) -> None:
    put(repo, "bob", "plan", "v2\n", "new plan", "--expect", "1")
    assert news(repo, identity="carol") is None  # carol never began a session
    lone = tmp_path / "lone"
    lone.mkdir()
    assert news(repo, ev=post_event("claude", lone)) is None
    (repo.path / "sessions" / "alice.json").write_text("{broken")
    out = run_atlas("--as", "alice", "news", "--hook", "codex",
                    input=json.dumps(post_event("codex", repo.path)), cwd=repo.path)
    assert out.returncode == 0 and json.loads(out.stdout) == {}
    assert "no news this time" in out.stderr and "Traceback" not in out.stderr
    out = run_atlas("--as", "carol", "news", record=repo.path)
    assert out.returncode == 2 and "atlas --as carol begin" in out.stderr


def test_many_hooks_of_one_session_at_once_lose_no_edit(repo: GitRepo) -> None:
    """Parallel tool calls: a dozen post-tool hooks of alice's session update her row at
    the same moment (real processes); every edit is kept and the row stays valid."""
    files = [f"src/f{i}.py" for i in range(12)]
    procs = []
    for rel in files:
        ev = post_event("claude", repo.path, "Write",
                        {"file_path": str(repo.path / rel), "content": "x"})
        procs.append(subprocess.Popen(
            atlas_command("--as", "alice", "news", "--hook", "claude"),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=repo.path))
        procs[-1].stdin.write(json.dumps(ev).encode())  # type: ignore[union-attr]
        procs[-1].stdin.close()  # type: ignore[union-attr]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()  # type: ignore[union-attr]
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    row = json.loads((repo.path / "sessions" / "alice.json").read_text())
    assert sorted(row["hooks"]["edited"]) == sorted(files)
    assert run_atlas("check", record=repo.path).returncode == 0


def test_a_link_planted_at_the_stamp_is_replaced_never_followed(
        repo: GitRepo, tmp_path: Path) -> None:
    """`sessions/.alice.news` planted as a link: to a missing path, the hook created it
    (a repository's `.git/index.lock` blocks every commit); to a file, it touched it.
    Now neither is created or touched, the hook works, and the stamp is a file of its own."""
    stamp = repo.path / "sessions" / ".alice.news"
    missing = tmp_path / "other" / ".git" / "index.lock"
    missing.parent.mkdir(parents=True)
    existing = tmp_path / "other" / "kept.txt"
    existing.write_text("kept\n")
    old = 1_000_000_000
    os.utime(existing, (old, old))
    for target in (missing, existing):
        stamp.unlink(missing_ok=True)
        stamp.symlink_to(target)
        assert news(repo) is None
        assert not missing.exists()
        assert existing.stat().st_mtime == old and existing.read_text() == "kept\n"
        assert stamp.is_file() and not stamp.is_symlink()
