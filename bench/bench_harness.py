"""What atlas's hooks add to a real Claude Code session, as ratios of the start-up floor.

    python bench/bench_harness.py [--rounds 8] [--topics 200]

The pinned Claude Code (tests/support/harness_tools.py; the suite installs it into
$ATLAS_HARNESS_CACHE or ~/.cache/atlas-files-tests/harnesses) runs one scripted session
of one turn (tests/support/scripted_model.py) in a project that is a record of
``--topics`` topics, in four settings, interleaved round by round:

* no hooks;
* only the SessionStart hook (`atlas --as alice begin --hook claude`);
* only the Stop hook (`atlas --as alice end --hook claude`, fired once at the turn's end);
* both, as `atlas setup claude` installs them;
* a SessionStart hook, and a Stop hook, that do nothing (`true`): what Claude Code itself
  spends on starting a hook, printed beside the figures (the targets count it in).

The added wall time per session (SessionStart) and per turn (Stop) is the median session
with the hook less the median session without, each divided by the floor
`python -c "import click, yaml"` timed in the same rounds. Then the same through a command
server (ATLAS_SERVER, docs/server.md), which the hooks inherit from the session.
Targets: <= 1.3x the floor plain, <= 0.6x served. A session takes seconds and a hook a
tenth of one, so the difference is noisy: take many rounds on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _common import atlas_argv, clean_env, command_server  # noqa: E402
from support.harness_tools import PINS, cache_root  # noqa: E402
from support.scripted_model import ANTHROPIC, Say, ScriptedModel, turn  # noqa: E402
from support.sessions import claude_session  # noqa: E402

SETTINGS = ("none", "start", "stop", "both", "noop-start", "noop-stop")


def claude_binary() -> Path:
    pin = PINS["claude"]
    path = cache_root() / pin.folder / "node_modules" / ".bin" / pin.command
    if not path.exists():
        sys.exit(f"no {pin.package}@{pin.version} at {path}: run the suite's harness tests "
                 "once (they install it), or set ATLAS_HARNESS_CACHE")
    return path


def make_project(root: Path, topics: int, setting: str) -> None:
    env = clean_env()
    subprocess.run([*atlas_argv(), "init", str(root)], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    for i in range(topics):
        subprocess.run([*atlas_argv(), "--record", str(root), "--as", "ann", "put",
                        f"topic-{i:04d}"], input=b"text\n", check=True, env=env,
                       stdout=subprocess.DEVNULL)
    if setting == "none":
        return
    if setting.startswith("noop-"):
        event = "SessionStart" if setting == "noop-start" else "Stop"
        (root / ".claude").mkdir(exist_ok=True)
        (root / ".claude" / "settings.json").write_text(json.dumps(
            {"hooks": {event: [{"hooks": [{"type": "command", "command": "true"}]}]}}))
        return
    subprocess.run([*atlas_argv(), "setup", "claude", "--as", "alice", "--dir", str(root)],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    settings = root / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    drop = {"start": "Stop", "stop": "SessionStart"}.get(setting)
    if drop:
        del data["hooks"][drop]
    settings.write_text(json.dumps(data))


def session_seconds(claude: Path, project: Path, home: Path, env: dict[str, str]) -> float:
    with ScriptedModel(ANTHROPIC, [turn(Say("Nothing to do."))]) as model:
        run = claude_session(claude, project, "Say hello.", model, home=home, env=env)
    if run.returncode != 0:
        raise RuntimeError(run.stderr[-2000:])
    return run.seconds


def floor_seconds() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import click, yaml"], check=True)
    return time.perf_counter() - start


def measure(claude: Path, projects: dict[str, Path], home: Path, rounds: int,
            env: dict[str, str]) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in (*SETTINGS, "floor")}
    for project in projects.values():  # one warm-up each
        session_seconds(claude, project, home, env)
    for _ in range(rounds):
        for name, project in projects.items():
            samples[name].append(session_seconds(claude, project, home, env))
        samples["floor"].append(floor_seconds())
    return {name: statistics.median(values) for name, values in samples.items()}


def report(label: str, medians: dict[str, float]) -> None:
    floor = medians["floor"]
    print(f"{label}: floor (import click, yaml) {floor * 1000:.0f} ms; sessions "
          + ", ".join(f"{name} {medians[name]:.2f} s" for name in SETTINGS))
    for name, what in (("start", "SessionStart, per session"), ("stop", "Stop, per turn"),
                       ("both", "both hooks, per one-turn session")):
        added = medians[name] - medians["none"]
        print(f"  {what}: +{added * 1000:.0f} ms = {added / floor:.2f}x the floor")
    for name, what in (("noop-start", "SessionStart"), ("noop-stop", "Stop")):
        added = medians[name] - medians["none"]
        print(f"  a {what} hook that does nothing (`true`): +{added * 1000:.0f} ms = "
              f"{added / floor:.2f}x the floor (Claude Code's own cost of a hook)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--topics", type=int, default=200)
    args = parser.parse_args()
    claude = claude_binary()
    with tempfile.TemporaryDirectory(prefix="atlas-bench-harness-") as tmp:
        base = Path(tmp)
        home = base / "home"
        home.mkdir()
        projects = {}
        for setting in SETTINGS:
            projects[setting] = base / setting
            make_project(projects[setting], args.topics, setting)
        report("plain", measure(claude, projects, home, args.rounds, {}))
        with command_server(clean_env()) as served:
            report("through the command server", measure(
                claude, projects, home, args.rounds, {"ATLAS_SERVER": served["ATLAS_SERVER"]}))


if __name__ == "__main__":
    main()
