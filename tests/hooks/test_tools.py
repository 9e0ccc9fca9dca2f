"""The edit guard as each harness runs it: the exact JSON Claude Code, Codex, Gemini CLI and
Cursor send a pre-tool hook on stdin, the real `atlas` entry point in a child process, its
stdout parsed as that harness parses it. A code repository holds its record at the root;
alice is about to edit, bob holds a lease or committed lately.

(The same decisions in the real Claude Code binary: test_guard_claude.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.git import GitRepo, git, git_env
from support.gitteam import accept_sync, bare_remote
from support.runner import Result
from support.runner import run_atlas as run_in_process_or_child

from atlas_files.api import Worker, ritual
from atlas_files.storage.record import Record

METRICS = "src/metrics.py"
WHY = "rewriting the metrics export"
HARNESSES = ("claude", "codex", "gemini", "cursor")


def run_atlas(*args: str, **kwargs: Any) -> Result:
    # The entry point's fast path answers `guard --hook`: the process is the subject.
    return run_in_process_or_child(*args, process=True, **kwargs)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """alice's clone: the record at its root, src/metrics.py and src/loader.py
    committed three hours ago, a plan by ann, and alice's session begun."""
    repo = GitRepo(tmp_path / "code", git_env())
    repo.git("config", "user.name", "alice")
    repo.git("config", "user.email", "alice@example.invalid")
    Record.init(repo.path, ["web"])
    repo.write(METRICS, "one\n")
    repo.write("src/loader.py", "one\n")
    assert run_atlas("--as", "ann", "put", "plan", record=repo.path,
                     input="Step one.\n").returncode == 0
    repo.commit("Start", author="alice", ago_s=3 * 3600)
    assert run_atlas("--as", "alice", "begin", record=repo.path).returncode == 0
    return repo


def claim(repo: GitRepo, who: str, resource: str, *paths: str, duration: str = "2h",
          why: str = WHY) -> None:
    args = ["--as", who, "lease", "claim", resource, "--for", duration, "--why", why]
    for path in paths:
        args += ["--paths", path]
    out = run_atlas(*args, record=repo.path)
    assert out.returncode == 0, out.stderr


def patch(*updates: str, add: tuple[str, ...] = ()) -> str:
    lines = ["*** Begin Patch"]
    for path in updates:
        lines += [f"*** Update File: {path}", "@@", "-one", "+two"]
    for path in add:
        lines += [f"*** Add File: {path}", "+new"]
    return "\n".join([*lines, "*** End Patch"]) + "\n"


def event(harness: str, cwd: Path, path: str, *, post: bool = False) -> dict[str, Any]:
    """The harness's own pre-tool (or post-tool) event for an edit of ``path``, as its
    hook reference documents it (docs/sessions.md names them)."""
    full = str(cwd / path)
    if harness == "claude":
        return {"session_id": "8d2c1f", "transcript_path": str(cwd / "t.jsonl"),
                "cwd": str(cwd), "permission_mode": "acceptEdits",
                "hook_event_name": "PostToolUse" if post else "PreToolUse",
                "tool_name": "Edit", "tool_use_id": "toolu_01",
                "tool_input": {"file_path": full, "old_string": "one", "new_string": "two",
                               "replace_all": False},
                **({"tool_response": {"filePath": full, "success": True}} if post else {})}
    if harness == "codex":  # apply_patch: the patch text in tool_input.command
        return {"session_id": "0199a1", "turn_id": "1", "transcript_path": None,
                "cwd": str(cwd), "hook_event_name": "PostToolUse" if post else "PreToolUse",
                "model": "gpt-5-codex", "permission_mode": "default",
                "tool_name": "apply_patch", "tool_use_id": "call_1",
                "tool_input": {"command": patch(path)},
                **({"tool_response": "Success. Updated the following files"} if post else {})}
    if harness == "gemini":  # replace, its path relative to the project folder
        return {"session_id": "g-1", "transcript_path": str(cwd / "chat.json"),
                "cwd": str(cwd), "hook_event_name": "AfterTool" if post else "BeforeTool",
                "timestamp": "2026-01-31T12:00:00.000Z", "tool_name": "replace",
                "tool_input": {"file_path": path, "old_string": "one", "new_string": "two"},
                **({"tool_response": {"llmContent": "ok", "returnDisplay": "ok"}}
                   if post else {})}
    return {"conversation_id": "c-1", "generation_id": "g-1", "model": "gpt-5",
            "hook_event_name": "postToolUse" if post else "preToolUse",
            "cursor_version": "2.1.0", "workspace_roots": [str(cwd)], "cwd": str(cwd),
            "tool_name": "Write", "tool_use_id": "t-1",
            "tool_input": {"file_path": full, "contents": "two\n"},
            **({"tool_output": "{}"} if post else {})}


def guard(repo: GitRepo, harness: str, ev: dict[str, Any], identity: str | None = "alice",
          env: dict[str, str] | None = None) -> Result:
    args = (["--as", identity] if identity else []) + ["guard", "--hook", harness]
    return run_atlas(*args, input=json.dumps(ev), cwd=repo.path.parent, env=env)


def answer(harness: str, out: Result) -> dict[str, Any] | None:
    """stdout as the harness reads it: one JSON document, or nothing (Claude only)."""
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    if not out.stdout.strip():
        assert harness == "claude", "only Claude Code reads an empty stdout as go on"
        return None
    doc = json.loads(out.stdout)  # exactly one document, nothing else
    assert isinstance(doc, dict)
    return doc


def said_to_model(harness: str, doc: dict[str, Any] | None) -> str:
    if doc is None:
        return ""
    if harness == "cursor":
        return str(doc.get("agent_message") or doc.get("additional_context") or "")
    if harness == "gemini" and "decision" in doc:
        return str(doc.get("reason") or "")
    spec = doc.get("hookSpecificOutput") or {}
    return "\n".join(str(spec.get(k) or "") for k in ("permissionDecisionReason",
                                                       "additionalContext"))


def decision(harness: str, doc: dict[str, Any] | None) -> str:
    """What the harness does with the answer: allow, ask, deny."""
    if doc is None:
        return "allow"
    if harness == "cursor":
        return str(doc.get("permission") or "allow")
    if harness == "gemini":
        return "deny" if doc.get("decision") in ("deny", "block") else "allow"
    return str((doc.get("hookSpecificOutput") or {}).get("permissionDecision") or "allow")


# -- an edit under another's path lease -----------------------------------------------------


@pytest.mark.parametrize("harness", HARNESSES)
def test_an_edit_under_bobs_lease_is_stopped_with_who_why_and_time_left(
        repo: GitRepo, harness: str) -> None:
    claim(repo, "bob", "repo.metrics", METRICS)
    doc = answer(harness, guard(repo, harness, event(harness, repo.path, METRICS)))
    # Claude Code and Cursor put it to the person; Codex would run an "ask" (it fails
    # open) and Gemini's ask never reaches the model, so those two deny.
    assert decision(harness, doc) == ("ask" if harness in ("claude", "cursor") else "deny")
    text = said_to_model(harness, doc)
    assert "bob's path lease repo.metrics" in text and WHY in text
    assert "for 1h59m more" in text or "for 2h more" in text
    assert "advisory" in text and "--relation disagreed" in text and "timing:" in text
    if harness in ("codex", "gemini"):
        assert "atlas lease break repo.metrics" in text  # how a person goes ahead


@pytest.mark.parametrize("harness", HARNESSES)
def test_the_holders_own_edits_and_an_expired_or_released_lease_pass(
        repo: GitRepo, harness: str, monkeypatch: pytest.MonkeyPatch) -> None:
    claim(repo, "bob", "repo.metrics", METRICS)
    ev = event(harness, repo.path, METRICS)
    assert decision(harness, answer(harness, guard(repo, harness, ev, "bob"))) == "allow"
    assert run_atlas("--as", "bob", "lease", "release", "repo.metrics",
                     record=repo.path).returncode == 0
    assert decision(harness, answer(harness, guard(repo, harness, ev))) == "allow"
    claim(repo, "bob", "repo.metrics", METRICS, duration="1s")
    import time
    time.sleep(1.2)
    assert decision(harness, answer(harness, guard(repo, harness, ev))) == "allow"


def test_a_lease_on_a_folder_or_glob_covers_a_codex_patch_of_several_files(
        repo: GitRepo) -> None:
    claim(repo, "bob", "repo.src", "src/**/*.py")
    ev = event("codex", repo.path, METRICS)
    ev["tool_input"]["command"] = patch("README.md", add=("src/deep/new.py",))
    doc = answer("codex", guard(repo, "codex", ev))
    assert decision("codex", doc) == "deny"
    text = said_to_model("codex", doc)
    assert "src/deep/new.py is under bob's path lease repo.src (leased as src/**/*.py)" in text
    assert "README.md is under" not in text


def test_a_patch_fed_to_apply_patch_through_the_shell_is_read_too(repo: GitRepo) -> None:
    claim(repo, "bob", "repo.metrics", METRICS)
    ev = event("codex", repo.path, METRICS)
    ev.update(tool_name="Bash", tool_input={
        "command": f"apply_patch <<'EOF'\n{patch(METRICS)}EOF\n"})
    assert decision("codex", answer("codex", guard(repo, "codex", ev))) == "deny"
    ev["tool_input"] = {"command": "grep -n TODO src/metrics.py"}  # a shell read: no edit
    assert decision("codex", answer("codex", guard(repo, "codex", ev))) == "allow"


def test_without_an_identity_every_lease_stops_and_says_to_set_one(repo: GitRepo) -> None:
    claim(repo, "bob", "repo.metrics", METRICS)
    doc = answer("claude", guard(repo, "claude", event("claude", repo.path, METRICS), None))
    assert decision("claude", doc) == "ask"
    assert "no identity is set" in said_to_model("claude", doc)


# -- commits by another author on any ref -----------------------------------------------------


def bob_commits(repo: GitRepo, ago_s: float, branch: str = "bob/export") -> str:
    repo.git("checkout", "-q", "-b", branch)
    sha = repo.commit("Rewrite the metrics export", METRICS, author="bob", ago_s=ago_s)
    repo.git("checkout", "-q", "main")
    return sha


@pytest.mark.parametrize("harness", ("claude", "codex"))
def test_bobs_recent_commit_on_another_branch_is_context_and_the_edit_runs(
        repo: GitRepo, harness: str) -> None:
    sha = bob_commits(repo, 11 * 60)
    doc = answer(harness, guard(repo, harness, event(harness, repo.path, METRICS)))
    assert decision(harness, doc) == "allow"
    spec = doc["hookSpecificOutput"] if doc else {}
    assert "permissionDecision" not in spec
    text = spec["additionalContext"]
    assert (f"bob <bob@example.invalid> committed to {METRICS} 11m ago on bob/export: "
            f'"Rewrite the metrics export" ({sha[:10]})') in text


@pytest.mark.parametrize("harness", ("gemini", "cursor"))
def test_where_no_context_fits_before_a_tool_it_comes_after_the_edit_once(
        repo: GitRepo, harness: str) -> None:
    """Gemini CLI's BeforeTool and Cursor's preToolUse take no context for the model: the
    guard keeps it, and the post-tool hook of that same edit hands it over, once."""
    bob_commits(repo, 11 * 60)
    doc = answer(harness, guard(repo, harness, event(harness, repo.path, METRICS)))
    assert doc == {}
    post = event(harness, repo.path, METRICS, post=True)
    first = answer(harness, news(repo, harness, post))
    text = (first or {}).get("additional_context") or \
        ((first or {}).get("hookSpecificOutput") or {}).get("additionalContext") or ""
    assert "bob <bob@example.invalid> committed to src/metrics.py 11m ago on bob/export" \
        in text
    again = answer(harness, news(repo, harness, post))
    assert again == {}


def test_only_commits_by_another_author_within_the_window_count(repo: GitRepo) -> None:
    repo.commit("Tidy the metrics", METRICS, author="alice", ago_s=5 * 60)  # mine
    bob_commits(repo, 2 * 3600, "bob/old")  # outside guard.recent (60m)
    ev = event("claude", repo.path, METRICS)
    assert answer("claude", guard(repo, "claude", ev)) is None  # silent and allowed
    with open(repo.path / "atlas.yaml", "a", encoding="utf-8") as fh:
        fh.write("guard:\n  recent: 3h\n")
    doc = answer("claude", guard(repo, "claude", ev))
    text = doc["hookSpecificOutput"]["additionalContext"] if doc else ""
    assert "committed to src/metrics.py 2h ago on bob/old" in text
    assert "alice" not in text.split("Another session")[0]


@pytest.mark.parametrize("accepted", [True, False], ids=["accepted", "not-accepted"])
def test_a_record_that_syncs_fetches_first_at_most_once_per_fetch_every(
        repo: GitRepo, tmp_path: Path, accepted: bool) -> None:
    """Only settings the person on this clone accepted make the guard fetch: atlas.yaml
    arrives from the shared remote, which must not choose what this clone runs."""
    remote = bare_remote(tmp_path / "remote.git")
    repo.git("remote", "add", "origin", str(remote))
    repo.git("push", "-q", "origin", "main")
    with open(repo.path / "atlas.yaml", "a", encoding="utf-8") as fh:
        fh.write("sync:\n  auto: true\n  fetch_every: 1h\n")
    if accepted:
        accept_sync(repo.path)  # as the person on this clone does once
    repo.commit("Sync on", author="alice", ago_s=3 * 3600)
    repo.git("push", "-q", "origin", "main")
    bob = GitRepo.__new__(GitRepo)
    bob.path, bob.env = tmp_path / "bob", git_env()
    git(tmp_path, "clone", "-q", str(remote), str(bob.path), env=bob.env)
    bob.git("checkout", "-q", "-b", "bob/export")
    bob.commit("Rewrite the metrics export", METRICS, author="bob", ago_s=11 * 60)
    bob.git("push", "-q", "origin", "bob/export")
    ev = event("claude", repo.path, METRICS)
    doc = answer("claude", guard(repo, "claude", ev, env=git_env()))
    text = doc["hookSpecificOutput"]["additionalContext"] if doc else ""
    if not accepted:
        assert "bob/export" not in text
        return
    assert "committed to src/metrics.py 11m ago on origin/bob/export" in text
    bob.commit("Another one", METRICS, author="bob", ago_s=60)
    bob.git("push", "-q", "origin", "bob/export")
    doc = answer("claude", guard(repo, "claude", ev, env=git_env()))
    text = doc["hookSpecificOutput"]["additionalContext"] if doc else ""
    assert '"Another one"' not in text  # within fetch_every: no second fetch


# -- the record's own files ----------------------------------------------------------------------


@pytest.mark.parametrize("harness", HARNESSES)
def test_an_edit_of_a_published_version_is_refused_with_the_put_command(
        repo: GitRepo, harness: str) -> None:
    version = "projects/web/artifacts/plan/plan.v0001.md"
    doc = answer(harness, guard(repo, harness, event(harness, repo.path, version)))
    assert decision(harness, doc) == "deny"
    text = said_to_model(harness, doc)
    assert "immutable" in text and "atlas --as alice put plan -f FILE --expect 1" in text


@pytest.mark.parametrize(("path", "command"), [
    ("projects/web/artifacts/plan/plan.v0002.md", "put plan -f FILE --expect 1"),
    ("projects/web/status/status.v0001.md", "status write -f FILE --expect 0"),
    ("projects/web/decisions/dec-20260101t000000000000z-1a2b3c4d.md",
     "correct dec-20260101t000000000000z-1a2b3c4d --what TEXT"),
    ("leases/gpu0/g00000002.json", "lease renew|release|break gpu0"),
    ("receipts/alice.json", None), ("sessions/alice.json", None),
])
def test_every_kind_of_record_file_is_refused_with_what_to_do(
        repo: GitRepo, path: str, command: str | None) -> None:
    doc = answer("claude", guard(repo, "claude", event("claude", repo.path, path)))
    assert decision("claude", doc) == "deny"
    text = said_to_model("claude", doc)
    assert (f"atlas --as alice {command}" in text) if command else "live row" in text


def test_the_records_config_readme_and_drafts_are_not_refused(repo: GitRepo) -> None:
    for path in ("atlas.yaml", "README.md", ".atlas-drafts/web/plan/plan.v0002.alice.md",
                 "projects/web/notes.md"):
        ev = event("claude", repo.path, path)
        assert answer("claude", guard(repo, "claude", ev)) is None, path


def test_a_record_outside_the_repository_is_found_and_its_files_refused(
        repo: GitRepo, tmp_path: Path) -> None:
    elsewhere = tmp_path / "team-record"
    Record.init(elsewhere, ["web"])
    assert run_atlas("--as", "ann", "put", "plan", record=elsewhere, input="x\n").returncode == 0
    claim_out = run_atlas("--as", "bob", "lease", "claim", "repo.metrics", "--paths", METRICS,
                          "--for", "1h", "--why", WHY, record=elsewhere)
    assert claim_out.returncode == 0
    ev = event("claude", elsewhere, "projects/web/artifacts/plan/plan.v0001.md")
    ev["cwd"] = str(repo.path)
    out = guard(repo, "claude", ev, env={"ATLAS_RECORD": str(elsewhere)})
    assert decision("claude", answer("claude", out)) == "deny"
    shutil.rmtree(repo.path / "projects")
    os.remove(repo.path / "atlas.yaml")
    repo.git("config", "atlas.record", "../team-record")  # as the commit guard finds it
    doc = answer("claude", guard(repo, "claude", event("claude", repo.path, METRICS)))
    assert decision("claude", doc) == "ask"


# -- nothing to say, and never a block for the guard's own trouble --------------------------------


@pytest.mark.parametrize("harness", HARNESSES)
def test_nothing_found_is_silent_and_outside_a_record_nothing_is_said(
        repo: GitRepo, harness: str, tmp_path: Path) -> None:
    ev = event(harness, repo.path, "src/new.py")
    out = guard(repo, harness, ev)
    assert decision(harness, answer(harness, out)) == "allow" and out.stderr == ""
    assert answer(harness, out) in (None, {})
    lone = tmp_path / "lone"
    lone.mkdir()
    out = guard(repo, harness, event(harness, lone, "x.py"))
    assert answer(harness, out) in (None, {}) and out.stderr == ""


@pytest.mark.parametrize("harness", HARNESSES)
def test_a_broken_record_never_blocks_an_edit(repo: GitRepo, harness: str) -> None:
    claim(repo, "bob", "repo.metrics", METRICS)
    (repo.path / "atlas.yaml").write_text("projects: [web\n")  # not YAML
    out = guard(repo, harness, event(harness, repo.path, METRICS))
    assert decision(harness, answer(harness, out)) == "allow"
    assert "atlas.yaml" in out.stderr and "checked nothing" in out.stderr


def test_a_damaged_lease_is_reported_not_obeyed(repo: GitRepo) -> None:
    claim(repo, "bob", "repo.metrics", METRICS)
    gen = repo.path / "leases" / "repo.metrics" / "g00000001.json"
    gen.chmod(0o644)
    gen.write_text("{not json")
    out = guard(repo, "claude", event("claude", repo.path, METRICS))
    assert decision("claude", answer("claude", out)) == "allow"
    assert "repo.metrics" in out.stderr and "not obeyed" in out.stderr


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1, 2]", b'{"tool_name": 7}',
                                 b'{"tool_name": "Edit", "tool_input": "x"}',
                                 b'{"tool_name": "Edit", "tool_input": {"file_path": 3}}',
                                 b'\xff\xfe{"a": 1}'])
def test_input_it_cannot_read_lets_the_call_run(repo: GitRepo, raw: bytes) -> None:
    for harness in HARNESSES:
        out = run_atlas("--as", "alice", "guard", "--hook", harness, input=raw,
                        cwd=repo.path)
        assert answer(harness, out) in (None, {})


def test_the_fast_path_answers_before_click_loads(repo: GitRepo) -> None:
    """`atlas guard --hook H` runs before every edit: the entry point answers it without
    importing click or the command table."""
    probe = ("import json, sys, runpy; sys.argv = ['atlas', '--as', 'alice', 'guard', "
             "'--hook', 'claude']; import atlas_files.launch as l\n"
             "try:\n    l.main()\nexcept SystemExit:\n    pass\n"
             "sys.stderr.write(json.dumps(sorted(m for m in sys.modules if m in "
             "('click', 'yaml', 'atlas_files.cli.app', 'atlas_files.protocol.leases'))))")
    ev = json.dumps(event("claude", repo.path, "src/new.py"))
    done = subprocess.run([sys.executable, "-c", probe], input=ev.encode(),
                          capture_output=True, cwd=repo.path, check=True)
    assert done.stdout == b""
    assert json.loads(done.stderr.decode().splitlines()[-1]) == []


def test_by_hand_guard_prints_the_verdict_and_exits_by_it(repo: GitRepo) -> None:
    claim(repo, "bob", "repo.metrics", METRICS)
    out = run_atlas("--as", "alice", "guard", METRICS, "--json", cwd=repo.path)
    assert out.returncode == 4
    doc = out.json()
    assert doc["decision"] == "stopped" and doc["findings"][0]["by"] == "bob"
    assert "advisory" in doc["limits"]
    out = run_atlas("--as", "alice", "guard", "projects/web/status/status.v0001.md",
                    cwd=repo.path)
    assert out.returncode == 1 and "status write" in out.stdout
    out = run_atlas("--as", "alice", "guard", "src/new.py", cwd=repo.path)
    assert out.returncode == 0 and "nothing stands in the way" in out.stdout
    out = run_atlas("--as", "alice", "guard", cwd=repo.path)
    assert out.returncode == 2 and "name the files" in out.stderr


def news(repo: GitRepo, harness: str, ev: dict[str, Any], identity: str = "alice") -> Result:
    return run_atlas("--as", identity, "news", "--hook", harness, input=json.dumps(ev),
                     cwd=repo.path.parent)


def test_what_the_guard_said_is_in_the_session_row_and_end_says_it(repo: GitRepo) -> None:
    claim(repo, "bob", "repo.metrics", METRICS)
    answer("claude", guard(repo, "claude", event("claude", repo.path, METRICS)))
    # A person allowed it: the edit ran, and the post-tool hook saw it (and tells of the
    # lease bob took since the session began on the file just edited).
    said = answer("claude", news(repo, "claude",
                                 event("claude", repo.path, METRICS, post=True)))
    assert said is not None and "bob took the path lease repo.metrics on src/metrics.py, " \
        "which you edited this session" in said["hookSpecificOutput"]["additionalContext"]
    row = json.loads((repo.path / "sessions" / "alice.json").read_text())
    told = row["hooks"]["told"]
    assert [t["kind"] for t in told] == ["stopped", "news"] and told[0]["after"] == "edited"
    assert row["hooks"]["edited"] == [METRICS]
    assert git(repo.path, "status", "--porcelain", "--", "sessions") == ""  # not in git
    out = run_atlas("--as", "alice", "end", "--status", "Export half done.", "--json",
                    record=repo.path)
    assert out.returncode == 0
    guard_items = out.json()["guard"]  # newest first
    assert [g["kind"] for g in guard_items] == ["news", "stopped"]
    assert guard_items[1]["after"] == "edited" and guard_items[1]["by"] == "bob"
    assert run_atlas("check", record=repo.path).returncode == 0  # the row fits its schema
    briefing = ritual.begin(Worker(Record(repo.path), "alice"))  # what `atlas begin` prints
    assert [g["kind"] for g in briefing.to_json()["guard"]] == ["news", "stopped"]
    text = briefing.text
    assert "What the edit guard and the news hook told your last session" in text
    assert "a person let it through: the session edited it anyway" in text
