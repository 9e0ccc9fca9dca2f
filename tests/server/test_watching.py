"""What the command server reads ahead and keeps (server/watching.py, storage/watched.py):
each project's task queue, and each project's topics with their latest versions.

Its promise is the cache's: it only ever saves time. A served command answers exactly as
an unserved one, whatever changed in a kept folder and however (atlas, a hand edit that
puts the file's times back, a removal, a gap in the versions, a folder swapped for
another); and while nothing changed, the kept copy is what served commands use (the
server reads the folder ahead once, not at every command).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cmdserver import server_status, through, wait_for
from support.runner import Result, run_atlas

from atlas_files.facts import timeutil
from atlas_files.protocol import tasks
from atlas_files.server import wire
from atlas_files.storage import entries, frontmatter
from atlas_files.storage.record import Record

pytestmark = pytest.mark.skipif(not wire.supported(), reason="the server needs Linux")


def _queue(root: Path, titles: int = 4) -> Path:
    Record.init(root, ["web"])
    for i in range(titles):
        added = run_atlas("--record", str(root), "--as", "ann", "task", "add", f"step {i}",
                          "--why", f"because {i}")
        assert added.returncode == 0, added.stderr
    return tasks.folder(Record(root), "web")


def _status(sock: Path) -> tuple[list[str], int]:
    data = server_status(sock)
    kept = data["kept"]
    assert isinstance(kept, list)
    return [str(k) for k in kept], int(str(data["read_ahead"]))


def _kept_now(sock: Path, root: Path) -> int:
    """Have the server keep the queue of ``root``: a served listing asks for it, then the
    server reads it while idle. The number of folders it has read ahead so far."""
    where = os.path.realpath(tasks.folder(Record(root), "web"))
    through(sock, "--record", str(root), "task", "ls")
    wait_for(lambda: where in _status(sock)[0])
    return _status(sock)[1]


def _same(sock: Path, root: Path, *args: str) -> Result:
    """The served answer, checked against the unserved one."""
    argv = ("--record", str(root), "--as", "bob", *args)
    via = through(sock, *argv)
    plain = run_atlas(*argv, process=True)

    def clean(text: str) -> str:  # time left on a claim moves between the two runs
        return re.sub(r"\d+[hms][\dhms]* left|\"expires_in_s\": [\d.]+", "LEFT", text)

    assert (via.returncode, clean(via.stdout), clean(via.stderr)) == \
        (plain.returncode, clean(plain.stdout), clean(plain.stderr)), args
    return via


def test_a_kept_queue_is_what_served_commands_use_until_it_changes(
        server: Path, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    _queue(root)
    reads = _kept_now(server, root)
    for args in (("task", "ls"), ("task", "ls", "--ready", "--json"), ("task", "ls", "--all")):
        _same(server, root, *args)
    # Nothing changed: no command read the folder the slow way, so none asked for it again.
    assert _status(server)[1] == reads
    run_atlas("--record", str(root), "--as", "cy", "task", "add", "a late step")
    listed = _same(server, root, "task", "ls")
    assert "a late step" in listed.stdout
    wait_for(lambda: _status(server)[1] > reads)  # read ahead again


def _long_queue(root: Path, count: int) -> Path:
    """A queue of ``count`` tasks written as `atlas task add` writes them, without a fsync
    each (thousands in a second), dated an hour back as a queue's tasks mostly are."""
    record = Record.init(root, ["web"])
    folder = tasks.folder(record, "web")
    folder.mkdir()
    start = time.time() - 3600
    for i in range(count):
        at = datetime.fromtimestamp(start + i / 1000, UTC)
        meta: dict[str, Any] = {"id": tasks.new_id(at), "kind": "task",
                                "at": timeutil.format_time(at), "author": "ann",
                                "project": "web", "title": f"step {i}", "why": None}
        meta["digest"] = entries.digest_of_entry(meta, b"")
        (folder / f"{meta['id']}.md").write_bytes(frontmatter.render(meta, b""))
    for path in [*folder.iterdir(), folder]:
        os.utime(path, (start, start))
    return folder


def test_a_command_never_waits_for_a_queue_read_ahead(server: Path, tmp_path: Path) -> None:
    """A queue of thousands takes the server a good part of a second to read again after a
    change; a command arriving meanwhile stops that reading and runs at once, reading the
    queue itself, and answers as it would without the server. The server reads the queue
    once idle again."""
    root = tmp_path / "rec"
    _long_queue(root, 8000)
    reads = _kept_now(server, root)
    for attempt in range(3):  # a machine fast enough to read 8,000 tasks before a command
        run_atlas("--record", str(root), "--as", "cy", "task", "add", f"late {attempt}")
        listed = _same(server, root, "task", "ls", "--ready", "--json")
        assert f"late {attempt}" in listed.stdout
        if int(str(server_status(server)["read_ahead_stopped"])) > 0:
            break
    assert int(str(server_status(server)["read_ahead_stopped"])) > 0
    wait_for(lambda: _status(server)[1] > reads)  # read again once idle
    kept = _status(server)[1]
    taken = through(server, "--record", str(root), "--as", "bob", "task", "next", "--for", "1h")
    assert taken.returncode == 0 and "step 0" in taken.stdout, taken.stderr
    _same(server, root, "task", "ls", "--ready", "--json")  # without the claimed one
    assert _status(server)[1] == kept  # a claim changes no task file: the copy stays


def _add(root: Path, folder: Path) -> None:
    run_atlas("--record", str(root), "--as", "cy", "task", "add", "added by another")


def _remove(root: Path, folder: Path) -> None:
    victim = sorted(folder.glob("*.md"))[0]
    victim.unlink()


def _edit_in_place(root: Path, folder: Path) -> None:
    """A hand edit a stat-trusting cache would miss: the same size, the times put back."""
    victim = sorted(p for p in folder.glob("*.md") if p.name.count(".") == 1)[-1]
    before = victim.stat()
    victim.chmod(0o644)
    text = victim.read_text()
    edited = re.sub(r"step (\d)", lambda m: "STEP " + m.group(1), text)
    with open(victim, "r+", encoding="utf-8") as fh:  # in place: the inode stays
        fh.write(edited)
    victim.chmod(0o444)
    os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))


def _done(root: Path, folder: Path) -> None:
    first = sorted(p.name[:-3] for p in folder.glob("*.md") if p.name.count(".") == 1)[0]
    run_atlas("--record", str(root), "--as", "cy", "task", "done", first, "--why", "shipped")


def _claim(root: Path, folder: Path) -> None:
    run_atlas("--record", str(root), "--as", "cy", "task", "next", "--for", "1h")


def _damage(root: Path, folder: Path) -> None:
    (folder / "01ZZZZZZZZZZZZZZ.md").write_text("not a task\n")


def _swap_folder(root: Path, folder: Path) -> None:
    """The folder replaced by a copy with one task less: another inode at the same path."""
    spare = folder.with_name("tasks-copy")
    shutil.copytree(folder, spare)
    sorted(spare.glob("*.md"))[-1].unlink()
    shutil.rmtree(folder)
    spare.rename(folder)


def _claim_folders(root: Path) -> list[Path]:
    leases = root / "leases"
    return sorted(leases.glob("task.*")) if leases.is_dir() else []


def _release(root: Path, folder: Path) -> None:
    taken = run_atlas("--record", str(root), "--as", "cy", "task", "next", "--for", "1h",
                      "--json")
    picked = taken.json()["task"] if taken.returncode == 0 else None
    if picked:
        run_atlas("--record", str(root), "--as", "cy", "task", "release", picked["id"])


def _lease_damaged(root: Path, folder: Path) -> None:
    """The newest generation of a claim rewritten by hand."""
    _claim(root, folder)
    newest = max(_claim_folders(root)[0].iterdir())
    newest.chmod(0o644)
    newest.write_text("{not json")


def _lease_removed(root: Path, folder: Path) -> None:
    _claim(root, folder)
    shutil.rmtree(_claim_folders(root)[-1])


CHANGES: dict[str, Callable[[Path, Path], None]] = {
    "add": _add, "remove": _remove, "edit in place": _edit_in_place, "done": _done,
    "claim": _claim, "damage": _damage, "swap folder": _swap_folder, "release": _release,
    "lease damaged": _lease_damaged, "lease removed": _lease_removed,
}


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(sorted(CHANGES)), min_size=1, max_size=4))
def test_every_change_to_a_kept_queue_is_seen_by_the_next_served_command(
        server: Path, tmp_path_factory: pytest.TempPathFactory, changes: list[str]) -> None:
    """The adversarial generator of this cache: sequences of changes, each made while the
    queue is kept, each followed by served commands that must answer as unserved ones."""
    root = tmp_path_factory.mktemp("rec") / "rec"
    folder = _queue(root)
    for change in changes:
        _kept_now(server, root)
        CHANGES[change](root, folder)
        _same(server, root, "task", "ls", "--all")
        _same(server, root, "task", "ls", "--ready", "--json")


def test_every_change_is_seen_when_made_one_at_a_time(server: Path, tmp_path: Path) -> None:
    """Each change of the generator by itself, so a failure names it."""
    for name, change in CHANGES.items():
        root = tmp_path / name.replace(" ", "-") / "rec"
        folder = _queue(root)
        _kept_now(server, root)
        change(root, folder)
        _same(server, root, "task", "ls", "--all")
        ready = run_atlas("--record", str(root), "task", "ls", "--ready", "--json").json()
        taken = through(server, "--record", str(root), "--as", "dee", "task", "next",
                        "--for", "10m", "--json")
        assert taken.returncode == 0, (name, taken.stderr)
        # The oldest ready task now, never one the change finished, took or removed.
        assert taken.json()["task"]["id"] == ready["tasks"][0]["id"], name


# -- the topics: ls, feed and begin read every topic's latest version -----------------------


def _topics(root: Path, count: int = 4) -> Path:
    Record.init(root, ["web"])
    for i in range(count):
        for _version in range(3):
            put = run_atlas("--record", str(root), "--as", "ann", "put", f"t{i}",
                            "--summary", f"step {i}", input=f"body of t{i}\n")
            assert put.returncode == 0, put.stderr
    return root / "projects" / "web" / "artifacts"


def _topics_kept(sock: Path, root: Path) -> int:
    where = os.path.realpath(root / "projects" / "web" / "artifacts")
    through(sock, "--record", str(root), "ls")
    wait_for(lambda: where in _status(sock)[0])
    return _status(sock)[1]


def _put(root: Path, folder: Path) -> None:
    run_atlas("--record", str(root), "--as", "cy", "get", "t1")
    run_atlas("--record", str(root), "--as", "cy", "put", "t1", "--summary", "cy's turn",
              input="cy's body\n")


def _versions(topic: Path) -> list[Path]:
    return sorted(topic.glob("*.v*.md")) if topic.is_dir() else []


def _gap(root: Path, folder: Path) -> None:
    """A version in the middle removed: the latest is still the highest present."""
    (folder / "t2" / "t2.v0002.md").unlink(missing_ok=True)


def _latest_removed(root: Path, folder: Path) -> None:
    versions = _versions(folder / "t0")
    if len(versions) > 1:
        versions[-1].unlink()


def _hand_added(root: Path, folder: Path) -> None:
    """A version added by hand that skips a number."""
    versions = _versions(folder / "t3")
    if versions and not (folder / "t3" / "t3.v0007.md").exists():
        text = (folder / "t3" / "t3.v0003.md").read_text()
        (folder / "t3" / "t3.v0007.md").write_text(
            text.replace("version: 3", "version: 7").replace("step 3", "by hand"))


def _latest_edited_in_place(root: Path, folder: Path) -> None:
    victim = folder / "t1" / "t1.v0003.md"
    if not victim.exists():
        return
    before = victim.stat()
    victim.chmod(0o644)
    text = victim.read_text()
    with open(victim, "r+", encoding="utf-8") as fh:
        fh.write(text.replace("step 1", "STEP 1"))
    victim.chmod(0o444)
    os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))


def _new_topic(root: Path, folder: Path) -> None:
    run_atlas("--record", str(root), "--as", "cy", "put", "fresh", "--summary", "new",
              input="new\n")


def _topic_removed(root: Path, folder: Path) -> None:
    shutil.rmtree(folder / "t2", ignore_errors=True)


def _topic_renamed(root: Path, folder: Path) -> None:
    if (folder / "t3").exists() and not (folder / "t9").exists():
        (folder / "t3").rename(folder / "t9")


def _latest_damaged(root: Path, folder: Path) -> None:
    versions = _versions(folder / "t0")
    if versions:
        versions[-1].chmod(0o644)
        versions[-1].write_text("not a version\n")


TOPIC_CHANGES: dict[str, Callable[[Path, Path], None]] = {
    "put": _put, "gap": _gap, "latest removed": _latest_removed, "hand added": _hand_added,
    "latest edited in place": _latest_edited_in_place, "new topic": _new_topic,
    "topic removed": _topic_removed, "topic renamed": _topic_renamed,
    "latest damaged": _latest_damaged,
}


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(sorted(TOPIC_CHANGES)), min_size=1, max_size=4))
def test_every_change_to_kept_topics_is_seen_by_the_next_served_command(
        server: Path, tmp_path_factory: pytest.TempPathFactory, changes: list[str]) -> None:
    root = tmp_path_factory.mktemp("rec") / "rec"
    folder = _topics(root)
    for change in changes:
        _topics_kept(server, root)
        TOPIC_CHANGES[change](root, folder)
        for args in (("ls",), ("ls", "--json"), ("feed",), ("feed", "--json")):
            _same(server, root, *args)


def test_every_topic_change_is_seen_when_made_one_at_a_time(
        server: Path, tmp_path: Path) -> None:
    for name, change in TOPIC_CHANGES.items():
        root = tmp_path / name.replace(" ", "-") / "rec"
        folder = _topics(root)
        _topics_kept(server, root)
        change(root, folder)
        _same(server, root, "ls")
        _same(server, root, "feed", "--json")


def test_kept_topics_are_what_served_listings_use_until_one_changes(
        server: Path, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    folder = _topics(root)
    reads = _topics_kept(server, root)
    for args in (("ls",), ("feed",), ("ls", "--json")):
        _same(server, root, *args)
    assert _status(server)[1] == reads  # nothing changed: nothing read again
    _put(root, folder)
    wait_for(lambda: _status(server)[1] > reads)  # what changed, read again
    listed = _same(server, root, "ls")
    assert "cy's turn" in listed.stdout


def test_topics_that_could_change_unseen_are_never_kept(
        server: Path, tmp_path: Path) -> None:
    """A latest version with another name elsewhere, a topic that is a symlink: the
    listings read the folder every time, and still answer as unserved ones."""
    for case in ("hard link", "symlink"):
        root = tmp_path / case.replace(" ", "-") / "rec"
        folder = _topics(root)
        if case == "hard link":
            os.link(folder / "t1" / "t1.v0003.md", tmp_path / f"{case}.md")
        else:
            (folder / "t5").symlink_to(folder / "t1")
        through(server, "--record", str(root), "ls")
        through(server, "--record", str(root), "ls")
        where = os.path.realpath(folder)
        assert where not in _status(server)[0], case
        _same(server, root, "ls")
