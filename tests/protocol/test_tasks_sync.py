"""Tasks across four clones of one git remote with `sync: auto`: the claim is a lease, so
the push is its compare-and-set across machines. Each clone's command runs in its own
process, all started together."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.gitteam import bare_remote, cli, start_team
from support.runner import atlas_command, child_env

from atlas_files.protocol import tasks
from atlas_files.protocol.leases import store
from atlas_files.storage.record import Record

pytestmark = pytest.mark.usefixtures("isolated_git")

WHO = ("ann", "bob", "cid", "dee")


def _at_once(clones: dict[str, Path], *args: str) -> dict[str, subprocess.CompletedProcess[str]]:
    procs = {who: subprocess.Popen(atlas_command("--record", str(root), "--as", who, *args),
                                   env=child_env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
             for who, root in clones.items()}
    out = {}
    for who, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        out[who] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return out


def _claims_on(root: Path, task_id: str) -> list[str]:
    """The holder of each claim generation of the task's lease, as the remote has it."""
    record = Record(root)
    resource = tasks.lease_resource(task_id)
    where = store.folder(record, resource)
    return [g.holder or "" for g in (store.read(where, resource, name)
                                     for _, name in store.generations(where))
            if g.action == "claim"]


def _team(tmp_path: Path, n_tasks: int) -> tuple[object, dict[str, Path], list[str]]:
    team, first = start_team(tmp_path, str(bare_remote(tmp_path / "served")))
    ids = []
    for n in range(n_tasks):
        r = cli(first, "task", "add", f"job {n}", "--json", identity="alice")
        assert r.returncode == 0, r.stderr
        ids.append(r.json()["id"])
    clones = {who: team.clone(who) for who in WHO}
    return team, clones, ids


def test_four_clones_claim_one_task_one_wins(tmp_path: Path) -> None:
    team, clones, (task_id,) = _team(tmp_path, 1)
    results = _at_once(clones, "task", "claim", task_id, "--for", "1h")
    codes = {who: r.returncode for who, r in results.items()}
    winners = [who for who, code in codes.items() if code == 0]
    assert len(winners) == 1, {w: (r.returncode, r.stderr) for w, r in results.items()}
    assert sorted(codes.values()) == [0, 4, 4, 4], codes
    landed = team.inspect()  # type: ignore[attr-defined]
    assert _claims_on(landed, task_id) == winners  # 0 double claims on the remote
    for who in WHO:
        assert cli(clones[who], "sync").returncode == 0
        shown = cli(clones[who], "task", "show", task_id, "--json").json()
        assert (shown["state"], shown["holder"]) == ("claimed", winners[0])


def test_four_clones_running_next_take_four_different_tasks(tmp_path: Path) -> None:
    team, clones, ids = _team(tmp_path, 4)
    results = _at_once(clones, "task", "next", "--for", "1h", "--json")
    assert {w: r.returncode for w, r in results.items()} == dict.fromkeys(WHO, 0), \
        {w: r.stderr for w, r in results.items()}
    taken = {who: json.loads(r.stdout)["task"]["id"] for who, r in results.items()}
    assert sorted(taken.values()) == sorted(ids)
    landed = team.inspect()  # type: ignore[attr-defined]
    for who, task_id in taken.items():
        assert _claims_on(landed, task_id) == [who]
