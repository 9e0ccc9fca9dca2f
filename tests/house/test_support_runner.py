"""The test harness itself: `run_atlas` in-process must behave as the child process it
replaces, and leave nothing of one call behind for the next."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from support.runner import run_atlas

from atlas_files.protocol import artifacts
from atlas_files.storage.record import Record


def _both(*args: str, **kwargs: object) -> tuple[object, object]:
    inproc = run_atlas(*args, **kwargs)  # type: ignore[arg-type]
    child = run_atlas(*args, process=True, **kwargs)  # type: ignore[arg-type]
    return inproc, child


def test_in_process_and_child_process_give_the_same_result(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    record = Record(root)
    artifacts.put(record, "plan", "one\n", author="ann")
    cases: list[tuple[tuple[str, ...], dict[str, object]]] = [
        (("--help",), {}),
        (("get", "plan", "--json"), {"record": root}),
        (("ls",), {"cwd": root / "projects"}),
        (("ls",), {"cwd": tmp_path, "env": {"ATLAS_RECORD": str(root)}}),
        (("ls",), {"cwd": tmp_path}),  # no record here: exit 2
        (("put", "../x"), {"record": root, "identity": "ann", "input": "x\n"}),
        (("put", "plan", "--expect", "0"), {"record": root, "identity": "bob", "input": "x\n"}),
        (("put", "plan"), {"record": root, "input": "x\n"}),  # no identity: exit 2
        # No input: stdin is empty and not a terminal, so the body is empty.
        (("status", "write"), {"record": root, "identity": "ann"}),
        (("put", "plan"), {"record": root, "identity": "ann", "input": b"caf\xe9\n"}),
        (("lease", "claim", "gpu0", "--for", "2h"), {"record": root, "identity": "ann"}),
        (("nonsense",), {}),
    ]
    for args, kwargs in cases:
        inproc, child = _both(*args, **kwargs)
        assert inproc == child, (args, kwargs)


def test_the_tests_own_atlas_variables_never_reach_the_command(
    record: Record, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATLAS_AS", "leaked")
    monkeypatch.setenv("ATLAS_RECORD", str(record.root / "nope"))
    r = run_atlas("put", "plan", record=record.root, input="x\n")
    assert r.returncode == 2 and "ATLAS_AS" in r.stderr
    r = run_atlas("put", "plan", record=record.root, input="x\n", env={"ATLAS_AS": "given"})
    assert r.returncode == 0, r.stderr
    assert artifacts.get(record, "plan").author == "given"
    # ...and the test's environment is as it was.
    assert os.environ["ATLAS_AS"] == "leaked"
    assert os.environ["ATLAS_RECORD"] == str(record.root / "nope")


def test_a_call_leaves_no_global_state_behind(record: Record, tmp_path: Path) -> None:
    receipts = record.root / "receipts"
    receipts.rmdir()
    receipts.write_text("not a folder")  # every write now warns about its receipt
    before = (os.getcwd(), dict(os.environ), warnings.showwarning, list(warnings.filters),
              sys.stdin, sys.stdout, sys.stderr, signal.getsignal(signal.SIGTERM))
    r = run_atlas("put", "plan", record=record.root, identity="ann", input="x\n", cwd=tmp_path)
    assert r.returncode == 0 and "atlas: warning:" in r.stderr and "receipt" in r.stderr
    after = (os.getcwd(), dict(os.environ), warnings.showwarning, list(warnings.filters),
             sys.stdin, sys.stdout, sys.stderr, signal.getsignal(signal.SIGTERM))
    assert after == before
    # The second call warns again: nothing of the first call's warning state is kept. (A
    # read, which marks a receipt: the writer's next write needs none, its own version
    # telling what it read.)
    again = run_atlas("get", "plan", record=record.root, identity="ann")
    assert again.returncode == 0 and "atlas: warning:" in again.stderr


def test_a_bug_is_a_traceback_and_exit_1_as_in_a_process(
    record: Record, monkeypatch: pytest.MonkeyPatch
) -> None:
    from atlas_files.protocol import artifacts

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(artifacts, "ls", broken)
    monkeypatch.setattr(Record, "ls", broken, raising=False)
    r = run_atlas("ls", record=record.root)
    assert r.returncode == 1
    assert "Traceback" in r.stderr and "RuntimeError: a bug of ours" in r.stderr


def test_a_command_that_never_ends_times_out_instead_of_hanging(record: Record) -> None:
    from atlas_files.protocol.telemetry import probe

    probe.add_machine(record, "box", "true", timeout="1s")
    with pytest.raises(subprocess.TimeoutExpired):
        run_atlas("telemetry", "probe", "--every", "1h", record=record.root, identity="p",
                  timeout=1)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_each_call_reads_the_record_afresh_as_a_new_process_would(record: Record) -> None:
    """An entry rewritten in place with its size and mtime kept is invisible to the
    library's per-process index; a new process (and so each in-process call) sees it."""
    from atlas_files.protocol import corrections

    artifacts.put(record, "plan", "p\n", author="ann")
    fix = corrections.correct(record, "plan@v1", what="typo in line 1", author="ann")
    first = run_atlas("get", "plan", "--json", record=record.root).json()
    assert [c["what"] for c in first["corrected_by"]] == ["typo in line 1"]
    path = next((record.root / "projects/web/corrections").glob(f"{fix.id}*"))
    st = path.stat()
    os.chmod(path, 0o644)
    path.write_bytes(path.read_bytes().replace(b"typo in line 1", b"typo in line 2"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = run_atlas("get", "plan", "--json", record=record.root).json()
    assert [c["what"] for c in again["corrected_by"]] == ["typo in line 2"]
