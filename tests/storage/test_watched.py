"""When a served worker may take what the command server read (storage/watched.py), with a
real kernel queue (server/watching.py's) in this process: a change made while the command
runs, by the command itself or by anyone, is never answered from the kept copy."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.runner import run_atlas

from atlas_files.protocol import tasks
from atlas_files.server import watching, wire
from atlas_files.storage import watched
from atlas_files.storage.record import Record

pytestmark = pytest.mark.skipif(not wire.supported(), reason="the kernel queue is Linux's")


@pytest.fixture
def server_side(monkeypatch: pytest.MonkeyPatch) -> Iterator[watching.Watching]:
    """The server's watching, made in this process; the module state it sets is put back."""
    for name, value in (("_serving", None), ("_kept", {}), ("_stale", frozenset()),
                        ("_seq", -1), ("_wanted", {})):
        monkeypatch.setattr(watched, name, value)
    monkeypatch.setattr(watching, "_writer", None)
    made = watching.Watching()
    yield made
    made.queue.close()


def _queue(root: Path) -> Path:
    Record.init(root, ["web"])
    for i in range(3):
        run_atlas("--record", str(root), "--as", "ann", "task", "add", f"step {i}")
    return tasks.folder(Record(root), "web")


def _read_ahead(side: watching.Watching, root: Path) -> None:
    side._asked[("tasks", str(root), "web")] = None
    assert side.read_ahead(lambda: False)


def test_a_change_made_while_a_command_runs_is_never_answered_from_the_kept_copy(
        server_side: watching.Watching, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    folder = _queue(root)
    _read_ahead(server_side, root)
    watched.handed_over([], server_side.count)  # as a worker is handed its command
    assert watched.kept(folder) is not None
    # The command itself (or anyone) writes to the folder: the event waits on the queue.
    run_atlas("--record", str(root), "--as", "bob", "task", "add", "mid-command")
    assert watched.kept(folder) is None
    assert len(tasks.read_board(Record(root), "web").tasks) == 4
    # The server drains it meanwhile (another command's hand-over): still not trusted.
    server_side.drain()
    assert watched.kept(folder) is None


def test_a_folder_changed_since_the_worker_was_forked_is_not_taken(
        server_side: watching.Watching, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    folder = _queue(root)
    _read_ahead(server_side, root)
    where = os.path.realpath(folder)
    watched.handed_over([where], server_side.count)
    assert watched.kept(folder) is None
    watched.handed_over(None, server_side.count)  # the queue overflowed meanwhile
    assert watched.kept(folder) is None


def test_nothing_is_taken_outside_a_served_worker(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    folder = _queue(root)
    watched.want("tasks", str(root), "web")
    assert watched.wanted() == []
    assert watched.kept(folder) is None


def test_a_folder_with_a_file_linked_elsewhere_is_never_kept(
        server_side: watching.Watching, tmp_path: Path) -> None:
    """Written through its other name, a file changes with no event for its folder."""
    root = tmp_path / "rec"
    folder = _queue(root)
    os.link(sorted(folder.iterdir())[0], tmp_path / "elsewhere.md")
    server_side._asked[("tasks", str(root), "web")] = None
    assert not server_side.read_ahead(lambda: False)
    assert watched.held() == []


def test_only_local_file_systems_are_watched(tmp_path: Path) -> None:
    """A shared volume's changes made by another machine never reach this kernel's queue;
    proc and sysfs stand in for any file system not on the list."""
    assert not watching.local("/proc/self")
    assert not watching.local("/sys")
    dev = os.stat(tmp_path).st_dev
    kinds = {line.split(" - ", 1)[1].split()[0]
             for line in Path("/proc/self/mountinfo").read_text().splitlines()
             if line.split()[2] == f"{os.major(dev)}:{os.minor(dev)}"}
    assert watching.local(str(tmp_path)) == (len(kinds) == 1 and kinds <= watching.LOCAL)


def test_a_checkpoint_stops_only_the_servers_own_reading(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Outside the server's reading a checkpoint does nothing; within it, it stops the
    reading (and only there) once a command waits, and asks at most every LOOK_S."""
    monkeypatch.setattr(watched, "_waits", None)
    folder = _queue(tmp_path / "rec")
    watched.checkpoint()
    asked: list[bool] = []
    waiting = False

    def waits() -> bool:
        asked.append(waiting)
        return waiting

    monkeypatch.setattr(watched, "LOOK_S", 3600.0)
    watched.stop_reading_when(waits)
    watched.checkpoint()
    watched.checkpoint()
    assert asked == [False]  # asked once: the second came within LOOK_S
    monkeypatch.setattr(watched, "LOOK_S", 0.0)
    waiting = True
    with pytest.raises(watched.Stopped):
        tasks.snapshot(Record(folder.parents[2]), "web")  # a reading of the queue stops
    watched.stop_reading_when(None)
    assert tasks.snapshot(Record(folder.parents[2]), "web")["open_ids"]  # and reads whole
