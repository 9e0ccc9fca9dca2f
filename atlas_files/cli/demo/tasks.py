"""Demo scene: two sessions start at once and each takes the next ready task: they get
different ones, a claim of the other's is refused (exit 4), and a finished task frees the
one that waited for it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

from atlas_files.cli import demo
from atlas_files.protocol import tasks
from atlas_files.storage.record import Record


def _next_at_once(record: Record, who: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """`atlas task next --for 1h --json` as each of ``who``, started together, the way
    sessions that start at nine all reach for the queue."""
    procs = {w: subprocess.Popen(
        [sys.executable, "-m", "atlas_files", "--record", str(record.root), "--as", w,
         "-p", "web", "task", "next", "--for", "1h", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE) for w in who}
    out = {}
    for w, proc in procs.items():
        stdout, _ = proc.communicate()
        out[w] = json.loads(stdout)["task"]
    return out


def scene(record: Record, say: Callable[[str], None]) -> None:
    say("\n== tasks: two sessions start at once and take different work ==")
    data = tasks.add(record, "web", title="collect the evaluation data", author="alice",
                     why="the status says evaluation is next")
    tasks.add(record, "web", title="write the evaluation script", author="alice",
              paths=["src/eval/"])
    tasks.add(record, "web", title="run the evaluation", author="alice", after=[data.id])
    say("alice added three tasks; the third waits for the first (`atlas task add ... "
        "--after ID`)")
    taken = _next_at_once(record, ("bob", "carol"))
    for who, task in taken.items():
        say(f"{who}: atlas task next --for 1h -> {task['id']} {task['title']!r}")
    ids = {task["id"] for task in taken.values()}
    say(f"two claims, {len(ids)} different tasks: each claim is a lease, one compare-and-set")
    bobs = taken["bob"]["id"]
    code, _, err = demo.atlas_cli(record, "carol", "-p", "web", "task", "claim", bobs,
                                  "--for", "1h")
    say(f"carol: atlas task claim {bobs} --for 1h -> exit {code}")
    for line in err.splitlines():
        say(f"    {line}")
    for who, task in taken.items():
        tasks.end(record, "web", task["id"], "done", author=who, why="finished")
    board = tasks.read_board(record, "web")
    for st in tasks.states(record, board):
        say(f"    {st.id}  {st.state:<8} {st.task.title}")
    say("both finished (`atlas task done ID`): the task that waited is ready now")
