"""The outside prober: unreachable machines as facts, timeouts, --every, staleness."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.prober import ANSWER, own_home
from support.runner import atlas_command, child_env, run_atlas, snapshot

from atlas_files.facts import timeutil
from atlas_files.protocol import telemetry as telemetrymod
from atlas_files.protocol.telemetry import probe as probemod
from atlas_files.protocol.telemetry import rows, trust
from atlas_files.storage import schemas
from atlas_files.storage.record import Record


@pytest.fixture(autouse=True)
def _own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The prober's per-user files (approvals) live in the test's own home folder."""
    own_home(tmp_path, monkeypatch)


def _add(record: Record, name: str, probe: str, **kwargs: str) -> None:
    """A machine in atlas.yaml whose probe the person running these probers approved: an
    atlas.yaml probe nobody approved is not run
    (tests/protocol/telemetry/test_telemetry_trust.py)."""
    probemod.add_machine(record, name, probe, **kwargs)
    trust.approve(record, name, probe)


def _row(record: Record, machine: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((record.telemetry_dir / f"{machine}.json").read_text())
    return data


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_for_file(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path.name} never appeared")


def test_failing_command_is_a_row_saying_unreachable_with_the_reason(record: Record) -> None:
    _add(record, "gpubox", "echo 'ssh: connect to host gpubox: No route to host' >&2;"
                   " exit 255", timeout="5s")
    _add(record, "nothere", "no-such-command-atlas-test", timeout="5s")
    res = run_atlas("telemetry", "probe", record=record.root, identity="prober-1")
    assert res.returncode == 0, res.stderr  # the rows were written: the probe did its job
    assert "gpubox: UNREACHABLE" in res.stdout
    row = _row(record, "gpubox")
    assert schemas.errors("telemetry", row) == []
    assert row["reachable"] is False and row["gpus"] == []
    assert row["error"] == ("the probe command exited 255: "
                            "ssh: connect to host gpubox: No route to host")
    assert row["observer"] == "prober-1"
    again = run_atlas("telemetry", "probe", "gpubox", "--json", record=record.root,
                      identity="prober-2")
    (only,) = again.json()["machines"]
    assert (only["machine"], only["reachable"], only["observer"]) == ("gpubox", False,
                                                                     "prober-2")
    other = _row(record, "nothere")
    assert other["reachable"] is False and "exited 127" in other["error"]
    listed = run_atlas("telemetry", "ls", "--json", record=record.root).json()
    by_name = {m["machine"]: m for m in listed["machines"]}
    assert set(listed["machines"][0]) >= {"machine", "reachable", "observed_at", "observer",
                                         "age_s", "stale", "gpus", "error"}
    assert by_name["gpubox"]["reachable"] is False
    assert by_name["gpubox"]["stale"] is False
    assert "No route to host" in by_name["gpubox"]["error"]


def test_an_answer_that_is_not_a_sample_is_reachable_with_the_problem_as_error(
        record: Record) -> None:
    """A machine that answered was reachable: its row says so, with no GPUs and what came
    back as the error, and no reader calls it unreachable."""
    from atlas_files.protocol import leases

    _add(record, "chatty", "echo hello world", timeout="5s")
    res = run_atlas("telemetry", "probe", record=record.root, identity="prober")
    assert res.returncode == 0, res.stderr
    assert "chatty: reachable, NO SAMPLE" in res.stdout and "UNREACHABLE" not in res.stdout
    row = _row(record, "chatty")
    assert (row["reachable"], row["gpus"]) == (True, [])
    assert row["error"] == "answered, but not with a telemetry sample: not JSON: hello world"
    assert schemas.errors("telemetry", row) == []

    listed = run_atlas("telemetry", "ls", record=record.root)
    assert "chatty: reachable, NO SAMPLE" in listed.stdout and "hello world" in listed.stdout
    assert "UNREACHABLE" not in listed.stdout
    [view] = run_atlas("telemetry", "ls", "--json", record=record.root).json()["machines"]
    assert (view["reachable"], view["gpus"]) == (True, [])
    assert "not with a telemetry sample" in view["error"]

    usage = telemetrymod.resource_usage(record, "chatty.gpu0")
    assert usage is not None and usage["reachable"] is True
    assert usage["memory_used_mib"] is None and "hello world" in usage["error"]
    assert telemetrymod.busy_gpus(record) == []
    leases.claim(record, "chatty.gpu0", holder="alice", duration_s=60, why="run")
    sheet = run_atlas("lease", "ls", record=record.root)
    assert "answered its last probe, but not with a telemetry sample" in sheet.stdout
    assert "unreachable" not in sheet.stdout.split("Leases are advisory")[0]


def test_an_oversized_answer_is_reachable_but_no_sample(record: Record) -> None:
    _add(record, "flood", "head -c 5000000 /dev/zero | tr '\\0' x", timeout="10s")
    (outcome,) = probemod.probe_once(record, "prober", ["flood"])
    assert outcome.reachable is True and "more than 4 MiB" in (outcome.error or "")
    assert schemas.errors("telemetry", _row(record, "flood")) == []


def test_a_row_that_claims_a_sample_must_carry_nvml(record: Record) -> None:
    """The schema still tells a sample from a non-answer: reachable without an error
    needs its readings; an error with reachable true allows no GPUs."""
    base = {"machine": "m", "observed_at": "2026-11-29T11:00:00Z", "observer": "p",
            "reachable": True, "gpus": []}
    assert schemas.errors("telemetry", {**base, "error": None})
    assert schemas.errors("telemetry", {**base, "error": "answered, but not ..."}) == []
    gpu: dict[str, object] = {"index": 0, "uuid": None, "name": None,
                              "memory_used_mib": 1, "memory_total_mib": 2, "processes": []}
    assert schemas.errors("telemetry", {**base, "error": "x", "gpus": [gpu]})


@pytest.mark.parametrize("command", [
    "sleep 60",
    # a grandchild that leaves the process group still holds the output open
    "setsid sleep 30 & echo $! > {pidfile}; sleep 60",
])
def test_hanging_command_is_killed_and_the_row_written_within_timeout_plus_1s(
        record: Record, tmp_path: Path, command: str) -> None:
    pidfile = tmp_path / "escaped.pid"
    _add(record, "hangs", command.format(pidfile=shlex.quote(str(pidfile))),
                   timeout="2s")
    _add(record, "fine", ANSWER, timeout="2s")
    start = time.monotonic()
    outcomes = probemod.probe_once(record, "prober", ["hangs", "fine"])
    elapsed = time.monotonic() - start
    path = record.telemetry_dir / "hangs.json"
    try:
        assert elapsed < 2 + 1, f"the probe took {elapsed:.2f}s"
        assert path.stat().st_mtime - (time.time() - elapsed) < 2 + 1
        by_name = {o.machine: o for o in outcomes}
        assert by_name["hangs"].reachable is False
        assert by_name["hangs"].error == "no answer within 2s; the probe command was killed"
        assert by_name["fine"].reachable is True  # one hanging machine delays no other
        assert _row(record, "hangs")["error"] == by_name["hangs"].error
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_the_whole_process_group_of_a_hanging_probe_is_killed(record: Record,
                                                              tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    _add(record, "tree", f"sleep 60 & echo $! > {shlex.quote(str(pidfile))}; wait",
                   timeout="1s")
    probemod.probe_once(record, "prober", ["tree"])
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 2
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid), "the shell's child outlived the probe timeout"


def test_bad_calls_exit_2_and_write_nothing(record: Record) -> None:
    _add(record, "gpubox", ANSWER)
    before = snapshot(record.root)
    res = run_atlas("telemetry", "probe", "nosuch", record=record.root, identity="prober")
    assert res.returncode == 2
    assert "no machine 'nosuch'" in res.stderr and "Traceback" not in res.stderr
    res = run_atlas("telemetry", "probe", record=record.root)  # no --as
    assert res.returncode == 2 and "--as" in res.stderr
    res = run_atlas("telemetry", "probe", "--every", "0", record=record.root, identity="p")
    assert res.returncode == 2 and "--every" in res.stderr
    res = run_atlas("telemetry", "probe", "Bad/Name", record=record.root, identity="p")
    assert res.returncode == 2
    assert snapshot(record.root) == before
    empty = Record.init(record.root.parent / "empty")
    res = run_atlas("telemetry", "probe", record=empty.root, identity="p")
    assert res.returncode == 2 and "no machines" in res.stderr


def _rows_seen(record: Record, machine: str, seen: set[str]) -> None:
    try:
        seen.add(_row(record, machine)["observed_at"])
    except (FileNotFoundError, ValueError):
        pass


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_every_keeps_going_when_one_machine_fails(record: Record, stop: int) -> None:
    _add(record, "good", ANSWER, timeout="5s")
    _add(record, "bad", "exit 1", timeout="5s")
    env = child_env()
    proc = subprocess.Popen(
        atlas_command("--record", str(record.root), "--as", "prober", "telemetry", "probe",
                      "--every", "0.3"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )
    good: set[str] = set()
    bad: set[str] = set()
    try:
        deadline = time.monotonic() + 30
        while (len(good) < 4 or len(bad) < 4) and time.monotonic() < deadline:
            _rows_seen(record, "good", good)
            _rows_seen(record, "bad", bad)
            time.sleep(0.05)
        assert proc.poll() is None, "the prober stopped by itself"
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(good) >= 4 and len(bad) >= 4
    assert proc.returncode == 0, err
    assert "prober stopped after" in err
    assert out.count("bad: UNREACHABLE: the probe command exited 1") >= 4
    assert _row(record, "good")["reachable"] is True
    assert _row(record, "bad")["reachable"] is False


def test_stopping_the_prober_kills_a_probe_in_flight(record: Record, tmp_path: Path) -> None:
    pidfile = tmp_path / "slow.pid"
    _add(record, "slow", f"sleep 60 & echo $! > {shlex.quote(str(pidfile))}; wait",
                   timeout="50s")
    env = child_env()
    proc = subprocess.Popen(
        atlas_command("--record", str(record.root), "--as", "prober", "telemetry", "probe",
                      "--every", "5m"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    try:
        pid = int(_wait_for_file(pidfile))
        proc.send_signal(signal.SIGTERM)
        # Well under the probe's 50 s timeout and its 60 s sleep, so a prober that waited
        # for the probe still fails; 5 s was once too short on a loaded CI machine.
        proc.communicate(timeout=25)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    deadline = time.monotonic() + 2
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid)
    # An interrupted probe says nothing about the machine: no row claims it unreachable.
    assert not (record.telemetry_dir / "slow.json").exists()


# -- reading: staleness computed when read ---------------------------------------------------


def _write(record: Record, machine: str, ago_s: float, **extra: Any) -> None:
    row = {"machine": machine, "observer": "prober", "reachable": True, "error": None,
           "observed_at": timeutil.format_time(timeutil.now() - timedelta(seconds=ago_s)),
           "nvml": {"available": True, "reason": None, "driver_version": "1"}, "gpus": [],
           **extra}
    assert schemas.errors("telemetry", row) == []
    rows.write_row(record, row)


def test_a_row_written_long_ago_reads_as_stale(record: Record) -> None:
    _add(record, "old", ANSWER, interval="5m")
    _add(record, "fresh", ANSWER, interval="5m")
    _add(record, "never", ANSWER)
    _write(record, "old", 2 * 3600)
    _write(record, "fresh", 60)
    _write(record, "removed", 60)  # a row whose machine left atlas.yaml is still shown
    data = run_atlas("telemetry", "ls", "--json", record=record.root).json()
    by_name = {m["machine"]: m for m in data["machines"]}
    assert list(by_name) == ["old", "fresh", "never", "removed"]
    assert by_name["old"]["stale"] is True
    assert 7190 < by_name["old"]["age_s"] < 7300
    assert by_name["fresh"]["stale"] is False
    assert by_name["never"]["stale"] is True and by_name["never"]["reachable"] is None
    assert by_name["removed"]["stale"] is False
    assert "stale" in data["limits"]
    text = run_atlas("telemetry", "ls", record=record.root)
    assert text.returncode == 0
    old_line = next(ln for ln in text.stdout.splitlines() if ln.startswith("old:"))
    assert "STALE (older than 15m)" in old_line and "2 hours ago" in old_line
    fresh_line = next(ln for ln in text.stdout.splitlines() if ln.startswith("fresh:"))
    assert "STALE" not in fresh_line


def test_stale_after_intervals_is_configurable(record: Record) -> None:
    import yaml

    _add(record, "patient", ANSWER, interval="15m")
    _write(record, "patient", 2 * 3600)
    assert telemetrymod.view(Record(record.root), "patient").stale is True  # 2h > 3 x 15m
    config = record.root / "atlas.yaml"
    raw = yaml.safe_load(config.read_text())
    raw["machines"]["patient"]["stale_after_intervals"] = 10
    config.write_text(yaml.safe_dump(raw))
    assert telemetrymod.view(Record(record.root), "patient").stale is False  # 2h < 10 x 15m


def test_a_damaged_row_is_reported_not_crashed_on(record: Record) -> None:
    _add(record, "edited", ANSWER)
    (record.telemetry_dir / "edited.json").write_text('{"machine": "edi')
    data = run_atlas("telemetry", "ls", "--json", record=record.root)
    assert data.returncode == 0, data.stderr
    (row,) = data.json()["machines"]
    assert row["reachable"] is None and row["stale"] is True
    assert row["error"].startswith("damaged row edited.json")


def test_resource_usage_and_busy_gpus_beside_leases(record: Record) -> None:
    gpu = {"uuid": None, "name": "X", "memory_total_mib": 80000}
    _write(record, "box", 10, gpus=[
        {**gpu, "index": 0, "memory_used_mib": 5, "processes": []},
        {**gpu, "index": 1, "memory_used_mib": 30000, "processes": None},
        {**gpu, "index": 2, "memory_used_mib": 10,
         "processes": [{"pid": 1, "memory_used_mib": 10}]},
    ])
    rows.write_row(record, {"machine": "down", "observer": "p", "reachable": False,
                            "error": "exited 255", "gpus": [],
                            "observed_at": timeutil.format_time(timeutil.now())})
    usage = telemetrymod.resource_usage(record, "box.gpu1")
    assert usage is not None
    assert {k: usage[k] for k in ("machine", "gpu_index", "memory_used_mib",
                                  "memory_total_mib", "reachable", "stale")} == {
        "machine": "box", "gpu_index": 1, "memory_used_mib": 30000,
        "memory_total_mib": 80000, "reachable": True, "stale": False}
    assert telemetrymod.resource_usage(record, "box.gpu7") is None
    assert telemetrymod.resource_usage(record, "nobox.gpu0") is None
    assert telemetrymod.resource_usage(record, "dataset-a") is None
    down = telemetrymod.resource_usage(record, "down.gpu0")
    assert down is not None and down["reachable"] is False and down["memory_used_mib"] is None
    assert [g["resource"] for g in telemetrymod.busy_gpus(record)] == ["box.gpu1", "box.gpu2"]


def test_add_machine_refuses_bad_input_and_keeps_atlas_yaml(record: Record) -> None:
    from atlas_files.facts.errors import BadInput

    before = (record.root / "atlas.yaml").read_bytes()
    for name, probe, timeout in (("Bad Name", "local", "10s"), ("ok", "  ", "10s"),
                                 ("ok", "local", "ten seconds")):
        with pytest.raises(BadInput):
            probemod.add_machine(record, name, probe, timeout=timeout)
    assert (record.root / "atlas.yaml").read_bytes() == before
    probemod.add_machine(record, "a", "local")
    probemod.add_machine(record, "b", ANSWER, timeout="3s", interval="1m")
    machines = Record(record.root).config.machines
    assert list(machines) == ["a", "b"]
    assert (machines["b"].timeout_s, machines["b"].interval_s) == (3.0, 60.0)
    import yaml

    raw = yaml.safe_load((record.root / "atlas.yaml").read_text())
    assert schemas.errors("config", raw) == []


def test_demo_scene_shows_a_reachable_local_row_and_an_unreachable_one(
        record: Record) -> None:
    from atlas_files.cli.demo import telemetry as scene

    said: list[str] = []
    scene.scene(record, said.append)
    local, remote = _row(record, "this-machine"), _row(record, "gpubox")
    notice = _row(record, "webbox")
    assert local["reachable"] is True and local["observer"] == "prober-1"
    assert remote["reachable"] is False and remote["error"]
    assert notice["reachable"] is True and "not with a telemetry sample" in notice["error"]
    for row in (local, remote, notice):
        assert schemas.errors("telemetry", row) == []
    text = "\n".join(said)
    assert "reachable: false, error: the probe command" in text
    assert "webbox.json: reachable, but no sample" in text
    assert ("nvml: unavailable" in text) != bool(local["gpus"])


def test_a_row_that_cannot_be_written_stops_neither_the_round_nor_the_loop(
        record: Record) -> None:
    from atlas_files.protocol.telemetry import probe as probemod

    _add(record, "good", ANSWER, timeout="5s")
    _add(record, "blocked", ANSWER, timeout="5s")
    (record.telemetry_dir / "blocked.json").mkdir()  # rename cannot replace a folder
    with pytest.raises(probemod.RowNotWritten, match="the row of blocked was not written"):
        probemod.probe_once(record, "prober", ["blocked", "good"])
    assert _row(record, "good")["reachable"] is True
    errors: list[str] = []
    seen: list[str] = []
    done = probemod.probe_every(record, "prober", [], 0.05,
                                on_outcome=lambda o: seen.append(o.machine),
                                on_error=errors.append, rounds=3)
    assert done == 3
    assert seen == ["good"] * 3
    assert len(errors) == 3 and all("blocked" in e for e in errors)
    res = run_atlas("telemetry", "probe", record=record.root, identity="prober")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "good: reachable" in res.stdout


def test_a_symlinked_row_is_damage_never_followed(record: Record, tmp_path: Path) -> None:
    """A row that is a symlink is reported as damaged; what it points at is never read."""
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({
        "machine": "box", "observed_at": timeutil.format_time(timeutil.now()),
        "observer": "mallory", "reachable": True, "error": None,
        "nvml": {"available": True, "reason": None},
        "gpus": [{"index": 0, "uuid": None, "name": "X", "memory_used_mib": 70000,
                  "memory_total_mib": 80000, "processes": [{"pid": 1}]}]}))
    record.telemetry_dir.mkdir(exist_ok=True)
    (record.telemetry_dir / "box.json").symlink_to(forged)
    listed = run_atlas("telemetry", "ls", "--json", record=record.root)
    assert listed.returncode == 0, listed.stderr
    [row] = listed.json()["machines"]
    assert row["reachable"] is None and row["gpus"] == [] and "symlink" in row["error"]
    assert "mallory" not in listed.stdout
    text = run_atlas("telemetry", "ls", "box", record=record.root)
    assert text.returncode == 0 and "symlink" in text.stdout
    assert telemetrymod.busy_gpus(record) == []
    assert telemetrymod.resource_usage(record, "box.gpu0") is None

    _add(record, "box", ANSWER)
    (outcome,) = probemod.probe_once(record, "prober", ["box"])
    assert outcome.reachable and not (record.telemetry_dir / "box.json").is_symlink()
    assert json.loads(forged.read_text())["observer"] == "mallory"  # never written through


def test_a_file_where_the_telemetry_folder_belongs_is_reported(record: Record) -> None:
    import shutil

    _add(record, "box", ANSWER)
    shutil.rmtree(record.telemetry_dir)
    (record.root / "telemetry").write_text("not a folder")
    for args in (("telemetry", "ls"), ("telemetry", "ls", "--json"), ("lease", "ls")):
        res = run_atlas(*args, record=record.root)
        assert res.returncode == 0 and "Traceback" not in res.stderr, (args, res.stderr)
        assert "telemetry should be the folder of telemetry rows" in res.stdout + res.stderr
    data = run_atlas("telemetry", "ls", "--json", record=record.root).json()
    assert data["problems"] and data["machines"][0]["reachable"] is None
    before = snapshot(record.root)
    res = run_atlas("telemetry", "probe", record=record.root, identity="prober")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "telemetry should be the folder" in res.stderr and "hint:" in res.stderr
    assert snapshot(record.root) == before


@pytest.mark.parametrize("every", ["", "nan", "inf", "-5", "1e400", "1" * 400 + "s",
                                   "\x07", "ünï", "5 m"])
def test_odd_every_values_exit_2_without_a_traceback(record: Record, every: str) -> None:
    _add(record, "box", ANSWER)
    before = snapshot(record.root)
    res = run_atlas("telemetry", "probe", "--every", every, record=record.root,
                    identity="prober", timeout=20)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("atlas: error: ") and "Traceback" not in res.stderr
    assert snapshot(record.root) == before


def test_a_very_long_every_waits_instead_of_crashing(record: Record) -> None:
    """time.sleep() refuses waits past about 292 years; the loop sleeps in bounded steps,
    so a huge --every is a long wait until stopped, not a traceback after round one."""
    _add(record, "box", ANSWER)
    env = child_env()
    proc = subprocess.Popen(
        atlas_command("--record", str(record.root), "--as", "p", "telemetry", "probe", "--every",
                      "9" * 30 + "d"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )
    _wait_for_file(record.telemetry_dir / "box.json")
    time.sleep(1.0)
    assert proc.poll() is None, proc.communicate()[1]  # still waiting for round two
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "stopped after 1 round" in err
