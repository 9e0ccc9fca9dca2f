"""Two (or more) atlas source trees side by side, on the workloads a piece of speed
machinery was built for: does it still pay?

Each tree is a folder holding an ``atlas_files`` package (an export of a commit: `git
archive REV | tar -x -C DIR`), run with this Python and its installed dependencies,
``PYTHONPATH`` set to the tree. Every workload runs once per tree in each round, the trees'
order alternating from round to round, so that the machine's load (a shared machine's
other work) falls on each alike; each figure is the median of its rounds, and each tree
is shown against the first.

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

Run = Callable[[str], float]  # a tree's name -> the wall time of one run


class Tree:
    def __init__(self, name: str, folder: Path, work: Path) -> None:
        self.name, self.folder = name, folder
        self.env = {**clean_env(), "PYTHONPATH": str(folder)}
        self.sockets = work / f"sockets-{name}"
        self.sockets.mkdir(mode=0o700)
        self.count = 0

    def atlas(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "atlas_files", *args]

    def start_server(self) -> str:
        self.count += 1
        sock = str(self.sockets / f"s{self.count}.sock")
        subprocess.run(self.atlas("server", "start", "--socket", sock), env=self.env,
                       check=True, stdout=subprocess.DEVNULL)
        time.sleep(1.0)  # its spare settles and copies its pages, as between commands
        return sock

    def stop_server(self, sock: str) -> None:
        subprocess.run(self.atlas("server", "stop", "--socket", sock), env=self.env,
                       stdout=subprocess.DEVNULL, check=False)


def _timed(argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes | None = None,
           ) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, input=stdin, capture_output=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):  # a links check with findings exits 1
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n"
                         f"{done.stderr.decode()[-2000:]}")
    return wall


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

    def check(tree: Tree, server: str | None) -> float:
        shutil.rmtree(root / ".atlas-cache", ignore_errors=True)
        env = {**tree.env, **({"ATLAS_SERVER": server} if server else {})}
        return _timed(tree.atlas("check", "--links-only", "--json", str(docs)), env,
                      root.parent)

    def cold(name: str) -> float:
        return check(trees[name], None)

    def new_server(name: str) -> float:
        tree = trees[name]
        sock = tree.start_server()
        try:
            return check(tree, sock)
        finally:
            tree.stop_server(sock)

    def server_that_ran_it(name: str) -> float:
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

    def status(name: str) -> float:
        tree, env = ready(name)
        return _timed(tree.atlas("--record", str(record(name)), "status", "show"), env,
                      work)

    def put(name: str) -> float:
        tree, env = ready(name)
        topic = f"plan-{time.monotonic_ns()}"  # a new topic each time: the same work
        return _timed(tree.atlas("--record", str(record(name)), "--as", "bench", "put",
                                 topic), env, work, stdin=b"a plan\n")

    found.runs = {"status show, through a server": status, "put, through a server": put}
    return found


def measure(trees: dict[str, Tree], workloads: Workloads, rounds: int,
            ) -> dict[str, dict[str, float]]:
    """The median wall time of each workload for each tree, in alternating order."""
    names = list(trees)
    samples: dict[str, dict[str, list[float]]] = {
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
    return {w: {n: statistics.median(v) for n, v in by.items()} for w, by in samples.items()}


def show(title: str, figures: dict[str, dict[str, float]], first: str,
         ratios: dict[str, dict[str, list[float]]]) -> None:
    print(title)
    for work, by in figures.items():
        cells = []
        for name, wall in by.items():
            ratio = wall / by[first]
            ratios.setdefault(work, {}).setdefault(name, []).append(ratio)
            cells.append(f"{name} {wall * 1000:7.0f} ms" +
                         ("" if name == first else f" ({ratio:4.2f}x)"))
        print(f"    {work:42s} " + "  ".join(cells))


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
    ratios: dict[str, dict[str, list[float]]] = {}
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
        print("geometric mean of the ratios to", first)
        for work_name, by in ratios.items():
            cells = [f"{n} {math.exp(statistics.fmean(map(math.log, r))):4.2f}x"
                     for n, r in by.items() if n != first]
            print(f"    {work_name:42s} " + "  ".join(cells))
        print(f"load average at end: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
