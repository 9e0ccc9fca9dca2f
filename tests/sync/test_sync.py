"""`atlas sync` and writes that sync themselves, against real git: a bare remote and
clones of it in temp folders. (Races, SIGKILL and `git daemon`: test_sync_race.py.)"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.git import git
from support.gitteam import Team, accept_sync, bare_remote, cli, start_team

from atlas_files.facts import layout
from atlas_files.facts.errors import BadInput, DamagedFile
from atlas_files.storage import config as configmod
from atlas_files.storage import gitcmd as gitmod
from atlas_files.storage.record import Record
from atlas_files.sync import repo, run
from atlas_files.sync.engine import Engine

# Git reads no user or system config here, and no ATLAS_* variable leaks in.
pytestmark = pytest.mark.usefixtures("isolated_git")


def put(root: Path, who: str, name: str, body: str, *args: str) -> tuple[int, str, str]:
    f = root.parent / f"body-{who}-{len(body)}-{abs(hash(body))}.txt"
    f.write_text(body)
    return cli(root, "put", name, "-f", str(f), *args, identity=who)


def remote_paths(team: Team) -> list[str]:
    return git(team.inspect(), "ls-files").splitlines()


def test_a_write_on_one_machine_reaches_another(team: tuple[Team, Path]) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    assert put(alice, "alice", "plan", "first plan\n")[0] == 0
    code, out, err = cli(bob, "get", "plan", "--json", identity="bob")
    assert code == 0, err
    assert json.loads(out)["body"] == "first plan\n"  # the read fetched first (fetch_every 0s)
    assert put(bob, "bob", "plan", "second plan\n")[0] == 0
    code, out, _ = cli(alice, "sync", identity="alice")
    assert code == 0 and "came in: 1 file: plan v2 (main)" in out
    assert put(bob, "bob", "plan", "third plan\n")[0] == 0
    code, out, _ = cli(alice, "sync", "--json", identity="alice")
    report = json.loads(out)
    assert code == 0
    assert report["came_in"] == ["projects/main/artifacts/plan/plan.v0003.md"]
    assert report["went_out"] == [] and report["drafts"] == []
    assert report["head"] == remote.remote_head()
    # No merge commits: one line of history.
    assert git(alice, "log", "--merges", "--oneline") == ""


def test_receipts_sessions_and_telemetry_never_travel(team: tuple[Team, Path]) -> None:
    remote, alice = team
    assert put(alice, "alice", "plan", "text\n")[0] == 0
    assert cli(alice, "get", "plan", identity="alice")[0] == 0
    (alice / layout.SESSIONS).mkdir(exist_ok=True)
    (alice / layout.SESSIONS / "alice.json").write_text("{}")
    (alice / layout.TELEMETRY).mkdir(exist_ok=True)
    (alice / layout.TELEMETRY / "box.json").write_text("{}")
    (alice / "notes.txt").write_text("mine")
    code, out, _ = cli(alice, "sync", "--json")
    assert code == 0
    assert json.loads(out)["left_out"] == ["notes.txt"]
    landed = remote_paths(remote)
    assert "projects/main/artifacts/plan/plan.v0001.md" in landed
    assert not [p for p in landed if p.split("/")[0] in ("receipts", "sessions", "telemetry")
                or p == "notes.txt"]


def test_sync_help_says_what_does_not_travel() -> None:
    code, out, _ = cli(Path("."), "sync", "--help")
    assert code == 0
    text = " ".join(out.split())
    for word in ("receipts", "session rows", "telemetry", "MCP server", "never syncs"):
        assert word in text


def test_a_version_that_lost_the_race_becomes_a_draft(team: tuple[Team, Path]) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    assert put(alice, "alice", "plan", "alice's plan\n", "--no-sync")[0] == 0
    assert put(bob, "bob", "plan", "bob's plan\n", "--no-sync")[0] == 0
    mine = (bob / "projects/main/artifacts/plan/plan.v0001.md").read_bytes()
    assert cli(alice, "sync")[0] == 0
    code, out, err = cli(bob, "sync", identity="bob")
    assert code == 3, err
    draft = ".atlas-drafts/main/plan/plan.v0001.bob.md"
    assert "by alice" in err and draft in err
    assert "atlas put plan --expect 1 -f" in err
    assert (bob / draft).read_bytes() == mine  # byte for byte
    # The winner's version is what bob's checkout now holds, and nothing of bob's landed.
    assert (bob / "projects/main/artifacts/plan/plan.v0001.md").read_text().endswith(
        "alice's plan\n")
    assert git(bob, "rev-parse", "HEAD") == remote.remote_head()
    assert draft not in remote_paths(remote)
    # Bob never read alice's v1: his next write without a read is stopped.
    code, _, err = put(bob, "bob", "plan", "bob again\n")
    assert code == 3 and "never read" in err
    # Once read, the draft's text can be written as the next version.
    assert cli(bob, "get", "plan", identity="bob")[0] == 0
    assert put(bob, "bob", "plan", "merged\n")[0] == 0
    # That write, pushed from here, supersedes the draft: it is gone.
    code, out, _ = cli(bob, "sync", "--json")
    assert json.loads(out)["drafts"] == [] and not (bob / draft).exists()


def test_a_draft_stays_until_its_writer_writes_the_topic_again_here(
        team: tuple[Team, Path]) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    elsewhere = remote.clone("bob-elsewhere")  # bob's name on another machine
    assert put(alice, "alice", "plan", "alice's plan\n", "--no-sync")[0] == 0
    assert put(bob, "bob", "plan", "bob's plan\n", "--no-sync")[0] == 0
    # Bob writes on top of his own v1 before the race is told: that v2 lands, written
    # before the draft was kept, so it supersedes nothing.
    assert put(bob, "bob", "plan", "bob's plan, more\n", "--no-sync")[0] == 0
    assert cli(alice, "sync")[0] == 0
    code, _, err = cli(bob, "sync", identity="bob")
    assert code == 3, err
    draft = ".atlas-drafts/main/plan/plan.v0001.bob.md"
    folder = str(bob / layout.DRAFTS)
    code, out, _ = cli(bob, "sync", identity="bob")
    assert code == 0
    assert f"1 draft (main/plan/plan.v0001.bob.md) waiting in {folder}" in out
    code, out, _ = cli(bob, "sync", "--json", identity="bob")
    report = json.loads(out)
    assert (report["drafts"], report["drafts_waiting"], report["drafts_folder"]) == (
        [draft], 1, folder)
    # A version by bob written elsewhere (that bob never saw the draft) and one by
    # alice leave it waiting.
    assert cli(elsewhere, "get", "plan", identity="bob")[0] == 0
    assert put(elsewhere, "bob", "plan", "bob elsewhere\n")[0] == 0
    assert cli(alice, "get", "plan", identity="alice")[0] == 0
    assert put(alice, "alice", "plan", "alice again\n")[0] == 0
    code, out, _ = cli(bob, "sync", "--json", identity="bob")
    assert code == 0 and json.loads(out)["drafts"] == [draft]
    # Bob writes the topic again here, after reading, and loses again: that draft, his
    # latest attempt, replaces the first.
    assert cli(bob, "get", "plan", identity="bob")[0] == 0
    assert put(bob, "bob", "plan", "bob, merged\n", "--no-sync")[0] == 0
    assert put(alice, "alice", "plan", "alice first again\n")[0] == 0
    code, _, err = cli(bob, "sync", identity="bob")
    assert code == 3, err
    code, out, _ = cli(bob, "sync", "--json", identity="bob")
    again = ".atlas-drafts/main/plan/plan.v0005.bob.md"
    assert json.loads(out)["drafts"] == [again]
    # Written once more and landed: the sync that pushes it says the draft is gone.
    assert cli(bob, "get", "plan", identity="bob")[0] == 0
    assert put(bob, "bob", "plan", "bob, merged again\n", "--no-sync")[0] == 0
    code, out, _ = cli(bob, "sync", identity="bob")
    assert code == 0
    assert "removed 1 draft (main/plan/plan.v0005.bob.md)" in out and "waiting" not in out
    assert not (bob / draft).exists() and not (bob / again).exists()
    code, out, _ = cli(bob, "sync", "--json", identity="bob")
    report = json.loads(out)
    assert (report["drafts"], report["drafts_waiting"]) == ([], 0)


def test_the_session_ritual_syncs(team: tuple[Team, Path]) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    assert cli(alice, "begin", identity="alice")[0] == 0
    code, _, err = cli(alice, "end", "--status", "alice: the parser is done", identity="alice")
    assert code == 0, err
    assert "projects/main/status/status.v0001.md" in remote_paths(remote)
    code, out, err = cli(bob, "begin", "--json", identity="bob")  # fetched first
    assert code == 0, err
    assert "the parser is done" in json.dumps(json.loads(out)["status"])


def test_a_status_that_lost_names_the_status_commands(tmp_path: Path) -> None:
    remote, alice = start_team(tmp_path, str(bare_remote(tmp_path / "served")),
                               projects=("web", "ml"))
    bob = remote.clone("bob")
    for root, who in ((alice, "alice"), (bob, "bob")):
        f = tmp_path / f"{who}.txt"
        f.write_text(f"{who} says where ml stands\n")
        code, _, err = cli(root, "-p", "ml", "status", "write", "-f", str(f), "--no-sync",
                           identity=who)
        assert code == 0, err
    assert cli(alice, "sync")[0] == 0
    code, _, err = cli(bob, "sync")
    assert code == 3, err
    assert ".atlas-drafts/ml/status/status.v0001.bob.md" in err
    assert "`atlas -p ml status show`" in err
    assert "`atlas -p ml status write --expect 1 -f MERGED_FILE`" in err
    code, out, _ = cli(bob, "sync")
    assert code == 0 and "up to date with origin/main" in out
    assert "1 draft (ml/status/status.v0001.bob.md) waiting in" in out


def test_an_auto_synced_write_that_lost_exits_3_and_keeps_a_draft(
        team: tuple[Team, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    assert cli(bob, "sync")[0] == 0
    # Bob's put fetches first; alice pushes v1 between his write and his push.
    real_push = Engine.push
    calls: list[int] = []

    def alice_pushes_first(self: Engine) -> bool:
        if not calls and self.record.root == bob:
            calls.append(1)
            assert put(alice, "alice", "plan", "alice wins\n")[0] == 0
        return real_push(self)

    monkeypatch.setattr(Engine, "push", alice_pushes_first)
    code, out, err = put(bob, "bob", "plan", "bob loses\n", "--json")
    assert code == 3, err
    assert json.loads(out)["error"]["kind"] == "version_conflict"
    assert "published first on origin/main by alice" in err
    assert (bob / ".atlas-drafts/main/plan/plan.v0001.bob.md").read_text().endswith(
        "bob loses\n")
    assert git(bob, "rev-parse", "HEAD") == remote.remote_head()


def test_a_lease_claim_that_lost_exits_4_naming_the_winner(team: tuple[Team, Path]) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    for root, who in ((alice, "alice"), (bob, "bob")):
        code, _, err = cli(root, "lease", "claim", "gpu0", "--for", "1h", "--why", "train",
                           "--no-sync", identity=who)
        assert code == 0, err
    assert cli(alice, "sync")[0] == 0
    code, _, err = cli(bob, "sync")
    assert code == 4, err
    assert "alice" in err and "gpu0" in err
    code, out, _ = cli(bob, "lease", "show", "gpu0", "--json")
    assert json.loads(out)["holder"] == "alice"
    # Afterwards bob's claim is refused by the lease itself.
    code, _, err = cli(bob, "lease", "claim", "gpu0", "--for", "1h", "--why", "x",
                       identity="bob")
    assert code == 4 and "alice" in err


def test_decisions_never_collide(team: tuple[Team, Path]) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    args = ("decide", "--topic", "db", "--recommended", "pg", "--chosen", "pg",
            "--relation", "agreed", "--why", "fits", "--no-sync")
    assert cli(alice, *args, identity="alice")[0] == 0
    assert cli(bob, *args, identity="bob")[0] == 0
    assert cli(alice, "sync")[0] == 0
    assert cli(bob, "sync")[0] == 0
    assert cli(alice, "sync")[0] == 0
    code, out, _ = cli(alice, "decisions", "--json")
    assert sorted(d["author"] for d in json.loads(out)["decisions"]) == ["alice", "bob"]
    assert git(alice, "log", "--merges", "--oneline") == ""


def test_an_edit_in_place_of_a_published_version_is_refused(team: tuple[Team, Path]) -> None:
    remote, alice = team
    assert put(alice, "alice", "plan", "v1\n")[0] == 0
    before = remote.remote_head()
    path = alice / "projects/main/artifacts/plan/plan.v0001.md"
    path.chmod(stat.S_IWUSR | stat.S_IRUSR)
    path.write_text(path.read_text().replace("v1", "edited"))
    assert put(alice, "alice", "other", "new\n", "--no-sync")[0] == 0
    code, out, err = cli(alice, "sync", "--json")
    assert code == 1, err
    assert json.loads(out)["error"]["kind"] == "damaged"
    assert "plan.v0001.md" in err and "append-only" in err
    assert remote.remote_head() == before  # nothing pushed, not even the new topic
    path.unlink()
    code, _, err = cli(alice, "sync")
    assert code == 1 and "deleted" in err  # a deletion is refused alike
    git(alice, "checkout", "--", str(path.relative_to(alice)))
    assert cli(alice, "sync")[0] == 0


def test_a_committed_edit_of_a_published_version_is_not_pushed(
        team: tuple[Team, Path]) -> None:
    remote, alice = team
    assert put(alice, "alice", "plan", "v1\n")[0] == 0
    before = remote.remote_head()
    path = "projects/main/artifacts/plan/plan.v0001.md"
    (alice / path).chmod(0o644)
    (alice / path).write_text("edited and committed by hand\n")
    git(alice, "commit", "-qam", "hand edit")
    code, _, err = cli(alice, "sync")
    assert code == 1, err
    assert "plan.v0001.md" in err and "hand edit" in err
    assert remote.remote_head() == before


def test_a_remote_that_changed_history_is_not_integrated(team: tuple[Team, Path]) -> None:
    remote, alice = team
    assert put(alice, "alice", "plan", "v1\n")[0] == 0
    bob = remote.clone("bob")
    vandal = remote.clone("vandal")
    path = "projects/main/artifacts/plan/plan.v0001.md"
    (vandal / path).chmod(0o644)
    (vandal / path).write_text("rewritten\n")
    git(vandal, "commit", "-qam", "edit a published version")
    git(vandal, "push", "-q", "origin", "main")
    assert put(bob, "bob", "other", "x\n", "--no-sync")[0] == 0
    before = remote.remote_head()
    code, _, err = cli(bob, "sync")
    assert code == 1, err
    assert "on the remote" in err and "plan.v0001.md" in err
    assert "edit a published version" in err  # names the commit
    assert remote.remote_head() == before
    assert (bob / path).read_text().endswith("v1\n")


def test_a_force_pushed_remote_is_refused(team: tuple[Team, Path]) -> None:
    remote, alice = team
    assert put(alice, "alice", "plan", "v1\n")[0] == 0
    bob = remote.clone("bob")
    assert cli(bob, "sync")[0] == 0
    head = git(bob, "rev-parse", "HEAD")
    # Someone rewrites the remote: plan v1 is dropped and another commit put in its place.
    git(alice, "reset", "-q", "--hard", "HEAD~1")
    (alice / "other.txt").write_text("x")
    git(alice, "add", "other.txt")
    git(alice, "commit", "-qm", "rewrite")
    git(alice, "push", "-q", "-f", "origin", "main")
    rewritten = remote.remote_head()
    code, _, err = cli(bob, "sync")
    assert code == 1 and "rewritten" in err
    assert remote.remote_head() == rewritten and git(bob, "rev-parse", "HEAD") == head


def test_a_remote_rewound_by_a_force_push_gets_its_commits_back(
        team: tuple[Team, Path]) -> None:
    remote, alice = team
    assert put(alice, "alice", "plan", "v1\n")[0] == 0
    bob = remote.clone("bob")
    lost = remote.remote_head()
    git(alice, "push", "-q", "-f", "origin", "HEAD~1:refs/heads/main")
    assert cli(bob, "sync")[0] == 0  # nothing rewritten: bob's push puts them back
    assert remote.remote_head() == lost


def test_not_a_git_work_tree(tmp_path: Path) -> None:
    Record.init(tmp_path / "plain")
    code, _, err = cli(tmp_path / "plain", "sync")
    assert code == 2 and "not in a git work tree" in err and "docs/sync.md" in err


def test_a_record_inside_a_code_repository_with_changes_outside_it(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "served")
    code_repo = tmp_path / "code"
    git(tmp_path, "clone", "-q", str(remote), str(code_repo))
    (code_repo / "app.py").write_text("print(1)\n")
    Record.init(code_repo / "record")
    git(code_repo, "add", "app.py")
    git(code_repo, "commit", "-qm", "code")
    git(code_repo, "push", "-q", "origin", "main")
    (code_repo / "app.py").write_text("print(2)\n")
    code, _, err = cli(code_repo / "record", "sync")
    assert code == 2, err
    assert "app.py" in err and "worktree" in err
    git(code_repo, "checkout", "--", "app.py")
    code, out, err = cli(code_repo / "record", "sync", "--json")
    assert code == 0, err
    assert "atlas.yaml" in json.loads(out)["went_out"]
    assert "record/atlas.yaml" in git(code_repo, "ls-tree", "-r", "--name-only", "HEAD")


def test_a_record_on_its_own_branch_in_a_worktree(tmp_path: Path) -> None:
    """The setup docs/sync.md gives, command for command."""
    remote = bare_remote(tmp_path / "served")
    code_repo = tmp_path / "code"
    git(tmp_path, "clone", "-q", str(remote), str(code_repo))
    (code_repo / "app.py").write_text("print(1)\n")
    git(code_repo, "add", "app.py")
    git(code_repo, "commit", "-qm", "code")
    git(code_repo, "push", "-q", "origin", "main")
    git(code_repo, "worktree", "add", "-q", "--detach", "../record")
    rec = tmp_path / "record"
    git(rec, "switch", "-q", "--orphan", "atlas")
    Record.init(rec)
    Record(rec).update_config(lambda d: {**d, "sync": {"branch": "atlas", "auto": True}})
    accept_sync(rec)
    (code_repo / "app.py").write_text("print(2)\n")  # the code checkout is left alone
    code, _, err = cli(rec, "sync")
    assert code == 0, err
    assert git(tmp_path, "ls-remote", str(remote), "refs/heads/atlas")
    assert (code_repo / "app.py").read_text() == "print(2)\n"
    assert put(rec, "ann", "plan", "on the record's branch\n")[0] == 0
    # Another machine: a clone of the code, and the record's branch as a worktree.
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    git(other, "fetch", "-q", "origin", "atlas")
    git(other, "worktree", "add", "-q", "../other-record", "atlas")
    accept_sync(tmp_path / "other-record")
    code, out, err = cli(tmp_path / "other-record", "get", "plan", "--json", identity="bo")
    assert code == 0, err
    assert json.loads(out)["author"] == "ann"
    assert git(tmp_path, "ls-remote", str(remote), "refs/heads/main").split()[0] == \
        git(code_repo, "rev-parse", "HEAD")  # the code's branch never moved


def test_a_detached_head_is_refused(team: tuple[Team, Path]) -> None:
    _, alice = team
    git(alice, "checkout", "-q", "--detach")
    code, _, err = cli(alice, "sync")
    assert code == 2 and "detached" in err


def test_git_older_than_2_38_is_refused_with_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'git version 2.34.1'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(gitmod, "_checked", {})
    with pytest.raises(BadInput, match=r"git 2\.38 or newer.*is 2\.34"):
        gitmod.check_version()


def test_an_unreachable_remote_stops_a_synced_write_before_it_writes(
        team: tuple[Team, Path]) -> None:
    _, alice = team
    git(alice, "remote", "set-url", "origin", str(alice.parent / "gone.git"))
    code, _, err = put(alice, "alice", "plan", "text\n")
    assert code == 2, err
    assert not (alice / "projects/main/artifacts/plan").exists()
    assert put(alice, "alice", "plan", "text\n", "--no-sync")[0] == 0  # works offline


def test_no_sync_and_sync_per_command(tmp_path: Path) -> None:
    remote, alice = start_team(tmp_path, str(bare_remote(tmp_path / "served")), auto=False)
    before = remote.remote_head()
    assert put(alice, "alice", "plan", "local only\n")[0] == 0
    assert remote.remote_head() == before  # auto is off: the write stays here
    assert put(alice, "alice", "plan", "pushed\n", "--sync")[0] == 0
    assert "projects/main/artifacts/plan/plan.v0002.md" in remote_paths(remote)


def test_reads_fetch_only_when_the_last_fetch_is_old(tmp_path: Path) -> None:
    remote, alice = start_team(tmp_path, str(bare_remote(tmp_path / "served")),
                               fetch_every="1h")
    bob = remote.clone("bob")
    assert cli(bob, "ls")[0] == 0  # never fetched: this read fetches
    assert put(alice, "alice", "plan", "new\n")[0] == 0
    code, out, _ = cli(bob, "ls", "--json")
    assert json.loads(out)["topics"] == []  # fetched a moment ago: not again
    assert cli(bob, "sync")[0] == 0
    code, out, _ = cli(bob, "ls", "--json")
    assert [t["name"] for t in json.loads(out)["topics"]] == ["plan"]


def test_search_fetches_first_like_every_read(team: tuple[Team, Path]) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    assert put(alice, "alice", "plan", "the heron nests upstream\n")[0] == 0
    code, out, err = cli(bob, "search", "heron", "--json", identity="bob")
    assert code == 0, err
    assert [r["name"] for r in json.loads(out)["results"]] == ["plan"]


def test_a_read_that_cannot_fetch_warns_and_reads(team: tuple[Team, Path]) -> None:
    _, alice = team
    assert put(alice, "alice", "plan", "text\n")[0] == 0
    git(alice, "remote", "set-url", "origin", str(alice.parent / "gone.git"))
    code, out, err = cli(alice, "get", "plan", identity="alice")
    assert code == 0 and "text" in out
    assert "could not sync before reading" in err


def test_drafts_and_sync_state_never_go_through_a_symlink(team: tuple[Team, Path]) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    assert put(alice, "alice", "plan", "alice's\n")[0] == 0
    assert put(bob, "bob", "plan", "bob's\n", "--no-sync")[0] == 0
    elsewhere = bob.parent / "elsewhere"
    elsewhere.mkdir()
    (bob / layout.DRAFTS).symlink_to(elsewhere)
    code, _, err = cli(bob, "sync")
    assert code == 2 and "symlink" in err
    assert list(elsewhere.iterdir()) == []


def test_git_locks_left_by_a_killed_sync_are_cleared(team: tuple[Team, Path]) -> None:
    remote, alice = team
    assert put(alice, "alice", "plan", "v1\n", "--no-sync")[0] == 0
    # What a sync killed while git held its index lock leaves behind: our marker, and
    # git's lock, made after the marker.
    marker = alice / layout.CACHE / "sync" / "running"
    marker.write_text("12345\n")
    (alice / ".git" / "index.lock").write_text("")
    code, out, err = cli(alice, "sync", "--json")
    assert code == 0, err
    assert json.loads(out)["recovered"] == ["index.lock"]
    assert "projects/main/artifacts/plan/plan.v0001.md" in remote_paths(remote)


def test_git_locks_are_cleared_after_several_syncs_died_in_a_row(
        team: tuple[Team, Path]) -> None:
    remote, alice = team
    assert put(alice, "alice", "plan", "v1\n", "--no-sync")[0] == 0
    marker = alice / layout.CACHE / "sync" / "running"
    marker.write_text("12345\n")
    os.utime(marker, (time.time() - 60, time.time() - 60))  # the first dead sync began
    (alice / ".git" / "index.lock").write_text("")  # ... and died holding git's lock
    os.utime(alice / ".git" / "index.lock", (time.time() - 50, time.time() - 50))
    # A second sync takes the checkout's lock and dies before it cleans up.
    died = subprocess.run([sys.executable, "-c", (
        "import os, sys\nfrom atlas_files.storage.record import Record\n"
        "from atlas_files.sync.state import Local\n"
        "with Local(Record(sys.argv[1])).session(10):\n    os._exit(9)\n"), str(alice)],
        check=False)
    assert died.returncode == 9
    code, out, err = cli(alice, "sync", "--json")
    assert code == 0, err
    assert "index.lock" in json.loads(out)["recovered"]
    assert "projects/main/artifacts/plan/plan.v0001.md" in remote_paths(remote)


def test_a_git_lock_older_than_the_sync_is_someone_elses(team: tuple[Team, Path]) -> None:
    _, alice = team
    lock = alice / ".git" / "index.lock"
    lock.write_text("")
    os.utime(lock, (1_000_000, 1_000_000))
    (alice / layout.CACHE / "sync" / "running").write_text("12345\n")
    assert put(alice, "alice", "plan", "v1\n", "--no-sync")[0] == 0
    code, _, err = cli(alice, "sync")
    assert code == 2 and "index.lock" in err  # git's own words; atlas removed nothing


class Killed(BaseException):
    pass


def kill_sync_mid_move(clone: Path, who: str, monkeypatch: pytest.MonkeyPatch,
                       cut: Callable[[bytes], bytes]) -> None:
    """A sync of ``clone`` killed while moving its work tree: the journal is written and
    plan v1 is in place as ``cut`` leaves its new bytes, then the kill."""

    def killed_mid_move(self: Engine, old: str, new: str) -> None:
        self.local.begin_move({"branch": self.local_ref, "old": old, "new": new})
        path = "projects/main/artifacts/plan/plan.v0001.md"
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        (clone / path).write_bytes(cut(repo.blob_bytes(self.git, new, path)))
        raise Killed

    with monkeypatch.context() as m:
        m.setattr(Engine, "_move", killed_mid_move)
        with pytest.raises(Killed):
            run.sync(Record(clone), who)


def test_a_move_cut_short_is_finished_by_the_next_sync(
        team: tuple[Team, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    assert put(alice, "alice", "plan", "v1\n")[0] == 0
    assert put(alice, "alice", "notes", "n1\n")[0] == 0
    assert put(bob, "bob", "other", "o1\n", "--no-sync")[0] == 0
    # One file of the move is whole: then the kill.
    kill_sync_mid_move(bob, "bob", monkeypatch, lambda whole: whole)
    code, out, err = cli(bob, "sync", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["recovered"] and report["head"] == remote.remote_head()
    assert git(bob, "status", "--porcelain") == ""
    landed = remote_paths(remote)
    for topic in ("plan", "notes", "other"):
        assert f"projects/main/artifacts/{topic}/{topic}.v0001.md" in landed


@pytest.mark.parametrize("torn", ["empty", "half"])
def test_a_file_git_was_writing_at_the_kill_is_finished_not_kept_as_a_draft(
        team: tuple[Team, Path], monkeypatch: pytest.MonkeyPatch, torn: str) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    assert put(alice, "alice", "plan", "the first plan, long enough to be cut in two\n")[0] == 0
    # git writes a checked-out file in place: a kill leaves a prefix of its bytes.
    kill_sync_mid_move(bob, "bob", monkeypatch,
                       lambda whole: b"" if torn == "empty" else whole[: len(whole) // 2])
    code, out, err = cli(bob, "sync", "--json")
    assert code == 0, err
    assert json.loads(out)["drafts"] == []
    assert git(bob, "status", "--porcelain") == ""
    code, out, _ = cli(bob, "get", "plan", "--json", identity="bob")
    assert json.loads(out)["body"] == "the first plan, long enough to be cut in two\n"


def test_sync_settings_in_atlas_yaml(tmp_path: Path) -> None:
    path = tmp_path / "atlas.yaml"
    base = {"projects": ["main"]}
    cfg = configmod.from_mapping({**base, "sync": {"remote": "up", "branch": "atlas/rec",
                                                   "auto": True, "fetch_every": "2m"}}, path)
    assert cfg.sync == configmod.SyncConfig("up", "atlas/rec", True, 120.0)
    assert configmod.from_mapping(base, path).sync is None
    for bad in ({"remote": "-upload-pack=evil"}, {"branch": "a..b"}, {"auto": "yes"},
                {"fetch_every": "soon"}, {"remotes": "x"}, "origin"):
        with pytest.raises(DamagedFile):
            configmod.from_mapping({**base, "sync": bad}, path)


def test_atlas_check_accepts_the_sync_settings(team: tuple[Team, Path]) -> None:
    _, alice = team
    code, out, _ = cli(alice, "check", "--json")
    assert code == 0, out
    config = alice / "atlas.yaml"
    config.write_text(config.read_text().replace("  auto: true", "  auto: true\n  extra: 1"))
    code, _, _ = cli(alice, "check", "--json")
    assert code != 0


def test_versions_that_arrive_by_sync_are_read_only(team: tuple[Team, Path]) -> None:
    """A version written here is 0444 so an editor warns before an edit in place; one
    that a sync checks out (git writes 0644), or that `git clone` checked out, is too."""
    remote, alice = team
    assert put(alice, "alice", "plan", "first plan\n")[0] == 0
    bob = remote.clone("bob")
    assert put(alice, "alice", "plan", "second plan\n")[0] == 0
    code, _, err = cli(bob, "sync", identity="bob")
    assert code == 0, err
    folder = bob / "projects" / "main" / "artifacts" / "plan"
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()
             if p.name.startswith("plan.v")}
    assert modes == {"plan.v0001.md": 0o444, "plan.v0002.md": 0o444}
    assert stat.S_IMODE((bob / "atlas.yaml").stat().st_mode) & 0o200  # not a version


def test_a_link_a_first_clone_checked_out_is_refused_and_never_followed(
        team: tuple[Team, Path], tmp_path: Path) -> None:
    """A teammate commits `.atlas-cache/sync/git-version -> ~/.bashrc` and
    `journal.json -> /dev/zero` (`git add -f`) and pushes: a newcomer's first sync wrote
    git's version line into the file outside, and ate memory until it died. Now nothing
    outside changes, and the sync refuses the checkout, naming both links (exit 1)."""
    remote, alice = team
    outside = tmp_path / "home-of-bob" / ".bashrc"
    outside.parent.mkdir()
    outside.write_text("export PATH=$HOME/bin:$PATH\n")
    before = (outside.read_bytes(), outside.stat().st_mtime_ns)
    sync_folder = alice / ".atlas-cache" / "sync"
    for name, target in (("git-version", str(outside)), ("journal.json", "/dev/zero")):
        (sync_folder / name).unlink(missing_ok=True)
        (sync_folder / name).symlink_to(target)
        git(alice, "add", "-f", f".atlas-cache/sync/{name}")
    git(alice, "commit", "-q", "-m", "links")
    git(alice, "push", "-q", "origin", "main")
    bob = remote.clone("bob")
    code, _, err = run_limited(bob, "sync")
    assert code == 1, err
    assert ".atlas-cache/sync/git-version (a symbolic link)" in err
    assert "journal.json (a symbolic link)" in err and "Traceback" not in err
    assert (outside.read_bytes(), outside.stat().st_mtime_ns) == before
    # Replaced, never followed: the caches atlas kept are plain files of its own now.
    assert not (bob / ".atlas-cache" / "sync" / "git-version").is_symlink()


def run_limited(root: Path, *args: str) -> tuple[int, str, str]:
    """`atlas ARGS` in a child under a 1 GiB address-space cap (a journal read through a
    link to /dev/zero would take all it is given)."""
    import resource

    from support.runner import atlas_command, child_env

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    proc = subprocess.run(atlas_command("--record", str(root), "--as", "bob", *args),
                          capture_output=True, text=True, timeout=120, env=child_env(),
                          stdin=subprocess.DEVNULL, preexec_fn=cap, check=False)
    return proc.returncode, proc.stdout, proc.stderr
