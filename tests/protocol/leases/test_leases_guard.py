"""`atlas lease guard`: which record, which committer, which paths (the hook itself runs
under the real pre-commit framework in test_precommit_hooks.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.git import GitRepo
from support.runner import run_atlas

from atlas_files.api import guard
from atlas_files.protocol import leases
from atlas_files.storage.record import Record

pytestmark = pytest.mark.usefixtures("clean_git_env")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    r = GitRepo(tmp_path / "code")
    r.commit("start", "src/metrics.py", "src/util.py", "README.md")
    monkeypatch.chdir(r.path)
    return r


def _bob_leases_metrics(record: Record) -> None:
    leases.claim(record, "repo.metrics", holder="bob", duration_s=3600,
                 why="rewriting the export", paths=["src/metrics.py"])


def test_the_record_comes_from_atlas_record_then_git_config_then_above_the_repo(
        repo: GitRepo, tmp_path: Path) -> None:
    repo.write("src/metrics.py", "changed\n")
    repo.git("add", "-A")

    code, out, _ = run_atlas("lease", "guard", "--staged", identity="alice")
    assert code == 0
    assert "no atlas record found" in out and "no path lease was checked" in out
    assert out.count("no atlas record found") == 1

    elsewhere = Record.init(tmp_path / "records" / "team")
    _bob_leases_metrics(elsewhere)
    assert run_atlas("lease", "guard", "--staged", identity="alice",
                     env={"ATLAS_RECORD": str(elsewhere.root)})[0] == 4

    repo.git("config", "atlas.record", "../records/team")  # relative to the repository root
    code, out, _ = run_atlas("lease", "guard", "--staged", "--json", identity="alice")
    assert code == 4 and Path(json.loads(out)["record"]) == repo.path / "../records/team"
    repo.git("config", "atlas.record", "../records/none")
    code, _, err = run_atlas("lease", "guard", "--staged", identity="alice")
    assert code == 2 and "no record at" in err  # named but missing: stop, never pass
    repo.git("config", "--unset", "atlas.record")

    above = Record.init(tmp_path)  # an atlas.yaml in a folder above the repository
    _bob_leases_metrics(above)
    code, out, _ = run_atlas("lease", "guard", "--staged", "--json", identity="alice")
    assert code == 4 and json.loads(out)["record"] == str(tmp_path)


def test_the_committer_is_atlas_as_or_git_config_atlas_as(
        repo: GitRepo, tmp_path: Path) -> None:
    record = Record.init(tmp_path)
    _bob_leases_metrics(record)
    repo.write("src/metrics.py", "changed\n")
    repo.git("add", "-A")
    code, out, _ = run_atlas("lease", "guard", "--staged")
    assert code == 4 and "You have no atlas identity" in out and "ATLAS_AS" in out
    repo.git("config", "atlas.as", "bob")
    code, out, _ = run_atlas("lease", "guard", "--staged")
    assert code == 0, out
    # the environment wins over git config
    code, out, _ = run_atlas("lease", "guard", "--staged", env={"ATLAS_AS": "alice"})
    assert code == 4 and "committing as alice" in out


def test_what_the_refusal_says(repo: GitRepo, tmp_path: Path) -> None:
    record = Record.init(tmp_path)
    _bob_leases_metrics(record)
    leases.claim(record, "repo.src", holder="carol", duration_s=1800, why="typing pass",
                 paths=["src/**/*.py"])
    repo.write("src/metrics.py", "changed\n")
    repo.write("src/util.py", "changed\n")
    repo.git("add", "-A")
    code, out, _ = run_atlas("lease", "guard", "--staged", identity="alice")
    assert code == 4
    words = " ".join(out.split())
    assert "bob holds repo.metrics for 59m more" in words or \
        "bob holds repo.metrics for 1h more" in words
    assert "rewriting the export" in words and "src/metrics.py (leased as src/metrics.py)" in words
    assert "carol holds repo.src" in words and "typing pass" in words
    assert "src/util.py (leased as src/**/*.py)" in words
    assert "The lease is advisory" in words
    assert "SKIP=atlas-leases git commit ..." in out  # whole, on its own line
    assert "tell bob and carol through the record" in words
    code, out, _ = run_atlas("lease", "guard", "--staged", "--json", identity="alice")
    data = json.loads(out)
    assert data["ok"] is False and data["paths_checked"] == 2
    assert {(c["path"], c["holder"]) for c in data["conflicts"]} == {
        ("src/metrics.py", "bob"), ("src/metrics.py", "carol"), ("src/util.py", "carol")}
    first = data["conflicts"][0]
    assert {"resource", "why", "expires_at", "expires_in_s", "glob"} <= set(first)


def test_deleting_or_moving_a_leased_file_counts_as_touching_it(
        repo: GitRepo, tmp_path: Path) -> None:
    record = Record.init(tmp_path)
    _bob_leases_metrics(record)
    (repo.path / "lib").mkdir()
    repo.git("mv", "src/metrics.py", "lib/metrics.py")
    code, out, _ = run_atlas("lease", "guard", "--staged", identity="alice")
    assert code == 4 and "src/metrics.py" in out
    repo.git("reset", "-q", "--hard")
    repo.git("rm", "-q", "src/metrics.py")
    assert run_atlas("lease", "guard", "--staged", identity="alice")[0] == 4


def test_explicit_paths_and_usage(repo: GitRepo, tmp_path: Path) -> None:
    record = Record.init(tmp_path)
    _bob_leases_metrics(record)
    assert run_atlas("lease", "guard", "src/util.py", identity="alice")[0] == 0
    assert run_atlas("lease", "guard", "./src/metrics.py", identity="alice")[0] == 4
    code, _, err = run_atlas("lease", "guard", identity="alice")
    assert code == 2 and "--staged or PATHs" in err
    code, _, err = run_atlas("lease", "guard", "/etc/passwd", identity="alice")
    assert code == 2 and "absolute" in err


def test_a_damaged_lease_is_reported_not_obeyed(repo: GitRepo, tmp_path: Path) -> None:
    record = Record.init(tmp_path)
    _bob_leases_metrics(record)
    (record.leases_dir / "repo.broken").mkdir()
    (record.leases_dir / "repo.broken" / "g00000001.json").write_text("{not json")
    code, out, err = run_atlas("lease", "guard", "src/util.py", identity="alice")
    assert code == 0 and "repo.broken" in err and "not obeyed" in err


def test_outside_a_git_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_atlas("lease", "guard", "--staged", identity="alice")
    assert code == 2 and "not inside a git repository" in err


def test_the_cli_json_is_the_api_result(repo: GitRepo, tmp_path: Path) -> None:
    record = Record.init(tmp_path)
    _bob_leases_metrics(record)
    repo.write("src/metrics.py", "changed\n")
    repo.git("add", "-A")
    code, out, _ = run_atlas("lease", "guard", "--staged", "--json", identity="alice")
    from_cli = json.loads(out)
    from_api = guard.guard(identity="alice").to_json()
    for doc in (from_cli, from_api):
        for c in doc["conflicts"]:
            c.pop("expires_in_s")
    assert code == 4 and from_cli == from_api


def test_the_quick_look_agrees_with_a_full_read_of_every_lease(tmp_path: Path) -> None:
    """Expired, released, own, machine and path leases mixed: the guard's answer is what
    reading the whole sheet and matching every glob gives."""
    import random

    from atlas_files.protocol.leases.guard import conflicts
    from atlas_files.protocol.leases.paths import covers

    rng = random.Random(5)
    record = Record.init(tmp_path / "rec")
    globs = ["src/", "src/*.py", "src/**/*.py", "docs", "**/*.md", "src/a.py", "lib/x/**"]
    for i in range(60):
        holder = rng.choice(["alice", "bob", "carol"])
        paths = rng.sample(globs, rng.randint(0, 2))
        resource = f"r{i}"
        if rng.random() < 0.2:
            _old(record, resource, holder, paths)
        else:
            leases.claim(record, resource, holder=holder, duration_s=600, why=f"w{i}",
                         paths=paths)
            if rng.random() < 0.2:
                leases.release(record, resource, holder=holder)
    files = ["src/a.py", "src/b/c.py", "docs/x.md", "README.md", "lib/x/y/z", "src/z.txt"]
    for who in ("alice", "bob", None):
        _, found = conflicts(record, who, files)
        expected = []
        sheet = sorted(leases.ls(record), key=lambda x: x.resource)
        for path in files:
            for lease in sheet:
                if lease.covers_paths and lease.holder != who:
                    hit = next((g for g in lease.paths if covers(g, path)), None)
                    if hit:
                        expected.append((path, hit, lease.resource, lease.holder))
        got = [(c.path, c.glob, c.lease.resource, c.lease.holder) for c in found]
        assert got == expected and expected, who


def _old(record: Record, resource: str, holder: str, paths: list[str]) -> None:
    from datetime import timedelta

    from atlas_files.facts import timeutil

    real = timeutil.now
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(timeutil, "now", lambda: real() - timedelta(hours=2))
        leases.claim(record, resource, holder=holder, duration_s=600, why="old", paths=paths)


def test_a_hand_widened_or_symlinked_lease_is_reported_not_obeyed(
        repo: GitRepo, tmp_path: Path) -> None:
    record = Record.init(tmp_path)
    leases.claim(record, "repo.wide", holder="bob", duration_s=600, why="w", paths=["src/"])
    path = record.leases_dir / "repo.wide" / "g00000001.json"
    data = json.loads(path.read_bytes())
    data["paths"] = ["../../**"]
    path.chmod(0o644)
    path.write_text(json.dumps(data))
    (record.leases_dir / "repo.link").symlink_to(record.leases_dir / "repo.wide")
    leases.claim(record, "repo.linked", holder="bob", duration_s=600, why="w", paths=["src/"])
    gen = record.leases_dir / "repo.linked" / "g00000002.json"
    gen.symlink_to(record.leases_dir / "repo.linked" / "g00000001.json")
    (record.leases_dir / "repo.pipe").mkdir()
    os.mkfifo(record.leases_dir / "repo.pipe" / "g00000001.json")  # must not wait on it
    code, out, err = run_atlas("lease", "guard", "src/metrics.py", identity="alice")
    assert code == 0, out
    assert "leads out" in err and "repo.link" in err and "symlink" in err
    assert "repo.linked/g00000002.json" in err and "repo.pipe" in err
