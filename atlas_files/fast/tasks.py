"""`atlas task ls` and `atlas task next`, answered before click is imported.

Agents run these two at every turn, and click's import is about a third of the start-up
floor they are measured against (bench/bench_tasks.py). ``parse`` takes exactly the
command lines these answer: the global options, then `task ls` with any of `--ready`,
`--all`, `--mine`, `--json`, or `task next --for DURATION` with `--json` and one of
`--sync`, `--no-sync`. Anything else (`--help`, a global option after the command, a
typo) is left to the full CLI (cli/tasks.py), whose commands render through the same
functions here, so both give the same output, errors and exit codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from atlas_files.api import Worker
from atlas_files.api import tasks as api
from atlas_files.facts import environment, timeutil
from atlas_files.facts.text import escape_controls
from atlas_files.fast import output
from atlas_files.fast.answer import answer
from atlas_files.protocol.tasks import TaskState
from atlas_files.storage import watched

if TYPE_CHECKING:
    from collections.abc import Iterable

_LS_FLAGS = {"--ready": "ready", "--all": "all_", "--mine": "mine", "--json": "as_json"}


class Request(NamedTuple):
    """A command line this module answers."""

    verb: str  # ls | next
    record_path: str | None
    identity: str | None
    project: str | None
    flags: frozenset[str]  # of _LS_FLAGS' values
    duration: str | None = None
    sync: bool | None = None


def parse(found: dict[str, str | None], rest: list[str]) -> Request | None:
    """``rest`` after the global options ``found`` (launch.split_globals), if it is a
    command line of this module's; else None."""
    if len(rest) < 2 or rest[0] != "task" or rest[1] not in ("ls", "next"):
        return None
    given = environment.options(found)
    flags: set[str] = set()
    duration: str | None = None
    sync: bool | None = None
    args = rest[2:]
    i = 0
    while i < len(args):
        arg = args[i]
        if rest[1] == "ls" and arg in _LS_FLAGS:
            flags.add(_LS_FLAGS[arg])
        elif rest[1] == "next" and arg == "--json":
            flags.add("as_json")
        elif rest[1] == "next" and arg in ("--sync", "--no-sync") and sync is None:
            sync = arg == "--sync"
        elif rest[1] == "next" and duration is None and arg.startswith("--for="):
            duration = arg[len("--for="):]
        elif rest[1] == "next" and duration is None and arg == "--for" \
                and i + 1 < len(args) and not args[i + 1].startswith("-"):
            duration = args[i + 1]
            i += 1
        else:
            return None
        i += 1
    if rest[1] == "next" and duration is None:
        return None  # the full CLI says the option is missing
    return Request(rest[1], given["record_path"], given["identity"], given["project"],
                   frozenset(flags), duration, sync)


def run(request: Request) -> None:
    """Answer ``request`` as the full CLI would, and exit."""
    as_json = "as_json" in request.flags

    def command(worker: Worker) -> None:
        if request.verb == "ls":
            show_list(api.ls(worker, ready="ready" in request.flags,
                             all_="all_" in request.flags, mine="mine" in request.flags),
                      "ready" in request.flags, as_json)
        else:
            assert request.duration is not None
            picked = api.next_(worker, request.duration)
            report(picked.state, as_json, picked.to_json())

    answer(request.record_path, request.identity, request.project, request.sync, command,
           as_json)


# -- what both front ends print -------------------------------------------------------------


def line(text: str | None) -> str:
    """Record text on one line: a title or why never starts a line of atlas's own."""
    return escape_controls(" ".join((text or "").split()))


# Lines worked out ahead, by the state they show: the command server keeps each queue it
# watches with every task's state while unclaimed (protocol/tasks.snapshot), and has those
# states' lines made once (server/watching.py), so a served `task ls` of thousands prints
# them as they are. The state object itself is the key: a state worked out anew (claimed
# since, say) is another object, described anew.
# Two tables rather than one of pairs: a pair would be one more object for each task,
# which every spare of the server writes to before its command (server/spare.py).
_AHEAD: dict[int, str] = {}
_AHEAD_STATE: dict[int, TaskState] = {}
_AHEAD_OF: dict[str, list[int]] = {}  # the lines made for each queue, by its folder


def describe_ahead(folder: str, states: Iterable[TaskState]) -> None:
    """Make the lines of ``states``, those of ``folder``'s queue, in place of the lines
    made for that queue before."""
    for old in _AHEAD_OF.pop(folder, ()):
        _AHEAD.pop(old, None)
        _AHEAD_STATE.pop(old, None)
    made = _AHEAD_OF[folder] = []
    for n, st in enumerate(states):
        if not n % 1000:
            watched.checkpoint()  # the server's reading ahead may stop between lines
        _AHEAD[id(st)] = _describe(st)
        _AHEAD_STATE[id(st)] = st
        made.append(id(st))


def describe(st: TaskState) -> str:
    key = id(st)
    return _AHEAD[key] if _AHEAD_STATE.get(key) is st else _describe(st)


def describe_all(states: Iterable[TaskState]) -> str:
    """The lines of ``states``, one per line: ``describe`` of each, without a call each
    (a queue can be thousands of lines)."""
    lines, made = _AHEAD, _AHEAD_STATE.get
    return "\n".join([lines[key] if made(key := id(st)) is st else _describe(st)
                      for st in states])


def _describe(st: TaskState) -> str:
    head = f"{st.id}  {st.state:<8} {line(st.task.title)}"
    if st.state == "claimed":
        left = timeutil.format_duration(st.expires_in_s or 0)
        head += f"  [{st.holder}, {left} left]"
    elif st.state == "blocked":
        head += "  [waits for " + ", ".join(b.id for b in st.blocked_by) + "]"
    elif st.ended is not None:
        head += f"  [by {st.ended.author} at {st.ended.at}]"
    return head


def show_list(found: api.TaskList, ready: bool, as_json: bool) -> None:
    for bad in found.unreadable:
        output.say(f"atlas: warning: unreadable task file: {bad.message}")
    if as_json:
        output.emit_json(found.to_json())
    elif not found.tasks:
        output.echo("no tasks" + (" ready" if ready else ""))
    else:  # one write: a queue can be thousands of lines
        output.echo(describe_all(found.tasks))


def report(st: TaskState | None, as_json: bool, json_doc: object) -> None:
    if as_json:
        output.emit_json(json_doc)
        return
    if st is None:
        output.echo("no task is ready")
        return
    output.echo(describe(st))
    if st.task.why:
        output.echo(f"    why: {line(st.task.why)}")
    if st.task.paths:
        output.echo(f"    paths: {', '.join(st.task.paths)}")
    for b in st.blocked_by:
        output.echo(f"    blocked by {b.id} ({line(b.title)}): {line(b.why)}")
    if st.ended is not None and st.ended.why:
        output.echo(f"    {st.ended.action}: {line(st.ended.why)}")

