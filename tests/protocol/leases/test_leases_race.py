"""Leases under real OS processes: a 32-process race, a holder killed with SIGKILL, and a
holder paused with SIGSTOP past its expiry."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.runner import Result, snapshot

from atlas_files.facts import timeutil
from atlas_files.facts.errors import AtlasError, LeaseHeld
from atlas_files.facts.layout import generation_number
from atlas_files.protocol import leases
from atlas_files.storage import fsio, schemas
from atlas_files.storage.record import Record

RACERS = 32
ROUNDS = 50
RESOURCE = "gpubox.gpu0"


def _racer(root: str, who: str, barrier: Any, out: str) -> None:
    """One long-lived racer: every round it claims the same free resource at the moment
    the barrier opens; a winner keeps the lease until everyone has tried, then releases."""
    record = Record(root)
    rounds = []
    for n in range(ROUNDS):
        barrier.wait()
        won: dict[str, Any] | None = None
        try:
            lease = leases.claim(record, RESOURCE, holder=who, duration_s=120, why=f"round {n}")
            won = {"round": n, "generation": lease.generation, "start": time.monotonic()}
        except LeaseHeld:
            pass
        barrier.wait()  # all 32 have tried; a second winner would still be holding here
        if won is not None:
            won["end"] = time.monotonic()
            try:
                released = leases.release(record, RESOURCE, holder=who,
                                          generation=won["generation"])
                won["released_as"] = released.generation
            except AtlasError as exc:  # only if a second winner moved the lease on
                won["released_as"] = str(exc)
            rounds.append(won)
        barrier.wait()  # the resource is free again before the next round starts
    Path(out).write_text(json.dumps(rounds))


def test_32_processes_50_rounds_exactly_one_winner_no_overlap(
    record: Record, tmp_path: Path
) -> None:
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(RACERS, timeout=120)
    outs = [tmp_path / f"racer{i:02d}.json" for i in range(RACERS)]
    procs = [
        ctx.Process(target=_racer, args=(str(record.root), f"racer{i:02d}", barrier, str(out)))
        for i, out in enumerate(outs)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]

    wins = []
    for i, out in enumerate(outs):
        for w in json.loads(out.read_text()):
            wins.append({**w, "who": f"racer{i:02d}"})
    by_round: dict[int, list[dict[str, Any]]] = {}
    for w in wins:
        by_round.setdefault(w["round"], []).append(w)
    assert sorted(by_round) == list(range(ROUNDS))
    assert all(len(ws) == 1 for ws in by_round.values()), "exactly one winner per round"

    # Generations strictly increase, with no gap and no repeat: claim, release, claim, ...
    ordered = [by_round[n][0] for n in range(ROUNDS)]
    assert [w["generation"] for w in ordered] == [2 * n + 1 for n in range(ROUNDS)]
    assert [w["released_as"] for w in ordered] == [2 * n + 2 for n in range(ROUNDS)]
    folder = record.leases_dir / RESOURCE
    names = sorted(os.listdir(folder))
    assert [generation_number(n) for n in names] == list(range(1, 2 * ROUNDS + 1)), \
        "no temp debris, no gap, no repeat"

    # Replay every holder's interval on the monotonic clock: no two overlap.
    intervals = sorted((w["start"], w["end"], w["who"]) for w in wins)
    for (_, end, who), (start, _, nxt) in zip(intervals, intervals[1:], strict=False):
        assert start >= end, f"{who} and {nxt} held the lease at the same time"

    current, history = leases.show(record, RESOURCE)
    assert current.state == "free" and current.generation == 2 * ROUNDS
    for w, (claimed, released) in zip(ordered, zip(history[::2], history[1::2],
                                                   strict=True), strict=True):
        assert (claimed.action, claimed.holder) == ("claim", w["who"])
        assert (released.action, released.written_by) == ("release", w["who"])
        assert claimed.ended == f"released by {w['who']}"
    for g in history[:5]:
        assert g.path is not None
        assert schemas.errors("lease", json.loads(g.path.read_bytes())) == []


HOLDER = r"""
import sys
from atlas_files.protocol import leases
from atlas_files.storage.record import Record
root, who, resource, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
lease = leases.claim(Record(root), resource, holder=who, duration_s=seconds, why="long run")
print(lease.generation, lease.expires_at, flush=True)
import time
time.sleep(3600)
"""


def _start_holder(record: Record, who: str, resource: str,
                  seconds: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(record.root), who, resource,
                             str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    assert line, "the holder did not claim"
    return proc, line[1]


def _wait_past(expires_at: str) -> None:
    left = (timeutil.parse_time(expires_at) - timeutil.now()).total_seconds()
    time.sleep(max(0.0, left) + 0.05)


def test_holder_killed_with_sigkill_loses_the_lease_at_expiry_by_itself(
    atlas: Callable[..., Result], record: Record
) -> None:
    proc, expires_at = _start_holder(record, "alice", RESOURCE, 4)
    proc.kill()
    proc.wait()
    r = atlas("lease", "claim", RESOURCE, "--for", "1m", "--why", "mine", identity="bob")
    assert r.returncode == 4 and "alice" in r.stderr
    _wait_past(expires_at)
    # No release, no sweeper, no command in between: the dead holder's lease just ended.
    r = atlas("lease", "claim", RESOURCE, "--for", "1m", "--why", "mine", "--json",
              identity="bob")
    assert r.returncode == 0, r.stderr
    assert (r.json()["holder"], r.json()["generation"]) == ("bob", 2)


def test_break_before_expiry_takes_over_and_is_recorded_in_history(
    atlas: Callable[..., Result], record: Record
) -> None:
    proc, _ = _start_holder(record, "alice", RESOURCE, 3600)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert atlas("lease", "claim", RESOURCE, "--for", "1h", "--why", "x",
                 identity="carol").returncode == 4
    r = atlas("lease", "break", RESOURCE, "--why", f"alice's pid {proc.pid} is gone",
              "--json", identity="carol")
    assert r.returncode == 0, r.stderr
    assert (r.json()["holder"], r.json()["generation"]) == ("carol", 2)
    hist = atlas("lease", "show", RESOURCE, "--json").json()["history"]
    assert hist[1]["action"] == "break"
    assert hist[1]["why"] == f"alice's pid {proc.pid} is gone"
    assert hist[1]["previous"]["holder"] == "alice"
    assert hist[1]["previous"]["expires_in_s"] > 3000
    assert hist[0]["ended"] == f"broken by carol: alice's pid {proc.pid} is gone"


STALE = r"""
import json, sys
from atlas_files.protocol import leases
from atlas_files.facts.errors import AtlasError
from atlas_files.storage.record import Record
root, resource = sys.argv[1], sys.argv[2]
record = Record(root)
mine = leases.claim(record, resource, holder="alice", duration_s=1, why="long run")
print(mine.generation, mine.expires_at, flush=True)
sys.stdin.readline()  # the work; the test pauses this process here with SIGSTOP
outcome = {}
for name, call in (
    ("renew", lambda: leases.renew(record, resource, holder="alice", duration_s=60,
                                   generation=mine.generation)),
    ("release", lambda: leases.release(record, resource, holder="alice",
                                       generation=mine.generation)),
    ("renew_newest", lambda: leases.renew(record, resource, holder="alice", duration_s=60)),
    ("release_newest", lambda: leases.release(record, resource, holder="alice")),
):
    try:
        call()
        outcome[name] = "done"
    except AtlasError as exc:
        outcome[name] = [type(exc).__name__, exc.exit_code, exc.message]
print(json.dumps(outcome), flush=True)
"""


def test_stale_holder_paused_past_expiry_cannot_renew_or_release(
    atlas: Callable[..., Result], record: Record
) -> None:
    proc = subprocess.Popen([sys.executable, "-c", STALE, str(record.root), RESOURCE],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    generation, expires_at = proc.stdout.readline().split()
    proc.send_signal(signal.SIGSTOP)
    try:
        _wait_past(expires_at)
        taken = leases.claim(record, RESOURCE, holder="bob", duration_s=600, why="free now")
        assert taken.generation == int(generation) + 1
        before = snapshot(record.root)
    finally:
        proc.send_signal(signal.SIGCONT)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    outcome = json.loads(proc.stdout.readline())
    assert proc.wait(timeout=60) == 0
    for name, result in outcome.items():
        assert result != "done", f"the stale holder's {name} went through"
        assert result[:2] == ["LeaseHeld", 4], (name, result)
    assert f"generation {generation}" in outcome["renew"][2]
    assert snapshot(record.root) == before
    now = leases.current(record, RESOURCE)
    assert (now.holder, now.generation) == ("bob", taken.generation)
    r = atlas("lease", "renew", RESOURCE, "--generation", generation, identity="alice")
    assert r.returncode == 4 and "moved on" in r.stderr


def test_a_crash_between_temp_and_link_leaves_no_generation(record: Record) -> None:
    """A claimer killed mid-publish leaves at most a temp file, never a half generation;
    the next claim ignores it, and no lease exists that nobody took."""
    script = (
        "import os, sys\n"
        "from atlas_files.storage import fsio; from atlas_files.protocol import leases\n"
        "from atlas_files.storage.record import Record\n"
        "os.link = lambda *a, **k: os.kill(os.getpid(), 9)\n"
        "leases.claim(Record(sys.argv[1]), 'gpubox.gpu0', holder='alice', duration_s=60,"
        " why='x')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(record.root)])
    assert proc.returncode == -signal.SIGKILL
    folder = record.leases_dir / RESOURCE
    assert [n for n in os.listdir(folder) if fsio.is_temp(n)], "the crash left its temp file"
    assert leases.current(record, RESOURCE).state == "free"
    lease = leases.claim(record, RESOURCE, holder="bob", duration_s=60, why="y")
    assert lease.generation == 1
    assert not [n for n in os.listdir(folder) if fsio.is_temp(n)]
