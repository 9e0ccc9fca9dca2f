"""What a sync reads from git without asking it, and what it asks git for less often
(fewer processes on every sync): refs read from their files, new folders listed only when
there are some, git's auto maintenance only after a fetch that brought objects in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gitteam import Team, cli, git

from atlas_files.sync import git as gitmod
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
