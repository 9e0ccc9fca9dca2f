"""Work items: add, ls, show, claim, next, done, drop, release.

Every result's JSON carries each task's state computed when read (atlas_files.protocol.tasks
``state_of``). A claim is a lease on ``task.<id>``, so it syncs, expires and is capped as
every lease is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from atlas_files.api import Worker, reads, writes
from atlas_files.facts.errors import LeaseHeld
from atlas_files.protocol import leases, tasks
from atlas_files.protocol.tasks import ADVISORY, TaskState, Unreadable

__all__ = ["ADVISORY", "TaskList", "TaskPicked", "TaskView", "add", "claim", "done", "drop",
           "ls", "next_", "release", "show"]


# Named tuples rather than dataclasses: `task ls` and `task next` start before click, and
# the dataclasses module would import inspect into both.
class TaskView(NamedTuple):
    """One task as it stands, with its history when shown."""

    state: TaskState
    history: tuple[dict[str, Any], ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out = self.state.to_json()
        if self.history is not None:
            out["history"] = list(self.history)
        return out


class TaskPicked(NamedTuple):
    """What `task next` took, or None when nothing was ready."""

    state: TaskState | None

    def to_json(self) -> dict[str, Any]:
        return {"task": self.state.to_json() if self.state else None}


class TaskList(NamedTuple):
    project: str
    tasks: tuple[TaskState, ...]
    unreadable: tuple[Unreadable, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"project": self.project, "advisory": ADVISORY,
                "tasks": [t.to_json() for t in self.tasks],
                "unreadable": [u.to_json() for u in self.unreadable]}


def _seconds(duration: str | float) -> float:
    seconds = leases.parse_duration(duration) if isinstance(duration, str) else duration
    assert seconds is not None
    return seconds


def _given(duration: str | float) -> str | None:
    return duration if isinstance(duration, str) else None


@writes("task add")
def add(worker: Worker, title: str, why: str | None = None, after: Sequence[str] = (),
        paths: Sequence[str] = ()) -> TaskView:
    """A new task (ready, or blocked while a task of ``after`` is not done)."""
    return TaskView(tasks.add(worker.record, worker.project_name, title=title,
                              author=worker.author, why=why, after=after, paths=paths))


@reads
def ls(worker: Worker, ready: bool = False, all_: bool = False, mine: bool = False) -> TaskList:
    """Every task not done or dropped, oldest first; ``ready``: only those ready to claim;
    ``all_``: done and dropped too; ``mine``: only those this identity holds."""
    project = worker.project_name
    board = tasks.read_board(worker.record, project, full=all_)
    found = tasks.states(worker.record, board)
    if ready:
        found = [t for t in found if t.state == "ready"]
    elif not all_:
        found = [t for t in found if t.state not in ("done", "dropped")]
    if mine:
        found = [t for t in found if t.state == "claimed" and t.holder == worker.identity]
    return TaskList(project, tuple(found), board.unreadable)


@reads
def show(worker: Worker, task: str) -> TaskView:
    """The task with its history: each claim, renewal, release and expiry of its lease,
    and each entry, by time."""
    board = tasks.read_board(worker.record, worker.project_name)
    task_id = tasks.resolve(board, task)
    return TaskView(tasks.one_state(worker.record, board, task_id),
                    tuple(tasks.history(worker.record, board, task_id)))


@writes("task claim", "task")
def claim(worker: Worker, task: str, duration: str | float) -> TaskView:
    """Claim ``task`` (a unique prefix of its id) for ``duration``; claiming it again
    renews. Exit 3 if done or dropped, 4 if another holds it, 2 if blocked."""
    return TaskView(tasks.claim(worker.record, worker.project_name, task,
                                holder=worker.author, duration_s=_seconds(duration),
                                given=_given(duration)))


# How often `task next` starts again after its claim lost the push to another clone.
NEXT_TRIES = 8


def next_(worker: Worker, duration: str | float) -> TaskPicked:
    """Claim the oldest ready task, the next one on a lost race; None if none is ready.
    On a record that syncs, a claim that lost the push to another clone (LeaseHeld) is
    started again from a fresh fetch, so it takes the next task there too."""
    for _ in range(NEXT_TRIES - 1):
        try:
            return _next_once(worker, duration)
        except LeaseHeld:
            continue
    return _next_once(worker, duration)


@writes("task next")
def _next_once(worker: Worker, duration: str | float) -> TaskPicked:
    return TaskPicked(tasks.next_task(worker.record, worker.project_name,
                                      holder=worker.author, duration_s=_seconds(duration),
                                      given=_given(duration)))


@writes("task done", "task")
def done(worker: Worker, task: str, why: str | None = None, link: str | None = None
         ) -> TaskView:
    return TaskView(tasks.end(worker.record, worker.project_name, task, "done",
                              author=worker.author, why=why, link=link))


@writes("task drop", "task")
def drop(worker: Worker, task: str, why: str, link: str | None = None) -> TaskView:
    return TaskView(tasks.end(worker.record, worker.project_name, task, "dropped",
                              author=worker.author, why=why, link=link))


@writes("task release", "task")
def release(worker: Worker, task: str) -> TaskView:
    return TaskView(tasks.release(worker.record, worker.project_name, task,
                                  holder=worker.author))
