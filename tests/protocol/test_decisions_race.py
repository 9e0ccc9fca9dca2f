"""Many writers at once, and git branches merged later: no entry collides, none is lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from support.git import git, git_env
from support.runner import child_env, run_atlas

from atlas_files.facts import layout
from atlas_files.protocol import artifacts, corrections, decisions
from atlas_files.storage.fsio import TEMP_PREFIX
from atlas_files.storage.record import Record

WRITER = r"""
import os, sys, time
from atlas_files.storage.record import Record
from atlas_files.protocol import decisions
root, who, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
record = Record(root)
while not os.path.exists(go):
    time.sleep(0.001)
for i in range(count):
    d = decisions.decide(record, topic=f"race {who}", recommended=f"r{i}", chosen=f"c{i}",
                         relation="agreed", why=f"{who} {i}", author=who)
    print(d.id)
"""


def test_eight_processes_times_one_hundred_decisions_keep_all_800(record: Record) -> None:
    go = record.root.parent / "go"
    env = child_env()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(record.root), f"w{n}", "100", str(go)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )
        for n in range(8)
    ]
    time.sleep(0.5)  # let every writer reach the start line
    go.touch()
    printed: list[str] = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
        printed += out.decode().split()

    folder = record.root / "projects" / "web" / "decisions"
    names = os.listdir(folder)
    assert not [n for n in names if n.startswith(TEMP_PREFIX)]
    files = [n for n in names if layout.is_entry_file(n)]
    assert len(printed) == 800 and len(set(printed)) == 800
    assert len(files) == 800 and {n[:-3] for n in files} == set(printed)

    log = decisions.list_decisions(record)
    assert len(log) == 800
    assert {(d.author, d.why) for d in log} == {
        (f"w{n}", f"w{n} {i}") for n in range(8) for i in range(100)
    }
    assert all(d.digest_ok for d in log)
    # Each writer's own decisions stay in the order it wrote them.
    for n in range(8):
        mine = [int(d.why.split()[1]) for d in log if d.author == f"w{n}"]
        assert mine == sorted(mine)


def test_two_clones_decide_on_their_own_branches_and_merge_without_conflict(
    tmp_path: Path,
) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    env = git_env()
    git(origin, "init", "-q", "-b", "main", env=env)
    rec = Record.init(origin / "rec", ["web"])
    artifacts.put(rec, "plan", "the plan\n", author="ann", project="web")
    git(origin, "add", "-A", env=env)
    git(origin, "commit", "-q", "-m", "a record with a plan", env=env)

    clones = {}
    for side in ("a", "b"):
        git(tmp_path, "clone", "-q", str(origin), side, env=env)
        clones[side] = tmp_path / side
        git(clones[side], "checkout", "-q", "-b", f"branch-{side}", env=env)

    written: dict[str, list[str]] = {"a": [], "b": []}
    for round_ in range(3):
        for side, who in (("a", "ann"), ("b", "bob")):
            r = run_atlas("decide", "--topic", f"topic {round_}", "--recommended", "x",
                          "--chosen", f"{side} {round_}", "--relation", "disagreed",
                          "--why", f"{who} decided on branch {side}", "--link", "plan@v1",
                          "--json", record=clones[side] / "rec", identity=who)
            assert r.returncode == 0, r.stderr
            written[side].append(r.json()["id"])
    fix = run_atlas("correct", written["b"][0], "--what", "my first one was a typo",
                    "--json", record=clones["b"] / "rec", identity="bob")
    assert fix.returncode == 0, fix.stderr
    for side in ("a", "b"):
        git(clones[side], "add", "-A", env=env)
        git(clones[side], "commit", "-q", "-m", f"decisions on {side}", env=env)

    git(clones["b"], "push", "-q", "origin", "branch-b", env=env)
    git(clones["a"], "fetch", "-q", "origin", "branch-b", env=env)
    merge = git(clones["a"], "merge", "--no-edit", "origin/branch-b", env=env)
    assert "CONFLICT" not in merge
    assert git(clones["a"], "status", "--porcelain", env=env) == ""

    merged = Record(clones["a"] / "rec")
    log = decisions.list_decisions(merged, "web")
    assert [d.id for d in log] == sorted(written["a"] + written["b"])
    assert all(d.digest_ok for d in log)
    by_id = {d.id: d for d in log}
    assert [(c.author, c.text) for c in by_id[written["b"][0]].corrected_by] == [
        ("bob", "my first one was a typo")]
    assert len(corrections.list_corrections(merged, "web")) == 1
    # And the merged record keeps working: a new decision lands next to the rest.
    r = run_atlas("decide", "--topic", "after the merge", "--recommended", "x", "--chosen",
                  "x", "--relation", "agreed", "--why", "both branches are in",
                  record=merged.root, identity="ann")
    assert r.returncode == 0, r.stderr
    assert len(decisions.list_decisions(merged, "web")) == 7


RETRACTOR = r"""
import os, sys, time
from atlas_files.storage.record import Record
from atlas_files.protocol import corrections
from atlas_files.facts.errors import BadInput
root, who, go = sys.argv[1], sys.argv[2], sys.argv[3]
record = Record(root)
while not os.path.exists(go):
    time.sleep(0.001)
try:
    print("landed", corrections.retract(record, "plan@v1", why=f"{who} says no",
                                        author=who).id)
except BadInput as exc:
    print("refused", exc.message)
"""


def test_eight_concurrent_retractions_every_one_that_landed_is_listed(record: Record) -> None:
    """"Already retracted" is checked by reading first, so several of 8 writers at once can
    land. None is lost or hidden: the marks list every retraction that landed, oldest
    first, and show the earliest as the retraction; the rest were refused cleanly."""
    artifacts.put(record, "plan", "p\n", author="ann")
    go = record.root.parent / "go"
    env = child_env()
    procs = [subprocess.Popen([sys.executable, "-c", RETRACTOR, str(record.root), f"w{n}",
                               str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, text=True)
             for n in range(8)]
    time.sleep(0.5)
    go.touch()
    landed, refused = [], 0
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        verdict, _, detail = out.strip().partition(" ")
        if verdict == "landed":
            landed.append(detail)
        else:
            assert verdict == "refused" and "already retracted" in detail, out
            refused += 1
    assert landed and len(landed) + refused == 8
    listed = [c.id for c in corrections.list_corrections(record) if c.kind == "retraction"]
    assert sorted(landed) == listed  # every write that said "landed" is there, no other
    marks = corrections.marks_json(record, "web", "artifact", "plan", 1)
    assert [m["id"] for m in marks["retractions"]] == listed
    assert marks["retracted"]["id"] == listed[0]
