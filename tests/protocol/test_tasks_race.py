"""Tasks under real OS processes racing through the CLI: 16 claims of one task, 16 `task
next` on 16 ready tasks, and finishes racing claims. Every double claim is counted."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

from support.runner import run_atlas

from atlas_files.protocol import leases, tasks
from atlas_files.protocol.leases import store
from atlas_files.storage.record import Record

RACERS = 16


def _racer(root: str, who: str, barrier: Any, out: str, args: list[str]) -> None:
    """Wait for the others, then run `atlas ARGS --json` as ``who``; keep what it said."""
    barrier.wait()
    r = run_atlas(*args, "--json", record=Path(root), identity=who)
    Path(out).write_text(json.dumps({"code": r.returncode, "stdout": r.stdout,
                                     "stderr": r.stderr}))


def _race(record: Record, tmp_path: Path, args: list[str]) -> list[dict[str, Any]]:
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(RACERS, timeout=120)
    outs = [tmp_path / f"racer{i:02d}.json" for i in range(RACERS)]
    procs = [ctx.Process(target=_racer, args=(str(record.root), f"racer{i:02d}", barrier,
                                              str(out), args))
             for i, out in enumerate(outs)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    for p in procs:
        if p.exitcode is None and p.pid is not None:  # pragma: no cover - a hung racer
            p.kill()
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return [{**json.loads(out.read_text()), "who": f"racer{i:02d}"}
            for i, out in enumerate(outs)]


def _claims(record: Record, task_id: str) -> list[str]:
    """Who each claim generation of the task's lease names: one per holding."""
    resource = tasks.lease_resource(task_id)
    where = store.folder(record, resource)
    gens = [store.read(where, resource, name) for _, name in store.generations(where)]
    return [g.holder or "" for g in gens if g.action == "claim"]


def test_16_processes_claim_one_task_one_wins_15_exit_4(record: Record,
                                                        tmp_path: Path) -> None:
    task_id = tasks.add(record, "web", title="the one job", author="alice").id
    results = _race(record, tmp_path, ["task", "claim", task_id[:12], "--for", "1h"])
    winners = [r for r in results if r["code"] == 0]
    held = [r for r in results if r["code"] == 4]
    assert len(winners) == 1, results
    assert len(held) == RACERS - 1, [r["code"] for r in results]
    who = winners[0]["who"]
    assert json.loads(winners[0]["stdout"])["holder"] == who
    assert all(json.loads(r["stdout"])["error"]["kind"] == "lease_held" for r in held)
    assert all(who in json.loads(r["stdout"])["error"]["message"] for r in held)
    double_claims = len(_claims(record, task_id)) - 1
    assert double_claims == 0
    assert leases.current(record, tasks.lease_resource(task_id)).holder == who


def test_16_processes_running_next_take_16_different_tasks(record: Record,
                                                           tmp_path: Path) -> None:
    ids = [tasks.add(record, "web", title=f"job {n}", author="alice").id
           for n in range(RACERS)]
    results = _race(record, tmp_path, ["task", "next", "--for", "1h"])
    assert all(r["code"] == 0 for r in results), results
    taken = [json.loads(r["stdout"])["task"] for r in results]
    assert all(t is not None for t in taken)
    assert sorted(t["id"] for t in taken) == sorted(ids)
    assert all(t["holder"] == r["who"] for t, r in zip(taken, results, strict=True))
    double_claims = sum(len(_claims(record, i)) - 1 for i in ids)
    assert double_claims == 0
    board = tasks.read_board(record, "web")
    assert {s.state for s in tasks.states(record, board)} == {"claimed"}


def test_finishes_racing_claims_leave_no_claim_on_a_done_task(record: Record,
                                                              tmp_path: Path) -> None:
    """Half the racers mark the task done, half claim it: it ends done, each claim that
    won first was told of the finish (or the finish was refused), and no claim holds it."""
    task_id = tasks.add(record, "web", title="contested", author="alice").id
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(RACERS, timeout=120)
    outs = [tmp_path / f"mixed{i:02d}.json" for i in range(RACERS)]
    procs = []
    for i, out in enumerate(outs):
        args = ["task", "done", task_id] if i % 2 else ["task", "claim", task_id, "--for", "1h"]
        procs.append(ctx.Process(target=_racer, args=(str(record.root), f"racer{i:02d}",
                                                      barrier, str(out), args)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert all(p.exitcode == 0 for p in procs)
    results = [json.loads(o.read_text()) for o in outs]
    assert {r["code"] for r in results} <= {0, 3, 4}
    # One compare-and-set orders them all: the first to take the task's lease wins, and
    # every later racer is told it is held (4) or finished (3).
    won = [i for i, r in enumerate(results) if r["code"] == 0]
    assert len(won) == 1, [r["code"] for r in results]
    state = tasks.one_state(record, tasks.read_board(record, "web"), task_id)
    assert state.state == ("done" if won[0] % 2 else "claimed")
