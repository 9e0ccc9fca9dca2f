"""What keeps the edit guard's common case cheap, and never wrong: the per-user index of a
record's path leases (pathleases.py) and the refs' file times (gitrefs.py)."""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.git import GitRepo, git_env
from support.runner import run_atlas

from atlas_files.facts import timeutil
from atlas_files.protocol import gitrefs, leases, pathleases
from atlas_files.protocol.leases.guard import conflicts
from atlas_files.storage import usercache
from atlas_files.storage.record import Record

HOUR_AGO = time.time() - 3600


def age(record: Record, when: float = HOUR_AGO) -> None:
    """Make every lease folder look untouched since ``when``."""
    for entry in os.scandir(record.leases_dir):
        os.utime(entry.path, (when, when))


def index_file(record: Record) -> Path:
    where = usercache.folder("leases")
    assert where is not None
    real = os.path.realpath(record.leases_dir)
    return Path(pathleases._index_path(where, real))


@pytest.fixture
def sheet(record: Record) -> Record:
    """Twenty leases: bob's on src/ paths, carol's on a GPU, dave's released."""
    for i in range(18):
        leases.claim(record, f"repo.pkg{i}", holder="bob", duration_s=3600, why="w",
                     paths=[f"pkg{i}/"])
    leases.claim(record, "gpu0", holder="carol", duration_s=3600, why="w")
    leases.claim(record, "repo.old", holder="dave", duration_s=3600, why="w",
                 paths=["old/"])
    leases.release(record, "repo.old", holder="dave")
    return record


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    original = pathleases._facts

    def counting(resource: str, folder: str) -> Any:
        read.append(resource)
        return original(resource, folder)

    monkeypatch.setattr(pathleases, "_facts", counting)
    return read


def test_quiet_leases_are_read_once_then_from_the_index(
        sheet: Record, monkeypatch: pytest.MonkeyPatch) -> None:
    age(sheet)
    read = count_reads(monkeypatch)
    first = pathleases.read(str(sheet.leases_dir))
    assert len(read) == 20 and index_file(sheet).is_file()
    assert sorted(i.resource for i in first) == sorted(f"repo.pkg{i}" for i in range(18))
    read.clear()
    again = pathleases.read(str(sheet.leases_dir))
    assert read == []  # nothing changed: no lease read again
    assert [(i.resource, i.holder, i.globs) for i in again] == \
        [(i.resource, i.holder, i.globs) for i in first]


def test_a_change_of_a_lease_is_seen_at_once(sheet: Record,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    age(sheet)
    pathleases.read(str(sheet.leases_dir))
    read = count_reads(monkeypatch)
    leases.release(sheet, "repo.pkg3", holder="bob")
    leases.claim(sheet, "repo.pkg3", holder="erin", duration_s=60, why="mine now",
                 paths=["pkg3/"])
    leases.claim(sheet, "gpu0-paths", holder="carol", duration_s=60, why="new",
                 paths=["gpu/"])
    items = {i.resource: i for i in pathleases.read(str(sheet.leases_dir))}
    assert sorted(read) == ["gpu0-paths", "repo.pkg3"]  # only the changed folders
    assert items["repo.pkg3"].holder == "erin" and "gpu0-paths" in items
    problems, found = conflicts(sheet, "alice", ["pkg3/x.py", "gpu/a"])
    assert problems == [] and [c.lease.holder for c in found] == ["erin", "carol"]


def test_a_folder_changed_lately_is_read_every_time_even_if_its_time_stands_still(
        sheet: Record) -> None:
    """File times tick coarsely: two changes within one tick leave one time. A folder
    changed within RACY_S of the look is never taken from the index."""
    recent = time.time() - 10
    age(sheet, recent)
    items = {i.resource: i for i in pathleases.read(str(sheet.leases_dir))}
    assert items["repo.pkg5"].holder == "bob"
    leases.release(sheet, "repo.pkg5", holder="bob")
    leases.claim(sheet, "repo.pkg5", holder="erin", duration_s=60, why="w",
                 paths=["pkg5/"])
    os.utime(sheet.leases_dir / "repo.pkg5", (recent, recent))  # the same tick
    items = {i.resource: i for i in pathleases.read(str(sheet.leases_dir))}
    assert items["repo.pkg5"].holder == "erin"


def test_an_index_others_can_write_or_a_damaged_one_is_never_believed(
        sheet: Record, monkeypatch: pytest.MonkeyPatch) -> None:
    age(sheet)
    pathleases.read(str(sheet.leases_dir))
    path = index_file(sheet)
    doc = json.loads(path.read_text())
    doc["entries"]["repo.pkg1"][4] = "alice"  # a planted entry: "alice holds pkg1"
    path.write_text(json.dumps(doc))
    folder = path.parent
    folder.chmod(0o777)
    read = count_reads(monkeypatch)
    items = {i.resource: i for i in pathleases.read(str(sheet.leases_dir))}
    assert items["repo.pkg1"].holder == "bob" and len(read) == 20
    folder.chmod(0o700)
    path.write_text("{not json")
    read.clear()
    assert {i.resource for i in pathleases.read(str(sheet.leases_dir))} == set(items)
    assert len(read) == 20


def test_may_cover_rules_out_only_what_cannot_cover(sheet: Record) -> None:
    items = pathleases.read(str(sheet.leases_dir))
    now = timeutil.format_time(timeutil.now())
    assert not pathleases.may_cover(items, "alice", ["src/x.py", "pkg10x/a.py"], now)
    assert pathleases.may_cover(items, "alice", ["pkg10/a.py"], now)
    assert pathleases.may_cover(items, "alice", ["pkg10"], now)
    assert not pathleases.may_cover(items, "bob", ["pkg10/a.py"], now)  # bob's own
    assert not pathleases.may_cover(items, "alice", ["old/x"], now)  # released
    leases.claim(sheet, "repo.any", holder="bob", duration_s=60, why="w",
                 paths=["**/*.md"])
    items = pathleases.read(str(sheet.leases_dir))
    assert pathleases.may_cover(items, "alice", ["src/x.py"], now)  # a leading wildcard
    later = timeutil.format_time(timeutil.parse_time(now) + timedelta(hours=2))
    assert not pathleases.may_cover(items, "alice", ["pkg10/a.py"], later)  # expired


def _moved(root: str) -> float:
    """gitrefs.last_moved of a repository whose refs it can read: a time, never None."""
    at = gitrefs.last_moved(root)
    assert at is not None
    return at


def test_the_refs_file_times_follow_every_kind_of_ref(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "code", git_env())
    repo.commit("one", "a.txt", ago_s=3 * 3600)
    old = time.time() - 2 * 3600
    for path in (repo.path / ".git").rglob("*"):
        os.utime(path, (old, old))
    root = str(repo.path)
    assert gitrefs.last_moved(root) == pytest.approx(old, abs=1)
    repo.git("branch", "side")
    assert _moved(root) > old + 3000  # a new branch
    for path in (repo.path / ".git").rglob("*"):
        os.utime(path, (old, old))
    repo.git("pack-refs", "--all")
    assert _moved(root) > old + 3000  # packed refs
    for path in (repo.path / ".git").rglob("*"):
        os.utime(path, (old, old))
    other = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "--detach", str(other))
    for path in (repo.path / ".git").rglob("*"):
        os.utime(path, (old, old))
    repo.git("-C", str(other), "commit", "-q", "--allow-empty", "-m", "detached")
    assert _moved(root) > old + 3000  # a commit on another worktree's HEAD
    assert _moved(str(other)) > old + 3000  # asked from the worktree itself
    os.environ["GIT_DIR"] = str(repo.path / ".git")
    try:
        assert gitrefs.last_moved(root) is None  # git is pointed elsewhere: cannot tell
    finally:
        del os.environ["GIT_DIR"]
    assert gitrefs.last_moved(str(tmp_path)) is None  # no repository


def test_the_common_case_runs_no_git(tmp_path: Path) -> None:
    """With no ref moved within guard.recent, the guard answers without starting git: a
    guard with no `git` on its PATH says nothing, where a moved ref makes it say that it
    could not read the commits."""
    repo = GitRepo(tmp_path / "code", git_env())
    Record.init(repo.path, ["web"])
    repo.commit("one", "src/a.py", author="bob", ago_s=3 * 3600)
    old = time.time() - 3 * 3600
    for path in (repo.path / ".git").rglob("*"):
        os.utime(path, (old, old))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {"PATH": str(bin_dir)}  # neither git nor anything else
    ev = json.dumps({"tool_name": "Edit", "cwd": str(repo.path),
                     "tool_input": {"file_path": str(repo.path / "src/a.py")}})
    out = run_atlas("--as", "alice", "guard", "--hook", "claude", input=ev,
                    cwd=repo.path, env=env, process=True)
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    repo.git("branch", "side")  # a ref moved: git is asked, and is not there
    out = run_atlas("--as", "alice", "guard", "--hook", "claude", input=ev,
                    cwd=repo.path, env=env, process=True)
    assert out.returncode == 0 and "recent commits could not be read" in out.stderr
    shutil.rmtree(bin_dir)
