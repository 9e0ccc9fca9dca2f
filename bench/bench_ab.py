"""Two (or more) atlas source trees side by side, on the workloads a piece of speed
machinery was built for: does it still pay?

Each tree is a folder holding an ``atlas_files`` package (an export of a commit: `git
archive REV | tar -x -C DIR`), run with this Python and its installed dependencies,
``PYTHONPATH`` set to the tree. Every workload runs once per tree in each round, the trees'
order alternating from round to round, so that the machine's load (a shared machine's
other work) falls on each alike; each figure is the median of its rounds (wall time, and CPU time:
the command's own and, through a server, its worker's), and each tree is shown against
the first.

Workloads:

- links cold: `atlas check --links-only` of a public MkDocs project's docs (the corpora of
  bench_links.py, fetched the same way), no render cache, no server;
- links cold through a new server: a server started for the run (its start not timed,
  its spare worker given time to settle), the same check, the server stopped;
- links cold through a server that ran it before: one server per tree, which ran the
  check once and was idle a second since;
- record commands through a server: `status show` and `put` (a new version each time) on
  a small record, one server per tree.

    python bench/bench_ab.py --tree with=/tmp/a --tree without=/tmp/b --cache DIR
    python bench/bench_ab.py --tree a=DIR --tree b=DIR --only griffe --rounds 9
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import bench_links
import yaml
from _common import clean_env

Run = Callable[[str], tuple[float, float]]  # a tree's name -> wall and CPU of one run


class Tree:
    def __init__(self, name: str, folder: Path, work: Path) -> None:
        self.name, self.folder = name, folder
        self.env = {**clean_env(), "PYTHONPATH": str(folder)}
        self.sockets = work / f"sockets-{name}"
        self.sockets.mkdir(mode=0o700)
        self.count = 0
        self.pids: dict[str, int] = {}

    def atlas(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "atlas_files", *args]

    def start_server(self) -> str:
        self.count += 1
        sock = str(self.sockets / f"s{self.count}.sock")
        started = subprocess.run(self.atlas("server", "start", "--socket", sock, "--json"),
                                 env=self.env, check=True, capture_output=True, text=True)
        self.pids[sock] = int(json.loads(started.stdout)["pid"])
        time.sleep(1.0)  # its spare settles and copies its pages, as between commands
        return sock

    def stop_server(self, sock: str) -> None:
        subprocess.run(self.atlas("server", "stop", "--socket", sock), env=self.env,
                       stdout=subprocess.DEVNULL, check=False)


def _timed(argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes | None = None,
           server_pid: int | None = None) -> tuple[float, float]:
    """Wall time and CPU time of one run: the CPU of the process and what it waited for
    (wait4), plus, through a server, the CPU of the worker the server reaped (its
    children's times in /proc, which count a command's render children too). CPU time
    moves much less than wall time when the machine is busy with other work."""
    before = _children_cpu(server_pid)
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stdin is not None and child.stderr is not None
    child.stdin.write(stdin or b"")
    child.stdin.close()
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # a links check with findings exits 1
        raise SystemExit(f"{' '.join(argv)} failed ({code}):\n{err.decode()[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime + _children_cpu(server_pid) - before
    return wall, cpu


def _children_cpu(pid: int | None) -> float:
    """The user and system time of the reaped children of ``pid`` (0 for none)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def corpus(project: str, version: str, cache: Path, work: Path) -> tuple[Path, Path]:
    """A corpus prepared as bench_links.py prepares it: its root and docs folder."""
    root = bench_links.fetch(project, version, cache, work / project)
    config = next((root / c for c in bench_links.CONFIGS if (root / c).is_file()), None)
    if config is None:
        raise SystemExit(f"{project}: no MkDocs configuration in its sdist")
    reduced, _ = bench_links.reduce_config(bench_links.read_config(config), root)
    for name in bench_links.CONFIGS:
        (root / name).unlink(missing_ok=True)
    (root / "mkdocs.yml").write_text(yaml.dump(reduced, Dumper=bench_links._Dumper,
                                               sort_keys=False))
    return root, root / reduced["docs_dir"]


class Workloads:
    """Named runs (a tree's name -> the wall time of one run), and the servers they keep
    for later rounds, stopped at the end."""

    def __init__(self, trees: dict[str, Tree]) -> None:
        self.trees = trees
        self.runs: dict[str, Run] = {}
        self.kept: dict[tuple[str, str], str] = {}  # (workload, tree) -> socket

    def kept_server(self, work: str, name: str, first: Callable[[str], None]) -> str:
        """The server this workload keeps for ``name``; ``first(socket)`` once it starts."""
        if (work, name) not in self.kept:
            self.kept[work, name] = self.trees[name].start_server()
            first(self.kept[work, name])
        return self.kept[work, name]

    def stop(self) -> None:
        for (_, name), sock in self.kept.items():
            self.trees[name].stop_server(sock)


def links_workloads(trees: dict[str, Tree], root: Path, docs: Path) -> Workloads:
    found = Workloads(trees)

    def check(tree: Tree, server: str | None) -> tuple[float, float]:
        shutil.rmtree(root / ".atlas-cache", ignore_errors=True)
        env = {**tree.env, **({"ATLAS_SERVER": server} if server else {})}
        return _timed(tree.atlas("check", "--links-only", "--json", str(docs)), env,
                      root.parent, server_pid=tree.pids.get(server or ""))

    def cold(name: str) -> tuple[float, float]:
        return check(trees[name], None)

    def new_server(name: str) -> tuple[float, float]:
        tree = trees[name]
        sock = tree.start_server()
        try:
            return check(tree, sock)
        finally:
            tree.stop_server(sock)

    def server_that_ran_it(name: str) -> tuple[float, float]:
        tree = trees[name]
        sock = found.kept_server("before", name, lambda sock: check(tree, sock) and None)
        time.sleep(1.0)  # idle a second, as between two commits
        return check(tree, sock)

    found.runs = {"links cold": cold, "links cold, a new server": new_server,
                  "links cold, a server that ran it before": server_that_ran_it}
    return found


def record_workloads(trees: dict[str, Tree], work: Path) -> Workloads:
    found = Workloads(trees)

    def record(name: str) -> Path:
        return work / f"record-{name}"

    def ready(name: str) -> tuple[Tree, dict[str, str]]:
        tree = trees[name]

        def init(sock: str) -> None:
            subprocess.run(tree.atlas("init", str(record(name)), "--project", "web"),
                           env=tree.env, check=True, stdout=subprocess.DEVNULL)

        sock = found.kept_server("record", name, init)
        return tree, {**tree.env, "ATLAS_SERVER": sock}

    def status(name: str) -> tuple[float, float]:
        tree, env = ready(name)
        return _timed(tree.atlas("--record", str(record(name)), "status", "show"), env,
                      work, server_pid=tree.pids[env["ATLAS_SERVER"]])

    def put(name: str) -> tuple[float, float]:
        tree, env = ready(name)
        topic = f"plan-{time.monotonic_ns()}"  # a new topic each time: the same work
        return _timed(tree.atlas("--record", str(record(name)), "--as", "bench", "put",
                                 topic), env, work, stdin=b"a plan\n",
                      server_pid=tree.pids[env["ATLAS_SERVER"]])

    found.runs = {"status show, through a server": status, "put, through a server": put}
    return found


def measure(trees: dict[str, Tree], workloads: Workloads, rounds: int,
            ) -> dict[str, dict[str, tuple[float, float]]]:
    """The median wall and CPU time of each workload for each tree, the trees' order
    alternating from round to round."""
    names = list(trees)
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {
        w: {n: [] for n in names} for w in workloads.runs}
    try:
        for name in names:  # compile each tree's modules, fill the page cache
            for run in workloads.runs.values():
                run(name)
        for r in range(rounds):
            order = names if r % 2 == 0 else names[::-1]
            for work, run in workloads.runs.items():
                for name in order:
                    samples[work][name].append(run(name))
    finally:
        workloads.stop()
    return {w: {n: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v))
                for n, v in by.items()} for w, by in samples.items()}


def show(title: str, figures: dict[str, dict[str, tuple[float, float]]], first: str,
         ratios: dict[str, dict[str, list[tuple[float, float]]]]) -> None:
    print(title)
    for work, by in figures.items():
        cells = []
        base_wall, base_cpu = by[first]
        for name, (wall, cpu) in by.items():
            ratio = (wall / base_wall, cpu / base_cpu if base_cpu else 1.0)
            ratios.setdefault(work, {}).setdefault(name, []).append(ratio)
            cells.append(f"{name} {wall * 1000:6.0f} ms, CPU {cpu * 1000:6.0f} ms" +
                         ("" if name == first else f" ({ratio[0]:4.2f}x, {ratio[1]:4.2f}x)"))
        print(f"    {work:40s} " + "  ".join(cells))


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(map(math.log, values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=DIR",
                        help="a source tree to run (two or more; the first is the base)")
    parser.add_argument("--cache", metavar="DIR", help="keep the downloaded sdists in DIR")
    parser.add_argument("--only", metavar="PROJECT", action="append",
                        help="this corpus only (repeatable)")
    parser.add_argument("--rounds", type=int, default=7, metavar="N")
    parser.add_argument("--no-record", action="store_true",
                        help="leave out the record commands")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="atlas-bench-ab-"))
    os.chmod(work, 0o700)
    cache = Path(args.cache) if args.cache else work / "sdists"
    trees = {}
    for spec in args.tree:
        name, _, folder = spec.partition("=")
        trees[name] = Tree(name, Path(folder).resolve(), work)
    first = next(iter(trees))
    ratios: dict[str, dict[str, list[tuple[float, float]]]] = {}
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          f"medians of {args.rounds} rounds")
    try:
        for project, version in bench_links.CORPORA:
            if args.only and project not in args.only:
                continue
            root, docs = corpus(project, version, cache, work)
            show(f"{project} {version}", measure(trees, links_workloads(trees, root, docs),
                                                 args.rounds), first, ratios)
        if not args.no_record:
            show("a small record", measure(trees, record_workloads(trees, work),
                                           args.rounds), first, ratios)
        print(f"geometric mean of the ratios to {first} (wall, CPU)")
        for work_name, by in ratios.items():
            cells = [f"{n} {_geomean([w for w, _ in r]):4.2f}x, {_geomean([c for _, c in r]):4.2f}x"
                     for n, r in by.items() if n != first]
            print(f"    {work_name:40s} " + "  ".join(cells))
        print(f"load average at end: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
