"""The shared remote is someone else's content: nothing that a push to it brings in
decides what runs on a clone, or where the clone's writes go, until a person on that
clone accepts it. Real git throughout: a bare remote, a victim's clone, an attacker's.
(The generated attacks are in test_sync_hostile.py.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.git import git
from support.gitteam import Team, accept_sync, bare_remote, cli
from support.runner import atlas_command, run_atlas

from atlas_files.storage.record import Record

# Git reads no user or system config here, and no ATLAS_* variable leaks in.
pytestmark = pytest.mark.usefixtures("isolated_git")

HOOK = "#!/bin/sh\ntouch '{marker}'\nexit 0\n"
PLAN = "projects/main/artifacts/plan/plan.v0001.md"


def plant_bare_repository(clone: Path, folder: str, marker: Path) -> None:
    """A bare repository as plain files in ``clone``'s record: HEAD, a config that says
    bare, objects/ and refs/heads/ (kept by placeholder files, since git tracks no empty
    folder), and executable hooks that each touch ``marker``-NAME."""
    hub = clone / folder
    for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "hooks"):
        (hub / sub).mkdir(parents=True, exist_ok=True)
        (hub / sub / ".keep").write_text("")
    (hub / "HEAD").write_text("ref: refs/heads/main\n")
    (hub / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = true\n")
    for name in ("pre-receive", "update", "post-receive", "post-update"):
        hook = hub / "hooks" / name
        hook.write_text(HOOK.format(marker=f"{marker}-{name}"))
        hook.chmod(0o755)


def point_sync_at(clone: Path, remote: str) -> None:
    config = clone / "atlas.yaml"
    config.write_text(config.read_text().replace("remote: origin", f"remote: {remote}"))


def push(clone: Path, message: str) -> None:
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", message)
    git(clone, "push", "-q", "origin", "main")


def fired(marker: Path) -> list[str]:
    return sorted(p.name for p in marker.parent.glob(marker.name + "*"))


def put(root: Path, who: str, name: str, text: str, *args: str) -> tuple[int, str, str]:
    body = root.parent / f"{who}-{name}-{abs(hash(text))}.txt"
    body.write_text(text)
    return cli(root, "put", name, "-f", str(body), *args, identity=who)


def push_bare_repository_attack(remote: Team, marker: Path) -> None:
    """Issue 25's attack, as written: a bare repository committed as plain files, and
    atlas.yaml's sync.remote pointed at it, pushed by anyone who can push."""
    mallory = remote.clone("mallory", accept=False)
    plant_bare_repository(mallory, "hub", marker)
    point_sync_at(mallory, "hub")
    push(mallory, "tidy the sync settings")


def test_a_bare_repository_pushed_into_the_record_never_runs_its_hooks(
        team: tuple[Team, Path], tmp_path: Path) -> None:
    remote, _ = team
    victim = remote.clone("victim")
    assert cli(victim, "sync")[0] == 0
    marker = tmp_path / "marker"
    push_bare_repository_attack(remote, marker)
    # The victim's next sync, a synced write, and the sync after it.
    cli(victim, "sync", identity="victim")
    put(victim, "victim", "plan", "a plan\n")
    cli(victim, "sync", identity="victim")
    assert fired(marker) == [], "a hook from the shared remote ran on the victim's clone"


def test_a_bare_repository_pushed_into_the_record_is_refused_and_said(
        team: tuple[Team, Path], tmp_path: Path) -> None:
    remote, _ = team
    victim = remote.clone("victim")
    assert cli(victim, "sync")[0] == 0
    head = git(victim, "rev-parse", "HEAD")
    push_bare_repository_attack(remote, tmp_path / "marker")
    code, out, err = cli(victim, "sync", "--json", identity="victim")
    assert code == 1, err
    assert json.loads(out)["error"]["kind"] == "damaged"
    assert "hub/HEAD (the marker of a git folder)" in err
    assert git(victim, "rev-parse", "HEAD") == head  # nothing of it was integrated
    assert not (victim / "hub").exists()
    code, _, err = put(victim, "victim", "plan", "a plan\n")
    assert code == 1 and "brings in what a record never holds" in err
    assert not (victim / PLAN).exists()  # a synced write stops before it writes
    assert put(victim, "victim", "plan", "a plan\n", "--no-sync")[0] == 0


def test_a_git_folder_that_reached_the_clone_is_never_pushed_to(
        team: tuple[Team, Path], tmp_path: Path) -> None:
    """However the planted repository got here (a `git pull` by hand, a copy), a sync
    pushes only to a remote the clone's own git config defines."""
    remote, _ = team
    victim = remote.clone("victim")
    marker = tmp_path / "marker"
    plant_bare_repository(victim, "hub", marker)  # in the work tree, untracked
    point_sync_at(victim, "hub")
    code, _, err = cli(victim, "sync", "accept", "--yes")
    assert code == 2 and "does not define" in err and "nothing was accepted" in err
    # atlas.yaml says hub; the clone keeps to the remote it accepted, and says so.
    code, _, err = put(victim, "victim", "plan", "a plan\n")
    assert code == 0, err
    assert "remote 'origin' -> 'hub'" in err and "atlas sync accept" in err
    assert PLAN in git(remote.inspect(), "ls-files")
    # Even a block accepted by mistake (here: by the library, past the CLI's check) never
    # makes git take `hub` for a path.
    from atlas_files.sync import accepted

    accepted.accept(Record(victim))
    code, _, err = cli(victim, "sync")
    assert code == 2 and "defines no remote of that name" in err
    code, _, err = put(victim, "victim", "plan", "again\n")
    assert code == 2 and "defines no remote of that name" in err
    assert fired(marker) == []


def test_a_sync_block_from_the_remote_waits_for_a_person(
        team: tuple[Team, Path], tmp_path: Path) -> None:
    """Another remote the victim's clone does define: the change is said and waits; the
    writes keep going where they went."""
    remote, _ = team
    victim = remote.clone("victim")
    backup = bare_remote(tmp_path / "backup")
    git(victim, "remote", "add", "backup", str(backup))
    mallory = remote.clone("mallory", accept=False)
    point_sync_at(mallory, "backup")
    push(mallory, "send the record to the backup")

    code, out, err = cli(victim, "sync", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["remote"] == "origin"
    assert report["config_changes"] == [{
        "setting": "sync", "change": "remote 'origin' -> 'backup'", "in_effect": False,
        "waits_for": "atlas sync accept"}]
    assert report["pending"]["accepted"]["remote"] == "origin"
    assert report["pending"]["in_atlas_yaml"]["remote"] == "backup"
    assert "differs from the one accepted on this clone" in err
    code, _, err = put(victim, "victim", "plan", "stays with origin\n")
    assert code == 0 and "atlas sync accept" in err
    assert PLAN in git(remote.inspect(), "ls-files")
    assert git(victim, "ls-remote", str(backup)) == ""  # nothing went to the backup
    # A person reviews it and accepts: from then on the writes go there.
    code, out, _ = cli(victim, "sync", "accept", "--json", "--yes")
    doc = json.loads(out)
    assert code == 0 and doc["accepted"] and doc["remote_url"] == str(backup)
    assert doc["differences"] == ["remote 'origin' -> 'backup'"]
    code, _, err = put(victim, "victim", "plan", "now to the backup\n")
    assert code == 0 and "warning" not in err
    assert "refs/heads/main" in git(victim, "ls-remote", str(backup))


def test_a_clone_that_never_accepted_its_sync_block_does_not_sync(
        team: tuple[Team, Path]) -> None:
    remote, alice = team
    bob = remote.clone("bob", accept=False)
    code, out, err = cli(bob, "sync", "--json")
    assert code == 2 and json.loads(out)["error"]["kind"] == "environment"
    assert "has not been accepted on this clone" in err and "atlas sync accept" in err
    before = remote.remote_head()
    code, _, err = put(bob, "bob", "plan", "here only\n")
    assert code == 0 and "has not been accepted" in err
    assert remote.remote_head() == before
    code, _, err = put(bob, "bob", "notes", "asked to sync\n", "--sync")
    assert code == 2 and not (bob / "projects/main/artifacts/notes").exists()
    # Accepting shows the settings and asks; no answer (stdin at its end) is a no.
    asked = run_atlas("sync", "accept", record=bob, input="")
    assert asked.returncode == 2 and "were not accepted" in asked.stderr
    assert "remote origin, branch main, auto: every write fetches first" in asked.stdout
    assert "accepted on this clone until now: nothing" in asked.stdout
    assert f"the remote origin is, in this clone's git config: {remote.url}" in asked.stdout
    accept_sync(bob)
    code, out, _ = cli(bob, "sync", "accept")
    assert code == 0 and "already accepted" in out
    code, _, err = cli(bob, "sync")
    assert code == 0, err
    assert PLAN in git(remote.inspect(), "ls-files")


def test_a_lease_claim_that_would_stay_on_an_unaccepted_clone_is_refused(
        team: tuple[Team, Path]) -> None:
    # Alice holds gpu0 on her (accepted) clone. Bob's clone never accepted its sync:
    # block, so his claim would be held on his clone only: it used to say "claimed gpu0:
    # held by bob", exit 0, while alice held it.
    remote, alice = team
    bob = remote.clone("bob", accept=False)
    code, _, err = cli(alice, "lease", "claim", "gpu0", "--for", "1h", "--why", "train",
                       identity="alice")
    assert code == 0, err
    code, out, err = cli(bob, "lease", "claim", "gpu0", "--for", "1h", "--why", "eval",
                         "--json", identity="bob")
    assert code == 2, err
    assert json.loads(out)["error"]["kind"] == "environment"  # this clone's setup, not the call
    assert "nothing done" in err and "on this clone only" in err and "--no-sync" in err
    assert "atlas sync accept" in err
    code, out, _ = cli(bob, "lease", "show", "gpu0", "--json", identity="bob")
    assert json.loads(out)["holder"] != "bob"
    # Asked for knowingly, it is held here.
    code, out, err = cli(bob, "lease", "claim", "gpu0", "--for", "1h", "--why", "eval",
                         "--no-sync", "--json", identity="bob")
    assert code == 0 and json.loads(out)["holder"] == "bob", err
    # Renewing it, or breaking another's, would be as unseen: refused alike.
    code, _, err = cli(bob, "lease", "renew", "gpu0", "--for", "2h", identity="bob")
    assert code == 2 and "`lease renew gpu0` would hold it on this clone only" in err
    code, _, err = cli(bob, "lease", "break", "gpu0", "--why", "gone", identity="cy")
    assert code == 2 and "`lease break gpu0` would hold it on this clone only" in err


def test_the_acceptance_is_the_persons_own(team: tuple[Team, Path],
                                           tmp_path: Path) -> None:
    """Kept outside the record, per record: a second person (another HOME) on the same
    clone has accepted nothing, and a file others can write is refused."""
    from atlas_files.sync import accepted

    remote, _ = team
    bob = remote.clone("bob")
    store = accepted.store_path()
    assert store.is_file() and not str(store).startswith(str(bob))
    other_home = tmp_path / "other-home"
    env = {**os.environ, "HOME": str(other_home), "XDG_CONFIG_HOME": str(other_home / "c")}
    done = subprocess.run(atlas_command("--record", str(bob), "sync"),
                          env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "has not been accepted" in done.stderr
    store.chmod(0o666)
    code, _, err = cli(bob, "sync")
    assert code == 2 and "can be written by other users" in err


def test_what_only_shapes_the_record_takes_effect_and_is_said(
        team: tuple[Team, Path]) -> None:
    remote, _ = team
    victim = remote.clone("victim")
    mallory = remote.clone("mallory", accept=False)
    config = mallory / "atlas.yaml"
    text = config.read_text().replace("- main\n", "- main\n- ml\n", 1)
    text = text.replace("body_limit: 1048576", "body_limit: 2048")
    text = text.replace("machines: {}", "machines:\n  gpubox:\n    probe: ssh gpubox x")
    config.write_text(text)
    push(mallory, "a new project, a smaller limit, a machine")
    code, out, err = cli(victim, "sync", "--json")
    assert code == 0, err
    changes = {c["setting"]: c for c in json.loads(out)["config_changes"]}
    assert changes["projects"]["in_effect"] and changes["body_limit"]["in_effect"]
    assert changes["body_limit"]["change"] == "1048576 -> 2048"
    assert changes["machines.gpubox"] == {
        "setting": "machines.gpubox", "change": "probe command (unset) -> 'ssh gpubox x'",
        "in_effect": False, "waits_for": "atlas telemetry approve gpubox"}
    assert json.loads(out)["pending"] is None
    code, _, err = cli(victim, "-p", "ml", "put", "x", "-f", "-", identity="victim")
    assert code != 3  # the project exists now (the body is empty: refused as such)
    code, _, err = put(victim, "victim", "big", "x" * 4096)
    assert code == 2 and "body_limit" in err


def test_removing_the_sync_block_stops_auto_but_keeps_the_accepted_remote(
        team: tuple[Team, Path], tmp_path: Path) -> None:
    remote, _ = team
    victim = remote.clone("victim")
    elsewhere = bare_remote(tmp_path / "elsewhere")
    git(victim, "remote", "rename", "origin", "team")
    git(victim, "remote", "add", "origin", str(elsewhere))  # the default name, another place
    Record(victim).update_config(lambda d: {**d, "sync": {**d["sync"], "remote": "team"}})
    git(victim, "commit", "-qam", "our remote is called team here")
    accept_sync(victim)
    assert cli(victim, "sync")[0] == 0
    mallory = remote.clone("mallory", accept=False)
    Record(mallory).update_config(lambda d: {k: v for k, v in d.items() if k != "sync"})
    push(mallory, "no more sync")
    code, out, err = cli(victim, "sync", "--json")
    assert code == 0, err
    assert json.loads(out)["remote"] == "team"  # not the default origin
    assert json.loads(out)["pending"]["in_atlas_yaml"] is None
    assert "the sync: block is removed" in err
    before = remote.remote_head()
    assert put(victim, "victim", "plan", "stays here\n")[0] == 0
    assert remote.remote_head() == before  # auto is off now: nothing was sent
    assert git(victim, "ls-remote", str(elsewhere)) == ""


@pytest.mark.parametrize("planted", ["symlink", "gitattributes", "submodule", "dotgit",
                                     "dotdot", "capitals", "receipt", "huge-config",
                                     "broken-config"])
def test_the_remote_cannot_bring_in(team: tuple[Team, Path], planted: str) -> None:
    remote, _ = team
    victim = remote.clone("victim")
    head = git(victim, "rev-parse", "HEAD")
    mallory = remote.clone("mallory", accept=False)
    named = plant(mallory, planted)
    code, out, err = cli(victim, "sync", "--json")
    assert code == 1, err
    assert json.loads(out)["error"]["kind"] == "damaged"
    assert named in err
    assert git(victim, "rev-parse", "HEAD") == head
    assert git(victim, "status", "--porcelain") == ""


# A hostile file pushed as it is: (path, text, words the refusal must hold).
PLAIN_PLANTS = {
    "gitattributes": (".gitattributes", "* filter=lfs diff=lfs merge=lfs\n",
                      ".gitattributes (git attributes"),
    "capitals": ("Notes.md", "x\n", "Notes.md (a name with capitals"),
    "receipt": ("receipts/victim.json", "{}\n", "receipts/victim.json (one machine's own"),
}


def plant(clone: Path, what: str) -> str:
    """Push one hostile thing from ``clone``; returns the words the refusal must hold."""
    if what in PLAIN_PLANTS:
        path, text, said = PLAIN_PLANTS[what]
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        (clone / path).write_text(text)
        git(clone, "add", "-f", path)  # receipts/ is in the record's .gitignore
    elif what == "symlink":
        (clone / "projects/main/artifacts/plan").mkdir(parents=True)
        os.symlink("/etc", clone / PLAN)
        git(clone, "add", PLAN)
        said = f"{PLAN} (a symbolic link)"
    elif what == "submodule":
        (clone / ".gitmodules").write_text(
            '[submodule "x"]\n\tpath = x\n\turl = http://127.0.0.1:9/x.git\n')
        git(clone, "add", ".gitmodules")
        sha = git(clone, "rev-parse", "HEAD")
        git(clone, "update-index", "--add", "--cacheinfo", f"160000,{sha},x")
        said = "x (a submodule)"
    elif what in ("dotgit", "dotdot"):
        # Names git's own commands refuse to make: a tree written by hand, pushed as is.
        name = ".GIT" if what == "dotgit" else ".."
        sub = _mktree(clone, [f"100644 blob {_blob(clone, b'x')}\tconfig"])
        root = git(clone, "ls-tree", "HEAD").splitlines()
        tree = _mktree(clone, [*root, f"040000 tree {sub}\t{name}"])
        commit = git(clone, "commit-tree", tree, "-p", "HEAD", "-m", what)
        git(clone, "push", "-q", "origin", f"{commit}:refs/heads/main")
        return f"{name}/config"
    else:
        config = clone / "atlas.yaml"
        text = config.read_text()
        if what == "huge-config":
            config.write_text(text + "# " + "x" * (1 << 21) + "\n")
            said = "atlas.yaml (2097"
        else:
            config.write_text(text.replace("lease_cap: 4h", "lease_cap: [nonsense"))
            said = "an atlas.yaml that atlas cannot read"
        git(clone, "add", "atlas.yaml")
    git(clone, "commit", "-qm", what)
    git(clone, "push", "-q", "origin", "main")
    return said


def _blob(clone: Path, data: bytes) -> str:
    return git(clone, "hash-object", "-w", "--stdin", input=data)


def _mktree(clone: Path, entries: list[str]) -> str:
    return git(clone, "mktree", input="\n".join(entries) + "\n")


def test_drivers_of_the_persons_own_git_config_never_run_for_the_remote(
        team: tuple[Team, Path], tmp_path: Path) -> None:
    """A person whose git config defines filter and merge programs (as git-lfs does): a
    .gitattributes from the remote that names them is refused, so none of them runs."""
    remote, _ = team
    victim = remote.clone("victim")
    mallory = remote.clone("mallory", accept=False)
    (mallory / ".gitattributes").write_text("* filter=evil merge=evil diff=evil\n")
    (mallory / "projects/main/artifacts/plan").mkdir(parents=True)
    (mallory / PLAN).write_text("theirs\n")
    push(mallory, "attributes for everything")
    marker = tmp_path / "driver"
    touch = f"sh -c 'touch {marker}-$0' "
    with open(os.environ["GIT_CONFIG_GLOBAL"], "a") as fh:  # the victim's, from now on
        fh.write(f"[filter \"evil\"]\n\tsmudge = {touch}smudge\n\tclean = {touch}clean\n"
                 f"[merge \"evil\"]\n\tdriver = {touch}merge\n[diff \"evil\"]\n"
                 f"\tcommand = {touch}diff\n")
    assert put(victim, "victim", "plan", "mine\n", "--no-sync")[0] == 0  # a collision
    codes = [cli(victim, "sync")[0], put(victim, "victim", "other", "x\n")[0],
             cli(victim, "check")[0]]
    assert fired(marker) == [], "a program named by the remote's .gitattributes ran"
    assert codes == [1, 1, 0]


def test_atlas_check_flags_a_changed_sync_block(team: tuple[Team, Path]) -> None:
    _, alice = team
    point_sync_at(alice, "backup")
    code, out, _ = cli(alice, "check", "--json")
    findings = [f for f in json.loads(out)["findings"] if f["code"] == "ATL051"]
    assert code == 1 and len(findings) == 1
    assert "remote 'origin' -> 'backup'" in findings[0]["message"]
    assert findings[0]["line"] > 1
    git(alice, "add", "atlas.yaml")
    staged = run_atlas("check", "--staged", "--json", cwd=alice)
    assert staged.returncode == 1, staged.stderr
    assert [f["code"] for f in staged.json()["findings"]] == ["ATL051"]
    assert "this commit changes where the record syncs" in staged.stdout
    git(alice, "commit", "-qm", "backup")
    code, out, _ = cli(alice, "check", "--json")
    assert not [f for f in json.loads(out)["findings"] if f["code"] == "ATL051"]


def test_a_gitignore_from_the_remote_cannot_keep_a_synced_write_here(
        team: tuple[Team, Path]) -> None:
    remote, _ = team
    victim = remote.clone("victim")
    mallory = remote.clone("mallory", accept=False)
    (mallory / ".gitignore").write_text("projects/\nleases/\n")
    push(mallory, "ignore the record")
    code, _, err = put(victim, "victim", "plan", "still travels\n")
    assert code == 0 and "not on origin/main yet" not in err, err
    assert PLAN in git(remote.inspect(), "ls-files")
