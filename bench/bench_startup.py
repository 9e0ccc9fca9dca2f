"""Session start-up, the edit guard and news, in two or more installed atlas side by
side: are they still as cheap as they were?

    python bench/bench_startup.py --atlas before=ENV1/bin/atlas --atlas after=ENV2/bin/atlas
                                  [--rounds 15] [--topics 200] [--leases 200]

Each ``--atlas`` names the `atlas` script of a regular install (`pip install .` of a
commit into a virtual environment of its own, no PYTHONDONTWRITEBYTECODE); the floor
`python -c "import click, yaml"` is run with the Python beside the first. One record in
a git repository (``--topics`` topics of 3 versions, ``--leases`` leases, a tenth of them
on paths, alice's session begun) is built once and copied for each install, so no
install reads what another wrote. Timed, each in every round and the installs' order
alternating from round to round:

* `atlas status show`;
* `atlas begin --hook claude` (a SessionStart event, as Claude Code sends it);
* `atlas guard --hook claude` (a PreToolUse edit of a file no lease covers);
* `atlas news --hook claude` (a PostToolUse event when nothing is new, looking every time).

Printed: the median wall and CPU time (user + system of the child) of each, the CPU
ratio to the floor, and each install's ratio against the first's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import write_topic
from bench_guard import _git, _git_env, age, post_tool, pre_tool, record_with_leases
from bench_ritual import _run

FLOOR = "python -c 'import click, yaml'"


def build(root: Path, topics: int, leases: int) -> Path:
    """A repository holding a record: ``topics`` topics of three versions by bob, and
    ``leases`` leases held by bob, dated an hour back as a quiet sheet is."""
    repo = root / "code"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for n in range(20):
        (repo / "src").mkdir(exist_ok=True)
        (repo / "src" / f"m{n}.py").write_text(f"{n}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "start")
    record = record_with_leases(repo, leases)
    for n in range(topics):
        write_topic(record, f"topic-{n:04d}", 3, "bob")
    age(record.leases_dir, 3600)
    age(repo / ".git", 2 * 3600)
    return repo


def session_start(repo: Path) -> bytes:
    return json.dumps({"session_id": "b", "transcript_path": os.devnull, "cwd": str(repo),
                       "hook_event_name": "SessionStart", "source": "startup"}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--atlas", action="append", required=True, metavar="NAME=SCRIPT")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--leases", type=int, default=200)
    args = parser.parse_args()
    installs = dict(item.split("=", 1) for item in args.atlas)
    first = next(iter(installs))
    python = str(Path(installs[first]).parent / "python")
    with tempfile.TemporaryDirectory(prefix="atlas-bench-startup-") as name:
        root = Path(name)
        built = build(root / "built", args.topics, args.leases)
        env = {**_git_env(), "ATLAS_AS": "alice"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # each run would compile every module
        commands: dict[str, tuple[list[str], bytes | None, Path, dict[str, str]]] = {
            FLOOR: ([python, "-c", "import click, yaml"], None, root, env)}
        for install, script in installs.items():
            repo = root / install / "code"
            shutil.copytree(built, repo, symlinks=True)
            own = {**env, "XDG_CACHE_HOME": str(root / install / "cache"),
                   "XDG_CONFIG_HOME": str(root / install / "config")}
            subprocess.run([script, "begin"], env=own, cwd=repo, check=True,
                           stdout=subprocess.DEVNULL)
            commands[f"status show, {install}"] = ([script, "status", "show"], None, repo, own)
            commands[f"begin --hook claude, {install}"] = (
                [script, "begin", "--hook", "claude"], session_start(repo), repo, own)
            commands[f"guard --hook claude, {install}"] = (
                [script, "guard", "--hook", "claude"], pre_tool(repo, "src/m7.py"), repo, own)
            commands[f"news --hook claude, {install}"] = (
                [script, "news", "--hook", "claude"], post_tool(repo), repo, own)
        for argv, stdin, cwd, own in commands.values():  # warm-up: pyc files, caches
            _run(argv, own, stdin, cwd)
        samples: dict[str, list[tuple[float, float]]] = {what: [] for what in commands}
        order = list(commands)
        start = time.perf_counter()
        for n in range(args.rounds):
            for what in (order if n % 2 == 0 else order[::-1]):
                argv, stdin, cwd, own = commands[what]
                samples[what].append(_run(argv, own, stdin, cwd))
        times = {what: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s))
                 for what, s in samples.items()}
        print(f"{args.topics} topics x 3 versions, {args.leases} leases; medians of "
              f"{args.rounds} rounds ({time.perf_counter() - start:.0f} s)")
        floor_cpu = times[FLOOR][1]
        for what, (wall, cpu) in times.items():
            install = what.rpartition(", ")[2]
            against = ""
            if install in installs and install != first:
                base = times[f"{what.rpartition(', ')[0]}, {first}"][1]
                against = f"  {cpu / base:5.2f}x {first}"
            print(f"  {what:<36} {wall * 1000:7.1f} ms wall {cpu * 1000:7.1f} ms CPU "
                  f"x{cpu / floor_cpu:5.2f} floor{against}")


if __name__ == "__main__":
    main()
