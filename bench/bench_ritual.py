"""Session-ritual benchmarks: the Stop hook at every turn end, and `atlas begin`.

    python bench/bench_ritual.py [--rounds 20] [--topics 1000] [--versions 3]

* `atlas end --hook claude` (a Stop hook: stdin JSON, as Claude Code sends it) on a record
  of 1,000 topics, against `python -c "import click, yaml"` in the same run: <= 1.3x.
  Timed twice: a turn that wrote nothing (the common case, allowed) and a turn that put a
  topic without writing the status (blocked).
* `atlas begin` on the same record against `atlas ls` in the same run: <= 2x.

Each figure is the median of interleaved runs, after one warm-up run each, in wall time
(the target) and in CPU time (user + system of the child: steadier on a busy machine).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import atlas_argv, clean_env
from bench_core import big_record

from atlas_files.api import Worker, decisions, leases
from atlas_files.protocol import status


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argv: Sequence[str], env: dict[str, str], stdin: bytes | None,
         cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one run. CPU time (user + system of the child) hardly moves
    when other processes load the machine; wall time does."""
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, env=env, cwd=cwd,
                   check=False)
    return time.perf_counter() - start, _cpu() - cpu


def interleaved(commands: dict[str, tuple[Sequence[str], bytes | None]], rounds: int,
                env: dict[str, str], cwd: Path) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of each command, run in turns so drift hits all alike."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for argv, stdin in commands.values():
        _run(argv, env, stdin, cwd)
    for _ in range(rounds):
        for name, (argv, stdin) in commands.items():
            samples[name].append(_run(argv, env, stdin, cwd))
    return {name: (statistics.median(w for w, _ in values),
                   statistics.median(c for _, c in values))
            for name, values in samples.items()}


def _report(times: dict[str, tuple[float, float]], name: str, floor_name: str,
            target: float) -> None:
    for cmd, (wall, cpu) in times.items():
        print(f"  {cmd:<36} {wall * 1000:7.1f} ms wall {cpu * 1000:7.1f} ms CPU")
    wall = times[name][0] / times[floor_name][0]
    cpu = times[name][1] / times[floor_name][1]
    verdict = "OK" if wall <= target else "MISSED"
    print(f"  target {name}: <= {target}x {floor_name} -> {wall:.2f}x wall {verdict} "
          f"({cpu:.2f}x CPU)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--versions", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as name:
        record = big_record(Path(name) / "rec", args.topics, args.versions)
        ann = Worker(record, "ann")
        status.write(record, "Where things stand.\n", author="ann")
        for i in range(20):
            decisions.decide(ann, topic=f"choice {i}", recommended="a", chosen="b",
                             relation="disagreed", why="timing")
        for i in range(4):
            leases.claim(ann, f"box.gpu{i}", "2h", "training")
        env = clean_env() | {"ATLAS_AS": "bench"}
        atlas, py = atlas_argv(), sys.executable
        root = record.root
        subprocess.run([*atlas, "begin"], env=env, cwd=root, check=True,
                       stdout=subprocess.DEVNULL)
        stop = json.dumps({"session_id": "b", "transcript_path": os.devnull,
                           "cwd": str(root), "permission_mode": "default",
                           "hook_event_name": "Stop", "stop_hook_active": False}).encode()
        print(f"the session ritual on {args.topics} topics x {args.versions} versions "
              f"(median of {args.rounds} interleaved runs)")
        hook = [*atlas, "end", "--hook", "claude"]
        quiet = interleaved({
            "python -c 'import click, yaml'": ([py, "-c", "import click, yaml"], None),
            "end --hook claude (wrote nothing)": (hook, stop),
        }, args.rounds, env, root)
        subprocess.run([*atlas, "put", "notes"], input=b"notes\n", env=env, cwd=root,
                       check=True, stdout=subprocess.DEVNULL)
        blocked = interleaved({
            "python -c 'import click, yaml'": ([py, "-c", "import click, yaml"], None),
            "end --hook claude (blocks)": (hook, stop),
        }, args.rounds, env, root)
        reads = interleaved({
            "atlas ls": ([*atlas, "ls"], None),
            "atlas begin": ([*atlas, "begin"], None),
        }, max(5, args.rounds // 2), env, root)
        floor = "python -c 'import click, yaml'"
        _report(quiet, "end --hook claude (wrote nothing)", floor, 1.3)
        _report(blocked, "end --hook claude (blocks)", floor, 1.3)
        _report(reads, "atlas begin", "atlas ls", 2.0)


if __name__ == "__main__":
    main()
