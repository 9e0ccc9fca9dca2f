"""The planted-repository boundary (issue 39): a git repository anyone who writes the
record planted inside it (tests/support/planted_repo.py says what the planter controls)
never has git run in it by atlas, and no git atlas only asks runs a program a repository's
config names.

* Every read-only git call goes through gitcmd.Git, which turns off lazy fetching, every
  transport, hooks, the fsmonitor, the pager, external diffs and signature checks: each
  command that runs a planted program under plain git runs none through it.
* The edit guard judges a file of the record against the record's own repository, never a
  `.git` found below the record's root: an edit of notes/todo.md, where notes/ holds the
  planted repository, runs nothing of it, in a plain-folder record and in one that syncs
  (whose guard fetches before it looks), and the record's repository's path leases still
  cover notes/.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support.git import GitRepo, git_env
from support.gitteam import accept_sync, bare_remote
from support.planted_repo import CASES, Case, Planted, plant
from support.runner import Result, run_atlas

from atlas_files.storage import gitcmd
from atlas_files.storage.record import Record

pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    return plant(tmp_path / "planted", tmp_path / "markers")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_no_git_atlas_only_asks_runs_a_program_a_repository_names(
        planted: Planted, case: Case) -> None:
    import subprocess

    # The plant is live: plain git runs the program.
    subprocess.run(["git", *case.argv], cwd=planted.repo, capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=60, check=False)
    assert case.marker in planted.fired(), case
    planted.clear()
    done = gitcmd.Git(planted.repo, read_only=True).run(*case.argv, ok=range(256))
    assert planted.fired() == [], (case, done.err)


def test_no_git_atlas_runs_fetches_an_object_lazily(planted: Planted) -> None:
    """Lazy fetching is off for every git atlas starts, the ones that write included."""
    lazy = CASES[0]
    done = gitcmd.Git(planted.repo).run(*lazy.argv, ok=range(256))
    assert planted.fired() == [], done.err
    assert done.code != 0  # the missing tree stays missing: git says so


def test_what_a_read_only_git_needs_still_works(planted: Planted) -> None:
    """The settings leave what atlas asks of a repository as it was."""
    asked = gitcmd.Git(planted.repo, read_only=True)
    assert asked.run("rev-parse", "HEAD").text == asked.run(
        "log", "-1", "--format=%H").text
    assert asked.run("cat-file", "blob", "HEAD:todo.md").out == b"two\n"
    assert gitcmd.staged(planted.repo) == []
    assert planted.fired() == []


# -- the edit guard ------------------------------------------------------------------------------


def _edit(path: Path, cwd: Path) -> dict[str, Any]:
    return {"session_id": "8d2c1f", "cwd": str(cwd), "hook_event_name": "PreToolUse",
            "tool_name": "Write", "tool_use_id": "toolu_01",
            "tool_input": {"file_path": str(path), "content": "mine\n"}}


def _guard(record: Path, path: Path, identity: str = "alice") -> Result:
    out = run_atlas("--as", identity, "guard", "--hook", "claude", process=True,
                    input=json.dumps(_edit(path, record)), cwd=record, env=git_env())
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return out


def test_the_guard_runs_no_git_in_a_repository_planted_in_a_plain_record(
        tmp_path: Path) -> None:
    record = tmp_path / "shared" / "record"
    Record.init(record, ["main"])
    planted = plant(record / "notes", tmp_path / "markers")
    out = _guard(record, planted.repo / "todo.md")
    assert planted.fired() == [], out.stderr
    assert out.stdout.strip() == ""  # a plain file of a record in no repository: allowed
    assert "git" not in out.stderr, out.stderr  # nothing asked of the planted repository
    # The record's own files are still refused, whatever lies beside them.
    refused = _guard(record, record / "projects" / "main" / "status" / "status.v0001.md")
    assert '"deny"' in refused.stdout
    assert planted.fired() == []


def test_the_guard_of_a_record_that_syncs_fetches_nothing_planted_in_it(
        tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "code", git_env())
    Record.init(repo.path, ["main"])
    remote = bare_remote(tmp_path / "remote")
    repo.git("remote", "add", "origin", str(remote))
    with open(repo.path / "atlas.yaml", "a", encoding="utf-8") as fh:
        fh.write("sync:\n  auto: true\n  fetch_every: 0s\n")
    repo.commit("Start", author="alice", ago_s=3 * 3600)
    repo.git("push", "-q", "origin", "main")
    accept_sync(repo.path)
    out = run_atlas("--as", "bob", "lease", "claim", "notes", "--for", "2h", "--why",
                    "rewriting the notes", "--paths", "notes/**", record=repo.path,
                    env=git_env())
    assert out.returncode == 0, out.stderr
    planted = plant(repo.path / "notes", tmp_path / "markers")
    out = _guard(repo.path, planted.repo / "todo.md")
    assert planted.fired() == [], out.stderr
    # Judged against the record's own repository: bob's lease on notes/** covers it.
    doc = json.loads(out.stdout)
    assert doc["hookSpecificOutput"]["permissionDecision"] == "ask", doc
    assert "bob's path lease notes" in doc["hookSpecificOutput"]["permissionDecisionReason"]
    assert os.listdir(remote) != []  # the record's own remote was fetched, as before
