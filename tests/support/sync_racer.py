"""One clone's part in a sync race (run by test_sync_race.py as a child process).

    sync_racer.py puts   RECORD IDENTITY WORKDIR N   read and write topic `plan` N times
    sync_racer.py lease  RECORD IDENTITY WORKDIR N   claim `gpu0` in each of N rounds
    sync_racer.py decide RECORD IDENTITY WORKDIR N   record N decisions

Each waits for WORKDIR/go (or go-ROUND) so that every racer starts at once, runs `atlas`
in this process (auto sync is on in the record), and writes what each call returned to
WORKDIR as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

# Run as a script, this folder is sys.path[0]: tests/ takes its place, as under pytest.
sys.path[0] = str(Path(__file__).resolve().parents[1])
from support.gitteam import cli  # noqa: E402


def wait_for(path: Path, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {path.name}")
        time.sleep(0.01)


def write_json(path: Path, data: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.rename(path)


def puts(root: Path, who: str, work: Path, n: int) -> None:
    wait_for(work / "go")
    results = []
    for i in range(n):
        cli(root, "get", "plan", identity=who)  # read first (fails while plan has none)
        body = f"body of {who} number {i}\n"
        source = work / f"{who}-{i}.txt"
        source.write_text(body)
        code, _, err = cli(root, "put", "plan", "-f", str(source), identity=who)
        results.append({"body": body, "code": code, "err": err})
    write_json(work / f"result-{who}.json", results)


def lease(root: Path, who: str, work: Path, n: int) -> None:
    for r in range(n):
        wait_for(work / f"go-{r}")
        code, _, err = cli(root, "lease", "claim", "gpu0", "--for", "1h", "--why",
                           f"round {r}", identity=who)
        write_json(work / f"claim-{r}-{who}.json", {"code": code, "err": err})
        if code == 0:
            wait_for(work / f"release-{r}")
            code, _, err = cli(root, "lease", "release", "gpu0", identity=who)
            write_json(work / f"released-{r}.json", {"code": code, "err": err})


def decide(root: Path, who: str, work: Path, n: int) -> None:
    wait_for(work / "go")
    results = []
    for i in range(n):
        code, _, err = cli(root, "decide", "--topic", f"{who} {i}", "--recommended", "a",
                           "--chosen", "a", "--relation", "agreed", "--why", "race",
                           identity=who)
        results.append({"code": code, "err": err})
    write_json(work / f"result-{who}.json", results)


if __name__ == "__main__":
    mode, record, identity, workdir, count = sys.argv[1:6]
    {"puts": puts, "lease": lease, "decide": decide}[mode](
        Path(record), identity, Path(workdir), int(count))
