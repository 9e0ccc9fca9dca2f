"""`atlas activity` and the briefing's repository section, on real git repositories."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.git import GitRepo
from support.runner import run_atlas

from atlas_files import api
from atlas_files.api import activity as act
from atlas_files.protocol import leases
from atlas_files.protocol.activity import parse
from atlas_files.storage import gitcmd
from atlas_files.storage.record import Record


@pytest.fixture(autouse=True)
def _outside_any_repository(clean_git_env: None, monkeypatch: pytest.MonkeyPatch,
                            tmp_path: Path) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    yield


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """main: alice's start a day and a half ago and her commit an hour ago; bob's branch,
    unmerged: a commit to src/metrics.py a minute ago."""
    r = GitRepo(tmp_path / "code")
    r.commit("start", "src/metrics.py", "src/util.py", "README.md", author="alice",
             ago_s=36 * 3600)
    r.commit("docs", "README.md", author="alice", ago_s=3600)
    r.git("checkout", "-q", "-b", "bob/export")
    r.commit("Rewrite the metrics export", "src/metrics.py", author="bob", ago_s=60)
    r.git("checkout", "-q", "main")
    return r


def test_another_authors_commit_on_another_branch_a_minute_ago_shows(
        repo: GitRepo, record: Record, monkeypatch: pytest.MonkeyPatch) -> None:
    leases.claim(record, "repo.metrics", holder="bob", duration_s=3600,
                 why="rewriting the export", paths=["src/metrics.py"])
    monkeypatch.chdir(repo.path / "src")  # anywhere inside the repository
    code, out, err = run_atlas("activity", "--paths", "src/metrics.py", "--json",
                               record=record.root)
    assert code == 0, err
    data = json.loads(out)
    assert data["repo"] == str(repo.path)
    (commit,) = data["commits"]  # alice's README commit does not touch it; the start is old
    assert (commit["author"], commit["ref"], commit["subject"]) == (
        "bob", "bob/export", "Rewrite the metrics export")
    assert 55 <= commit["age_s"] <= 120 and commit["files"] == ["src/metrics.py"]
    assert [x["resource"] for x in data["leases"]] == ["repo.metrics"]
    assert "has not committed yet is invisible" in data["limits"]

    code, text, _ = run_atlas("activity", "--paths", "src/metrics.py", record=record.root)
    assert "bob <bob@example.invalid>  on bob/export" in text
    assert "Rewrite the metrics export" in text and "src/metrics.py" in text
    assert "repo.metrics: held by bob" in text and "rewriting the export" in text
    assert "has not committed yet is invisible" in " ".join(text.split())

    # The same, as the session briefing's repository key.
    section = act.repository_section(api.Worker(record, "alice"), ["src/metrics.py"])
    assert section is not None
    assert [c["subject"] for c in section["commits"]] == ["Rewrite the metrics export"]
    assert section["commits"][0]["author"] == "bob"
    assert [x["resource"] for x in section["leases"]] == ["repo.metrics"]
    same, lines = act.repository_briefing(api.Worker(record, "alice"), ["src/metrics.py"])
    assert same is not None and same["commits"] == section["commits"]
    text = "\n".join(lines)
    assert "bob on bob/export: Rewrite the metrics export [1 file(s): src/metrics.py]" in text
    assert "lease repo.metrics: bob holds src/metrics.py" in text
    assert "has not committed yet is invisible" in text

    # And in the session briefing: `begin --json`'s repository key, and its text.
    code, out, err = run_atlas("begin", "--json", record=record.root, identity="alice")
    assert code == 0, err
    briefing = json.loads(out)["repository"]
    assert briefing["commits"][0]["subject"] == "Rewrite the metrics export"
    assert briefing["commits"][0]["author"] == "bob"
    assert briefing["commits"][0]["ref"] == "bob/export"
    assert [x["resource"] for x in briefing["leases"]] == ["repo.metrics"]
    held = json.loads(out)["leases"]["held"]
    assert held[0]["paths"] == ["src/metrics.py"]
    code, out, _ = run_atlas("begin", record=record.root, identity="carol")
    assert "bob on bob/export: Rewrite the metrics export" in out
    assert "repo.metrics: held by bob for" in out and "(covers src/metrics.py)" in out


def test_all_refs_newest_first_within_since(repo: GitRepo, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.chdir(repo.path)
    data = act.activity(None).to_json()
    assert [c["subject"] for c in data["commits"]] == ["Rewrite the metrics export", "docs"]
    assert data["leases"] is None and data["record"] is None  # no record: commits only
    longer = act.activity(None, since="2d").to_json()
    assert [c["subject"] for c in longer["commits"]][-1] == "start"
    shorter = act.activity(None, since="30m").to_json()
    assert [c["subject"] for c in shorter["commits"]] == ["Rewrite the metrics export"]
    code, _, err = run_atlas("activity", "--since", "24.hours")
    assert code == 2 and "bad duration" in err


def test_paths_take_folders_and_globs(repo: GitRepo) -> None:
    def subjects(*paths: str) -> list[str]:
        return [c.subject for c in act.activity(repo.path, paths=paths, since="2d").commits]

    assert subjects("src") == ["Rewrite the metrics export", "start"]
    assert subjects("src/**/*.py") == ["Rewrite the metrics export", "start"]
    assert subjects("*.md") == ["docs", "start"]
    assert subjects("src/util.py") == ["start"]
    assert subjects("nothing/here") == []
    code, _, err = run_atlas("activity", "--repo", str(repo.path), "--paths", "/etc/passwd")
    assert code == 2 and "absolute" in err


def test_outside_a_git_repository_the_section_is_null_with_the_reason(
        record: Record, tmp_path: Path) -> None:
    worker = api.Worker(record, "alice")
    assert act.repository_section(worker) is None
    section, reason = act.repository_status(worker)
    assert section is None and reason is not None
    assert "not inside a git repository" in reason
    assert act.repository_briefing(worker) == (None, [f"Repository: none ({reason})."])
    code, out, _ = run_atlas("begin", "--json", record=record.root, identity="alice")
    assert code == 0 and json.loads(out)["repository"] is None
    code, out, _ = run_atlas("begin", record=record.root, identity="bob")
    assert "Repository: none (" in out and "not inside a git repository" in out
    code, _, err = run_atlas("activity")
    assert code == 2 and "not inside a git repository" in err and "--repo" in err


def test_odd_file_names_and_subjects_survive_the_parse(tmp_path: Path) -> None:
    r = GitRepo(tmp_path / "odd")
    r.commit("first line\n\nbody with \x1eatlas-commit\x1e", "a\nb.txt", "tab\there.py",
             "ünï cödé.md")
    r.git("commit", "-q", "--allow-empty", "--allow-empty-message", "-m", "")
    r.git("checkout", "-q", "-b", "side", "HEAD~1")
    r.commit("merge me", "side.txt")
    r.git("checkout", "-q", "main")
    r.git("merge", "-q", "--no-edit", "side")
    commits = act.activity(r.path).commits
    by_subject = {c.subject: c for c in commits}
    assert set(by_subject["first line"].files) == {"a\nb.txt", "tab\there.py", "ünï cödé.md"}
    assert by_subject[""].files == ()
    assert by_subject["merge me"].files == ("side.txt",)
    assert any(s.startswith("Merge branch") for s in by_subject)


def test_the_parser_skips_what_is_not_a_whole_commit() -> None:
    assert parse(b"") == []
    assert parse(b"garbage\0\0\x1eatlas-commit\x1e\0not-a-sha\0" + b"1\0r\0a\0e\0s\0") == []


def test_long_commits_are_capped_and_counted(tmp_path: Path) -> None:
    r = GitRepo(tmp_path / "big")
    r.commit("many files", *[f"f{i:02d}.txt" for i in range(25)])
    for i in range(3):
        r.commit(f"c{i}", f"g{i}.txt")
    result = act.activity(r.path, limit=2)
    data = result.to_json()
    assert (data["total"], data["shown"]) == (4, 2)
    everything = act.activity(r.path, limit=0, paths=["f24.txt"]).to_json()
    (many,) = everything["commits"]
    assert many["files"][0] == "f24.txt"  # what was asked about comes first
    assert len(many["files"]) == 20 and many["files_more"] == 5


def _steady(doc: dict[str, object]) -> dict[str, object]:
    """The document without what moves between two reads a moment apart."""
    out = {k: v for k, v in doc.items() if k not in ("read_at", "since_at")}
    out["commits"] = [{k: v for k, v in c.items() if k != "age_s"}
                      for c in doc["commits"]]  # type: ignore[attr-defined]
    out["leases"] = [{k: v for k, v in x.items() if k not in ("expires_in_s", "read_at")}
                     for x in doc["leases"] or ()]  # type: ignore[attr-defined]
    return out


def test_the_cli_json_is_the_api_result(repo: GitRepo, record: Record) -> None:
    leases.claim(record, "repo.metrics", holder="bob", duration_s=3600, why="w",
                 paths=["src/"])
    code, out, _ = run_atlas("activity", "--repo", str(repo.path), "--paths", "src", "--json",
                             record=record.root)
    from_api = act.activity(api.Worker(record), repo=repo.path, paths=["src"]).to_json()
    assert code == 0 and _steady(json.loads(out)) == _steady(from_api)


def test_the_root_is_found_from_anywhere_in_the_working_tree(repo: GitRepo,
                                                             tmp_path: Path) -> None:
    assert gitcmd.toplevel(repo.path) == gitcmd.toplevel(repo.path / "src") == repo.path
    worktree = tmp_path / "wt"
    repo.git("worktree", "add", "-q", str(worktree), "bob/export")
    assert gitcmd.toplevel(worktree / "src") == gitcmd.toplevel(worktree) == worktree
    with pytest.raises(gitcmd.NotARepository):
        gitcmd.toplevel(tmp_path)
    # A `.git` folder that is no repository is not a root: git looks further up.
    (repo.path / "src" / ".git").mkdir()
    assert gitcmd.toplevel(repo.path / "src") == repo.path
    bare = tmp_path / "bare.git"
    repo.git("init", "-q", "--bare", str(bare))
    with pytest.raises(gitcmd.NotARepository, match="bare repository"):
        gitcmd.toplevel(bare)


def test_outside_every_repository_git_is_not_started_and_git_dir_still_counts(
        repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No folder above holds a .git: the answer needs no git process (a session start
    # outside a repository pays for none), and is the same on a machine without git.
    outside = tmp_path / "plain" / "deeper"
    outside.mkdir(parents=True)
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    with pytest.raises(gitcmd.NotARepository, match="not inside a git repository"):
        gitcmd.toplevel(outside)
    # A variable that moves git's search is git's to follow.
    monkeypatch.setenv("PATH", path)
    monkeypatch.setenv("GIT_DIR", str(repo.path / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo.path))
    assert gitcmd.toplevel(outside) == repo.path
