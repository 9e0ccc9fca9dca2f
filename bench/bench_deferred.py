"""Which deferred imports (an import inside a function) still pay for themselves?

    python bench/bench_deferred.py [--topics 20] [--leases 20] [--all]

Every import inside a function body of atlas_files/ is found by reading the source. Then
the commands whose start-up matters are run once each on a small real record, cold (the
first run) and warm (the run after), as `python -m atlas_files`, and the modules each run
imported (``sys.modules`` at its exit) are kept:

`atlas status show`, `atlas get T`, `atlas put T`, `atlas ls`, `atlas begin --hook
claude`, `atlas end --hook claude`, `atlas guard --hook claude` (a PreToolUse event of an
Edit, and of a Bash call, which edits no file), `atlas news --hook claude` (a PostToolUse
event), `atlas task ls --ready`, `atlas task next --for 1h`, `atlas check --links-only`
on a tiny MkDocs site and on Markdown files without a mkdocs.yml, and `atlas --version`.

The verdict is read from those sets, not from timings, so it does not move with the
machine's load. A deferred import of T in module M

* pays when some run imports M but never T: hoisting T to M's top would add T to that
  run. The microseconds are what T adds there, from importtime's self times of the
  modules a process that has imported M loads for ``import T`` and the run lacked (the
  largest over the runs it saves; these figures do move with the load, and leave out
  what T's import loads through importlib.import_module);
* does not pay when every run that imports M imports T as well;
* is off these paths when no run imports M: the commands timed here never meet it.

Printed: one row per import statement that pays or does not (``--all``: those off these
paths too), then the counts.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_guard import _git_env, post_tool, pre_tool
from bench_startup import build, session_start

from atlas_files import layers

MARK = "-- bench_deferred: import T now --"
MODULES = "-- bench_deferred: modules --"
# `python -m atlas_files`, saying at exit every module the process imported. Not read from
# `-X importtime`, which leaves out what importlib.import_module loads (each command's and
# hook's module).
RUN = ("import atexit, runpy, sys\n"
       f"atexit.register(lambda: sys.stderr.write({MODULES!r} + ' '.join(sys.modules)))\n"
       "runpy.run_module('atlas_files', run_name='__main__', alter_sys=True)\n")


@dataclass(frozen=True)
class Deferred:
    """One import statement inside a function: where it is and the modules it loads."""

    module: str
    line: int
    targets: tuple[str, ...]


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _targets(node: ast.Import | ast.ImportFrom) -> tuple[str, ...]:
    if isinstance(node, ast.Import):
        return tuple(alias.name for alias in node.names)
    base = node.module or ""
    subs = [f"{base}.{alias.name}" for alias in node.names]
    # `from package import module` loads the module; `from module import name`, the module.
    return tuple(dict.fromkeys(s if _is_module(s) else base for s in subs))


def deferred_imports() -> list[Deferred]:
    """Every import statement inside a function of the package."""
    return [Deferred(module, node.lineno, _targets(node))
            for module, path in layers.modules().items()
            for node in layers.deferred_imports(path)]


def _importtime(stderr: str) -> list[tuple[str, int]]:
    """(module, self microseconds) of each `-X importtime` line, in the order printed."""
    rows = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            own, _, name = line.removeprefix("import time:").split("|")
            rows.append((name.strip(), int(own)))
    return rows


def _runs(root: Path, topics: int, leases: int) -> dict[str, set[str]]:
    """The modules each measured run imported, by the run's name."""
    repo = build(root / "built", topics, leases)
    site = root / "site"
    (site / "docs").mkdir(parents=True)
    (site / "mkdocs.yml").write_text("site_name: tiny\nnav:\n  - index.md\n  - more.md\n")
    (site / "docs" / "index.md").write_text("# Tiny\n\nSee [more](more.md#part).\n")
    (site / "docs" / "more.md").write_text("# More\n\n## Part\n\nBack [home](index.md).\n")
    notes = root / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nSee [b](b.md#part).\n")
    (notes / "b.md").write_text("# B\n\n## Part\n")
    env = {**_git_env(), "ATLAS_AS": "alice", "XDG_CACHE_HOME": str(root / "cache"),
           "XDG_CONFIG_HOME": str(root / "config")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    atlas = [sys.executable, "-m", "atlas_files"]
    for n in range(3):
        subprocess.run([*atlas, "task", "add", f"task {n}"], env=env, cwd=repo, check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run([*atlas, "begin"], env=env, cwd=repo, check=True, stdout=subprocess.DEVNULL)
    stop = (b'{"session_id": "b", "transcript_path": "%s", "cwd": "%s", '
            b'"hook_event_name": "Stop", "stop_hook_active": false}'
            % (os.devnull.encode(), str(repo).encode()))
    bash = json.loads(post_tool(repo))  # a Bash call, before it runs: no file to guard
    bash.update(hook_event_name="PreToolUse")
    del bash["tool_response"]
    commands: dict[str, tuple[list[str], bytes | None, Path]] = {
        "status show": (["status", "show"], None, repo),
        "get T": (["get", "topic-0001"], None, repo),
        "put T": (["put", "topic-0002", "--expect", "3", "-f", "-"], b"new body\n", repo),
        "ls": (["ls"], None, repo),
        "begin --hook claude": (["begin", "--hook", "claude"], session_start(repo), repo),
        "end --hook claude": (["end", "--hook", "claude"], stop, repo),
        "guard --hook claude": (["guard", "--hook", "claude"], pre_tool(repo, "src/m7.py"),
                                repo),
        "guard --hook claude (Bash)": (["guard", "--hook", "claude"],
                                       json.dumps(bash).encode(), repo),
        "news --hook claude": (["news", "--hook", "claude"], post_tool(repo), repo),
        "task ls --ready": (["task", "ls", "--ready"], None, repo),
        "task next --for 1h": (["task", "next", "--for", "1h"], None, repo),
        "check --links-only": (["check", "--links-only"], None, site),
        "check --links-only (no mkdocs.yml)": (["check", "--links-only"], None, notes),
        "--version": (["--version"], None, repo),
    }
    runs: dict[str, set[str]] = {}
    for when in ("cold", "warm"):
        for name, (args, stdin, cwd) in commands.items():
            if name == "put T" and when == "warm":
                args = [*args[:3], "4", *args[4:]]  # the cold run wrote version 4
            done = subprocess.run([sys.executable, "-c", RUN, *args], input=stdin, env=env,
                                  cwd=cwd, capture_output=True, check=False)
            said = done.stderr.decode().rpartition(MODULES)[2].split()
            if "atlas_files.launch" not in said:
                raise SystemExit(f"{name}: no module list; stderr: {done.stderr[-500:]!r}")
            runs[f"{name} ({when})"] = set(said)
    return runs


def _commands(runs: list[str]) -> str:
    """The names of ``runs``, a command run both cold and warm named once."""
    said: dict[str, list[str]] = {}
    for run in runs:
        command, _, when = run.rpartition(" (")
        said.setdefault(command, []).append(when.rstrip(")"))
    return ", ".join(c if len(w) == 2 else f"{c} ({w[0]} only)" for c, w in said.items())


def _added(module: str, target: str) -> list[tuple[str, int]]:
    """(module, self us) that ``import target`` loads in a process that imported
    ``module``."""
    code = (f"import {module}\nimport sys\nsys.stderr.write({MARK!r} + '\\n')\n"
            f"import {target}\n")
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                          capture_output=True, check=False, text=True)
    return _importtime(done.stderr.partition(MARK)[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--leases", type=int, default=20)
    parser.add_argument("--all", action="store_true", help="print the off-path rows too")
    args = parser.parse_args()
    start = time.perf_counter()
    found = deferred_imports()
    with tempfile.TemporaryDirectory(prefix="atlas-bench-deferred-") as name:
        runs = _runs(Path(name), args.topics, args.leases)
    counts = {"pays": 0, "does not pay": 0, "off these paths": 0}
    print(f"{len(found)} deferred imports in "
          f"{len({d.module for d in found})} modules; {len(runs)} runs "
          f"({len(runs) // 2} commands, cold and warm)")
    print(f"{'module':<34} {'line':>4}  {'target':<36} {'verdict':<15} us  saves")
    for d in found:
        meeting = [run for run, modules in runs.items() if d.module in modules]
        saved = {run: [t for t in d.targets if t not in runs[run]] for run in meeting}
        saved = {run: ts for run, ts in saved.items() if ts}
        verdict = ("off these paths" if not meeting else "pays" if saved else "does not pay")
        counts[verdict] += 1
        if verdict == "off these paths" and not args.all:
            continue
        cost, saves = "", ""
        if saved:
            loaded = dict(row for t in d.targets for row in _added(d.module, t))
            cost = str(max(sum(us for m, us in loaded.items() if m not in runs[run])
                           for run in saved))
            saves = _commands(list(saved))
        print(f"{d.module.removeprefix('atlas_files.'):<34} {d.line:>4}  "
              f"{', '.join(d.targets):<36} {verdict:<15} {cost:>5}  {saves}")
    print("counts: " + ", ".join(f"{v} {k}" for k, v in counts.items())
          + f" ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
