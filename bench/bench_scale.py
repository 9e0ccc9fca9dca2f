"""One topic costs the same at 20 topics or 10,000: the commands at the scale a year of a
team reaches, against the click+yaml floor, in one run.

    python bench/bench_scale.py [--rounds 9] [--topics 10000] [--versions 10]
                                [--deep 10000]

Two records are built the way a long-lived record looks (bench_core.big_record): a small
one of 20 topics and a large one of ``--topics``, each topic of ``--versions`` versions,
and in each a topic of ``--deep`` versions. Printed, each a ratio of medians of
interleaved runs:

* `atlas get` of one topic and `atlas put` on a topic of ``--versions`` versions, against
  the floor, in both records (target <= 1.3x);
* `get` in the large record against `get` in the small one (target <= 1.2x);
* `put` on the topic of ``--deep`` versions against `put` on one of ``--versions`` in the
  same record (target <= 1.2x);
* `atlas ls`, `atlas feed` and `atlas begin --hook claude` in the large record against the
  floor (target <= 2x);
* the same commands through a command server (ATLAS_SERVER), in the same rounds: `get` and
  `put` against the floor (target <= 0.6x), `ls`, `feed` and `begin` beside them. A served
  command's CPU column is its client's alone, so read the wall ratio there (on a quiet
  machine).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import atlas_argv, clean_env, command_server
from bench_core import big_record, write_topic
from bench_ritual import interleaved

from atlas_files.storage.record import Record

FLOOR = "python -c 'import click, yaml'"


def build(root: Path, topics: int, versions: int, deep: int) -> Record:
    """``topics`` topics, and two more whose latest versions are the bench writer's own
    (so its puts go on from there without a read): one of ``versions``, one of ``deep``."""
    record = big_record(root, topics, versions)
    write_topic(record, "shallow", versions, "bench")
    write_topic(record, "deep", deep, "bench")
    return record


def ratio_line(what: str, value: float, target: float, cpu: float | None = None) -> None:
    also = f" ({cpu:.2f}x in CPU time)" if cpu is not None else ""
    print(f"  {what}: {value:.2f}x wall{also} (target <= {target}x) "
          f"{'OK' if value <= target else 'MISSED'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--versions", type=int, default=10)
    parser.add_argument("--deep", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as name:
        tmp = Path(name)
        start = time.perf_counter()
        small = build(tmp / "small", 20, args.versions, args.deep)
        large = build(tmp / "large", args.topics, args.versions, args.deep)
        print(f"records of 20 and {args.topics} topics x {args.versions} versions, each "
              f"with a topic of {args.deep} versions (written in "
              f"{time.perf_counter() - start:.0f} s); medians of {args.rounds} interleaved "
              "runs")
        env = clean_env() | {"ATLAS_AS": "bench"}
        atlas, py = atlas_argv(), sys.executable
        topic = "topic-00005"
        session = json.dumps({"session_id": "b", "transcript_path": str(tmp / "t.jsonl"),
                              "cwd": str(large.root), "hook_event_name": "SessionStart",
                              "source": "startup"}).encode()
        body = b"a new version of the handoff\n"

        def at(record: Record, *argv: str) -> list[str]:
            return [*atlas, "--record", str(record.root), *argv]

        plain: dict[str, tuple[list[str], bytes | None]] = {
            FLOOR: ([py, "-c", "import click, yaml"], None),
            "get, 20 topics": (at(small, "get", topic), None),
            "get, large": (at(large, "get", topic), None),
            "put, 20 topics": (at(small, "put", "shallow"), body),
            "put, large": (at(large, "put", "shallow"), body),
            f"put, topic of {args.deep} versions": (at(large, "put", "deep"), body),
            "ls, large": (at(large, "ls"), None),
            "feed, large": (at(large, "feed"), None),
            "begin --hook claude, large": (at(large, "begin", "--hook", "claude"), session),
        }
        with command_server(env) as served_env:
            sock = served_env["ATLAS_SERVER"]
            served = {f"{what}, served": (["env", f"ATLAS_SERVER={sock}", *argv], stdin)
                      for what, (argv, stdin) in plain.items()
                      if what != FLOOR and "topic of" not in what}
            times = interleaved({**plain, **served}, args.rounds, env, tmp)
        floor, floor_cpu = times[FLOOR]
        for what, (wall, cpu) in times.items():
            print(f"  {what:<44} {wall * 1000:7.1f} ms wall x{wall / floor:5.2f}  "
                  f"{cpu * 1000:7.1f} ms CPU x{cpu / floor_cpu:5.2f}")

        def against_floor(what: str, target: float) -> None:
            wall, cpu = times[what]
            ratio_line(f"{what} / floor", wall / floor, target, cpu / floor_cpu)

        for what in ("get, 20 topics", "get, large", "put, 20 topics", "put, large"):
            against_floor(what, 1.3)
        ratio_line("get, large / get, 20 topics",
                   times["get, large"][0] / times["get, 20 topics"][0], 1.2,
                   times["get, large"][1] / times["get, 20 topics"][1])
        deep = f"put, topic of {args.deep} versions"
        ratio_line(f"{deep} / put, large", times[deep][0] / times["put, large"][0], 1.2,
                   times[deep][1] / times["put, large"][1])
        for what in ("ls, large", "feed, large", "begin --hook claude, large"):
            against_floor(what, 2.0)
        for what in ("get, 20 topics", "get, large", "put, 20 topics", "put, large"):
            ratio_line(f"{what}, served / floor", times[f"{what}, served"][0] / floor, 0.6)
        for what in ("ls, large", "feed, large", "begin --hook claude, large"):
            ratio_line(f"{what}, served / floor", times[f"{what}, served"][0] / floor, 2.0)
        print("  (`large` is the record of", args.topics, "topics)")


if __name__ == "__main__":
    main()
