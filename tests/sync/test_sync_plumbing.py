"""What a sync reads from git without asking it, and what it asks git for less often
(fewer processes on every sync): refs read from their files, new folders listed only when
there are some, git's auto maintenance only after a fetch that brought objects in."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from support.git import git
from support.gitteam import Team, cli

from atlas_files.storage import gitcmd as gitmod
from atlas_files.sync import repo

pytestmark = pytest.mark.usefixtures("isolated_git")


def put(root: Path, who: str, name: str, body: str, *args: str) -> tuple[int, str, str]:
    f = root.parent / f"body-{who}-{name}-{abs(hash(body))}.txt"
    f.write_text(body)
    return cli(root, "put", name, "-f", str(f), *args, identity=who)


def git_heads(root: Path, refs: list[str]) -> dict[str, str]:
    out = git(root, "for-each-ref", "--format=%(refname) %(objectname)", *refs)
    return dict(line.split(" ") for line in out.splitlines())


REFS = ["refs/heads/main", "refs/remotes/origin/main", "refs/heads/nowhere"]


def test_refs_read_from_their_files_agree_with_git(team: tuple[Team, Path]) -> None:
    remote, alice = team
    assert put(alice, "alice", "plan", "one\n")[0] == 0
    common = alice / ".git"
    g = gitmod.Git(alice)
    loose = repo.heads(g, common, REFS)
    assert loose == git_heads(alice, REFS) and len(loose) == 2
    # After `git gc` (or `git pack-refs`) the refs live in packed-refs only.
    git(alice, "pack-refs", "--all")
    assert not (common / "refs/heads/main").exists()
    assert repo.heads(g, common, REFS) == loose
    # A ref updated after packing is loose again, and the loose file wins.
    assert put(alice, "alice", "plan", "two\n")[0] == 0
    assert (common / "refs/heads/main").exists()
    assert repo.heads(g, common, REFS) == git_heads(alice, REFS) != loose


def test_refs_git_must_judge_are_asked_of_git(team: tuple[Team, Path]) -> None:
    _, alice = team
    g = gitmod.Git(alice)
    common = alice / ".git"
    want = git_heads(alice, REFS)
    # A symbolic ref: git resolves it.
    git(alice, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    assert repo.heads(g, common, ["refs/heads/alias"]) == {
        "refs/heads/alias": want["refs/heads/main"]}
    # A ref file that holds no commit id: git ignores it, and so does the sync.
    (common / "refs/heads/broken").write_text("not a commit\n")
    assert repo.heads(g, common, ["refs/heads/broken", *REFS]) == want
    # A name with a hidden or '..' part is never read as a path.
    assert repo.heads(g, common, ["refs/remotes/origin/../../HEAD"]) == {}
    # The reftable format (git 2.45+) keeps no ref files: git is asked for every ref.
    (common / "reftable").mkdir()
    (common / "refs/heads/main").write_text("0" * 40 + "\n")  # a file read would trust it
    found = repo.heads(g, common, REFS)
    assert found == git_heads(alice, REFS) and "refs/heads/main" not in found


def test_a_sync_after_git_gc_packed_the_refs(team: tuple[Team, Path]) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    assert put(alice, "alice", "plan", "one\n")[0] == 0
    git(bob, "gc", "-q")
    assert not (bob / ".git/refs/remotes/origin/main").exists()
    code, out, err = cli(bob, "sync", "--json")
    assert code == 0, err
    assert json.loads(out)["came_in"] == ["projects/main/artifacts/plan/plan.v0001.md"]
    git(alice, "gc", "-q")
    assert put(alice, "alice", "plan", "two\n")[0] == 0
    assert git(alice, "rev-parse", "HEAD") == remote.remote_head()


def test_new_folders_are_listed_file_by_file(team: tuple[Team, Path],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    remote, alice = team
    for many in (False, True):
        # Past a few dozen KiB of folder names, every untracked file is listed instead.
        monkeypatch.setattr(repo, "LIST_FOLDERS_UP_TO", 0 if many else 64 * 1024)
        topic = f"fresh-{int(many)}"
        assert put(alice, "alice", topic, "one\n", "--no-sync")[0] == 0
        stray = alice / f"notes-{int(many)}" / "deep"
        stray.mkdir(parents=True)
        (stray / "a.txt").write_text("mine")
        (stray.parent / "b.txt").write_text("mine")
        (alice / "loose.txt").write_text("mine")
        code, out, err = cli(alice, "sync", "--json")
        assert code == 0, err
        report = json.loads(out)
        assert report["went_out"] == [f"projects/main/artifacts/{topic}/{topic}.v0001.md"]
        assert sorted(report["left_out"]) == sorted(
            [f"notes-{int(many)}/b.txt", f"notes-{int(many)}/deep/a.txt", "loose.txt"]
            + (["notes-0/b.txt", "notes-0/deep/a.txt"] if many else []))


def test_a_fetch_that_brought_objects_lets_git_tidy_up(team: tuple[Team, Path]) -> None:
    """The sync's fetch skips git's auto maintenance; the sync runs it itself when the
    fetch brought something in, so a clone that only reads still gets repacked."""
    remote, alice = team
    bob = remote.clone("bob")
    for key, value in (("gc.auto", "6700"), ("gc.autoPackLimit", "1"),
                       ("gc.autoDetach", "false"), ("fetch.unpackLimit", "1")):
        git(bob, "config", key, value)
    git(bob, "repack", "-adq")

    def packs() -> int:
        counts = dict(line.split(": ") for line in git(bob, "count-objects", "-v").splitlines())
        return int(counts["packs"])

    assert packs() == 1
    assert cli(bob, "sync")[0] == 0  # nothing came in
    assert packs() == 1
    assert put(alice, "alice", "plan", "one\n")[0] == 0
    assert cli(bob, "sync")[0] == 0  # a pack came in: two packs, over the limit of one
    assert packs() == 1


def _by_git(path: Path) -> tuple[Path, Path, Path]:
    out = git(path, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir",
              "--git-common-dir").splitlines()
    top, git_dir, common = (Path(os.path.realpath(p)) for p in out)
    return top, git_dir, common


def test_where_git_keeps_a_record_is_read_from_its_files_as_git_finds_it(
        team: tuple[Team, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _, alice = team
    asked: list[tuple[str, ...]] = []
    real_run = gitmod.Git.run

    def run(self: gitmod.Git, *args: str, **kwargs: Any) -> gitmod.Done:
        asked.append(args)
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(gitmod.Git, "run", run)
    # Its own repository, also reached through a symlink; a linked worktree of it.
    link = alice.parent / "alice-link"
    link.symlink_to(alice)
    git(alice, "worktree", "add", "-q", str(alice.parent / "wt"), "-b", "side")
    for path in (alice, link, alice.parent / "wt"):
        assert gitmod.from_files(path) == _by_git(path)
        facts = repo.read_facts(gitmod.Git(path), path)
        assert (facts.top, facts.git_dir, facts.common_dir, facts.prefix) == \
            (*_by_git(path), "")
    assert not [a for a in asked if a[0] == "rev-parse"]
    assert repo.read_facts(gitmod.Git(alice), alice).branch == "main"


def test_layouts_only_git_can_judge_are_asked_of_git(team: tuple[Team, Path],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _, alice = team
    # A record deeper inside a repository: git says where the top is, and the prefix.
    code = alice.parent / "code"
    git(alice.parent, "init", "-q", "-b", "main", str(code))
    (code / "docs" / "record").mkdir(parents=True)
    record = code / "docs" / "record"
    assert gitmod.from_files(record) is None
    facts = repo.read_facts(gitmod.Git(record), record)
    assert (facts.top, facts.prefix) == (code.resolve(), "docs/record/")
    # A variable or a config that moves the work tree.
    monkeypatch.setenv("GIT_DIR", str(alice / ".git"))
    assert gitmod.from_files(alice) is None
    monkeypatch.delenv("GIT_DIR")
    assert gitmod.from_files(alice) is not None
    git(alice, "config", "core.worktree", str(alice))
    assert gitmod.from_files(alice) is None
    assert repo.read_facts(gitmod.Git(alice), alice).top == alice.resolve()
    # A `.git` that is no repository: git looks further up, so it is asked.
    stray = code / "stray"
    (stray / ".git").mkdir(parents=True)
    assert gitmod.from_files(stray) is None
    assert repo.read_facts(gitmod.Git(stray), stray).prefix == "stray/"


def _loose_in_17(root: Path, count: int) -> None:
    """``count`` loose blobs whose ids start with 17, the folder git samples."""
    found: list[bytes] = []
    n = 0
    while len(found) < count:
        body = f"sample {n}\n".encode()
        if hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest().startswith("17"):
            found.append(body)
        n += 1
    paths = []
    for i, body in enumerate(found):
        path = root.parent / f"loose-{i}"
        path.write_bytes(body)
        paths.append(str(path))
    git(root, "hash-object", "-w", "--stdin-paths", input="\n".join(paths))


def test_a_synced_write_asks_git_for_nothing_it_knows(
        team: tuple[Team, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """One status, beside the fetch (none after the write: atlas knows what it wrote), and
    no `git maintenance run --auto` unless git's own sample says it could find work."""
    _, alice = team
    trace = alice.parent / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    assert put(alice, "alice", "plan", "one\n")[0] == 0
    traced = trace.read_text()
    assert sum(" built-in: git status " in line for line in traced.splitlines()) == 1
    assert "maintenance run --auto" not in traced  # neither git's nor atlas's
    pushed = git(alice, "ls-tree", "-r", "--name-only", "origin/main").splitlines()
    assert "projects/main/artifacts/plan/plan.v0001.md" in pushed
    assert git(alice, "status", "--porcelain") == ""  # nothing of the write left behind
    # 28 loose objects in the folder git samples: over gc.auto's 6700 / 256, but this
    # team's config turns auto gc off (gc.auto 0), and atlas asks git for it.
    _loose_in_17(alice, 28)
    trace.write_text("")
    assert put(alice, "alice", "plan", "two\n")[0] == 0
    assert "maintenance run --auto" not in trace.read_text()
    for gc_auto, runs in (("6700", True), ("8000", False), ("0", False), ("512", True)):
        git(alice, "config", "gc.auto", gc_auto)
        trace.write_text("")
        assert put(alice, "alice", f"t-{gc_auto}", "x\n")[0] == 0
        said = trace.read_text()
        assert ("maintenance run --auto" in said) == runs, gc_auto  # git decides the rest
        assert ("config --int --get gc.auto" in said) is True  # asked after each change
    trace.write_text("")
    assert put(alice, "alice", "t-again", "x\n")[0] == 0
    assert "gc.auto" not in trace.read_text()  # the same config: the answer kept
