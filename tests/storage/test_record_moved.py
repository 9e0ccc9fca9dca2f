"""A write to a record that moved, vanished or was replaced while its command ran is
refused, never reported as written, and never creates a folder outside a record.

Each writer runs in a real child process that opens the record and then waits: the real
`atlas put`, `atlas status write` and `atlas end` wait on their body from stdin, the other
writers (decisions, corrections, retractions, the four lease changes, receipts, session
rows, telemetry rows, drafts, atlas.yaml rewrites) in a small script that opens the record
through the public API and waits for a line on stdin. While it waits, the record is moved
away, deleted, or moved away with a fresh record made where it was; then the child is let
go. It must exit 2 saying what happened and that nothing was written, and every file of
both folders must be as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.runner import atlas_command, child_env

from atlas_files.protocol import artifacts, corrections, leases, status
from atlas_files.storage import fsio
from atlas_files.storage.record import Record

pytestmark = pytest.mark.skipif(not Path("/proc/self/syscall").exists(),
                                reason="needs Linux's /proc/PID/syscall to see a child wait")

# The system call a child blocked on its stdin is in: read(2) on descriptor 0.
READ_SYSCALL = {"x86_64": "0", "aarch64": "63", "riscv64": "63", "ppc64le": "3",
                "s390x": "3"}.get(os.uname().machine)
WAIT_S = 60.0

# A writer the script below runs once the record is open: (what it writes, the call).
LIBRARY_WRITERS = {
    "decision": "decisions.decide(worker, topic='the loader', recommended='a', chosen='b', "
                "relation='disagreed', why='timing')",
    "correction": "decisions.correct(worker, 'plan@v1', 'step 1 was wrong')",
    "retraction": "decisions.retract(worker, 'plan@v1', 'no longer holds')",
    "lease claim": "leases.claim(worker, 'gpubox.gpu1', '1h', 'a run')",
    "lease renew": "leases.renew(worker, 'gpubox.gpu0', '2h')",
    "lease release": "leases.release(worker, 'gpubox.gpu0')",
    "lease break": "leases.break_(Worker(worker.record, 'bob'), 'gpubox.gpu0', 'ann is gone')",
    "receipt": "receipts.mark(worker.record, 'ann', {'main/artifacts/notes': 3})",
    "session row": "ritual.begin(worker)",
    "telemetry row": "rows.write_row(worker.record, {'machine': 'gpubox', 'reachable': False, "
                     "'observed_at': '2026-11-30T10:00:00Z', 'observer': 'ann', 'gpus': [], "
                     "'error': 'unreachable'})",
    "draft": "drafts.keep(worker.record, 'projects/main/artifacts/plan/plan.v0002.md', "
             "b'---\\nauthor: ann\\nbased_on: 1\\n---\\nmine\\n', "
             "b'---\\nauthor: bob\\n---\\ntheirs\\n')",
    "atlas.yaml": "worker.record.update_config(lambda d: {**d, 'projects': "
                  "[*d['projects'], 'extra']})",
}

CHILD = r"""
import json, sys
from atlas_files.storage import receipts
from atlas_files.api import Worker, decisions, leases, ritual
from atlas_files.facts.errors import AtlasError
from atlas_files.sync import drafts
from atlas_files.protocol.telemetry import rows
worker = Worker.open(sys.argv[1], "ann")
worker.record.config  # read, as every command does before it writes
sys.stdin.readline()  # the record is open: wait here while it is moved
try:
    try:
        exec(sys.argv[2])
    except (AtlasError, OSError) as exc:
        # What every front end does with a failure (the CLI, the MCP tools).
        explain = getattr(worker.record, "explain", lambda exc: exc)
        raise explain(exc) from None
except AtlasError as exc:
    print(json.dumps({"kind": type(exc).__name__, "message": exc.message}))
    sys.exit(exc.exit_code)
print(json.dumps({"kind": "written"}))
"""


def _env() -> dict[str, str]:
    env = child_env()
    return env | {"ATLAS_AS": "ann"}


def _make_record(root: Path) -> Record:
    record = Record.init(root)
    status.write(record, "Where things stand.\n", author="ann")
    artifacts.put(record, "plan", "# Plan\n\nstep 1\n", author="ann")
    artifacts.get(record, "plan", reader="ann")
    leases.claim(record, "gpubox.gpu0", holder="ann", duration_s=3600, why="a run")
    return record


def _snapshot(top: Path) -> dict[str, bytes | None]:
    """Every path under ``top`` (relative), with the bytes of each file; None: a folder."""
    out: dict[str, bytes | None] = {}
    for folder, dirs, names in os.walk(top):
        for name in dirs:
            out[os.path.relpath(os.path.join(folder, name), top)] = None
        for name in names:
            p = os.path.join(folder, name)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, top)] = fh.read()
    return out


def _waiting_on_stdin(proc: subprocess.Popen[bytes]) -> None:
    """Return once ``proc`` is blocked reading its stdin (it has opened the record)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            fields = Path(f"/proc/{proc.pid}/syscall").read_text().split()
        except OSError:
            fields = []
        if len(fields) > 1 and fields[0] == READ_SYSCALL and int(fields[1], 16) == 0:
            return
        time.sleep(0.02)
    raise AssertionError("the child never came to wait on its stdin")


def _moved(root: Path) -> Path:
    away = root.with_name(root.name + ".moved")
    root.rename(away)
    return away


def _deleted(root: Path) -> Path:
    shutil.rmtree(root)
    return root


def _replaced(root: Path) -> Path:
    away = root.with_name(root.name + ".old")
    root.rename(away)
    Record.init(root)
    return away


MUTATIONS: dict[str, Callable[[Path], Path]] = {
    "moved": _moved, "deleted": _deleted, "replaced": _replaced}


def _run_paused(argv: list[str], root: Path, mutate: Callable[[Path], Path],
                body: bytes) -> tuple[subprocess.CompletedProcess[bytes], Path,
                                      dict[str, bytes | None], dict[str, bytes | None]]:
    """Start ``argv``, wait until it waits on stdin, mutate the record, feed ``body``.

    Returns the outcome, where the opened record lies now, and the snapshots (before,
    after) of the whole folder around the record, with the mutation itself applied to the
    'before' picture."""
    if READ_SYSCALL is None:
        pytest.skip(f"the read system call's number on {os.uname().machine} is not known")
    top = root.parent
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=top, env=_env())
    try:
        _waiting_on_stdin(proc)
        away = mutate(root)
        before = _snapshot(top)
        out, err = proc.communicate(body, timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    return done, away, before, _snapshot(top)


def _assert_refused(done: subprocess.CompletedProcess[bytes], mutation: str,
                    before: dict[str, bytes | None], after: dict[str, bytes | None]) -> None:
    text = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 2, text
    assert "nothing was written" in text, text
    assert ("deleted" if mutation == "deleted" else "moved or replaced") in text, text
    assert "Traceback" not in text, text
    # Nothing written anywhere: not in the opened record, not where it was (no stray
    # projects/ or receipts/ folder), not in a record made there since.
    assert after == before, sorted(set(after) ^ set(before)) or "a file changed"


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@pytest.mark.parametrize("command", [
    ["put", "late", "-f", "-"], ["put", "plan", "-f", "-"], ["status", "write", "-f", "-"],
    ["end", "-f", "-"],
])
def test_a_command_waiting_on_its_body_writes_nothing_once_the_record_moved(
        tmp_path: Path, command: list[str], mutation: str) -> None:
    root = tmp_path / "rec"
    _make_record(root)
    argv = atlas_command("--record", "rec", *command)
    done, away, before, after = _run_paused(argv, root, MUTATIONS[mutation],
                                            b"# Late\n\nwritten after a pause\n")
    _assert_refused(done, mutation, before, after)
    if mutation != "deleted":
        assert str(away.resolve()) in done.stderr.decode(), "where the record lies now"


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@pytest.mark.parametrize("writer", sorted(LIBRARY_WRITERS))
def test_every_writer_refuses_a_record_that_moved_after_it_was_opened(
        tmp_path: Path, writer: str, mutation: str) -> None:
    root = tmp_path / "rec"
    record = _make_record(root)
    corrections.correct(record, "status@v1", what="a typo", author="ann")
    argv = [sys.executable, "-c", CHILD, "rec", LIBRARY_WRITERS[writer]]
    done, _, before, after = _run_paused(argv, root, MUTATIONS[mutation], b"go\n")
    _assert_refused(done, mutation, before, after)
    assert json.loads(done.stdout)["kind"] == "RecordGone"


@pytest.mark.parametrize("writer", sorted(LIBRARY_WRITERS))
def test_every_writer_writes_when_the_record_stays_where_it_was(tmp_path: Path,
                                                                writer: str) -> None:
    """The control: the same children, the record left alone, each write lands."""
    root = tmp_path / "rec"
    _make_record(root)
    argv = [sys.executable, "-c", CHILD, "rec", LIBRARY_WRITERS[writer]]
    done, _, before, after = _run_paused(argv, root, lambda r: r, b"go\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert after != before
    assert not (tmp_path / "projects").exists()


def test_a_folder_swapped_for_a_symlink_after_it_was_checked_is_not_written_through(
        tmp_path: Path) -> None:
    """A record that checked a topic's folder once (Record.path keeps the verdict) and
    writes later does not follow a symlink planted there meanwhile: a write walks the
    folders from the record's descriptor, without following a link."""
    record = _make_record(tmp_path / "rec")
    outside = tmp_path / "outside"
    outside.mkdir()
    stream = record.artifact_stream("plan")  # checks, and remembers, the folder
    folder = stream.folder
    shutil.rmtree(folder)
    folder.symlink_to(outside)
    with pytest.raises(Exception) as caught:
        artifacts.put(record, "plan", "through the link\n", author="ann", expect=0)
    assert "symlink" in str(caught.value)
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("swap", ("topic", "artifacts", "project"))
def test_a_folder_swapped_after_a_write_is_walked_again(tmp_path: Path, swap: str) -> None:
    """A long-lived record (the MCP server, the command server) keeps the folder a write
    walked to for its next write, but only while the path names that very folder: one
    swapped since for a symlink to another folder, anywhere on the way, is walked again,
    and the walk refuses the link."""
    record = _make_record(tmp_path / "rec")
    artifacts.put(record, "plan", "one\n", author="ann")
    topic = record.artifact_stream("plan").folder
    swapped = {"topic": topic, "artifacts": topic.parent, "project": topic.parent.parent}[swap]
    outside = tmp_path / "outside"
    shutil.copytree(swapped, outside)  # a look-alike: the same files, another folder
    shutil.rmtree(swapped)
    swapped.symlink_to(outside)
    before = sorted(p.name for p in outside.rglob("*"))
    with pytest.raises(Exception) as caught:
        artifacts.put(record, "plan", "through the link\n", author="ann")
    assert "symlink" in str(caught.value)
    assert sorted(p.name for p in outside.rglob("*")) == before


def test_a_folder_moved_away_after_a_write_is_not_written_into(tmp_path: Path) -> None:
    record = _make_record(tmp_path / "rec")
    artifacts.put(record, "plan", "two\n", author="ann")
    topic = record.artifact_stream("plan").folder
    moved = tmp_path / "moved"
    topic.rename(moved)
    written = artifacts.put(record, "plan", "afresh\n", author="ann")
    assert written.version == 1 and written.path.parent == topic  # a new topic, in the record
    assert topic.is_dir() and not topic.is_symlink()
    assert sorted(p.name for p in moved.iterdir()) == ["plan.v0001.md", "plan.v0002.md"]


def test_the_folders_kept_for_writes_are_bounded(tmp_path: Path) -> None:
    record = _make_record(tmp_path / "rec")
    artifacts.put(record, "t0", "x\n", author="ann")
    before = len(os.listdir("/proc/self/fd"))
    for i in range(1, 3 * fsio.OpenRoot.HELD_FOLDERS):
        artifacts.put(record, f"t{i}", "x\n", author="ann")
        artifacts.put(record, f"t{i}", "y\n", author="ann")
    assert len(os.listdir("/proc/self/fd")) - before <= fsio.OpenRoot.HELD_FOLDERS
    record.opened.close()
    assert len(os.listdir("/proc/self/fd")) < before


def test_a_topic_folder_is_made_only_inside_the_opened_record(tmp_path: Path) -> None:
    """The first version of a topic makes its folder from the record's descriptor: with
    the record moved between opening and writing, the topic lands nowhere."""
    record = _make_record(tmp_path / "rec")
    moved = _moved(record.root)
    with pytest.raises(Exception) as caught:
        artifacts.put(record, "fresh", "a first version\n", author="ann")
    assert type(caught.value).__name__ == "RecordGone"
    assert not (tmp_path / "rec").exists()
    assert not (moved / "projects" / "main" / "artifacts" / "fresh").exists()
