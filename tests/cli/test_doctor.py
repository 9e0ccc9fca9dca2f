"""`atlas doctor`: each property measured where the record lives, with the verdict a user
should get: a local disk (all ok), a real volume that refuses hard links (exFAT through
FUSE), failures injected at the syscall boundary (a link that overwrites, a rename that
leaves a gap, a lock that does not exclude, a folder fsync refused), a clock offset
injected with faketime, and the machine's part (hooks whose atlas is not on PATH, no git,
a command server folder others can write, jsonschema-rs missing). The MooseFS mount's
verdicts are in test_dfs.py."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import exfat
from support.runner import atlas_command, child_env, run_atlas

from atlas_files.check import validators
from atlas_files.cli import diagnosis as doctor
from atlas_files.facts import layout
from atlas_files.protocol import volume
from atlas_files.storage.record import Record

VOLUME_CHECKS = ("volume", "hard_links", "exclusive_create", "atomic_rename", "folder_fsync",
                 "locks", "case_sensitivity", "clock")
MACHINE_CHECKS = ("git", "jsonschema_rs", "site_engines", "hooks", "site_code",
                  "command_server")
FAKETIME = shutil.which("faketime")
needs_faketime = pytest.mark.skipif(
    FAKETIME is None and not os.environ.get("ATLAS_REQUIRE_FAKETIME"),
    reason="faketime is not installed (apt-get install faketime)")


@pytest.fixture
def home(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment of the test's own: an empty home (no user-level hooks) and a private
    runtime folder for the command server's socket (short: a socket's path has at most
    107 bytes, and the test's own folder can be longer)."""
    (tmp_path / "home").mkdir()
    run = Path(tempfile.mkdtemp(prefix="atlas-doc-"))
    try:
        yield {"HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(run)}
    finally:
        shutil.rmtree(run, ignore_errors=True)


def doctor_json(*args: str, cwd: Path, env: dict[str, str],
                clock: str | None = None) -> tuple[int, dict[str, Any]]:
    argv = atlas_command(*args, "doctor", "--json")
    if clock is not None:
        assert FAKETIME is not None
        argv = [FAKETIME, "-f", clock, *argv]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd,
                          env=child_env(env), timeout=120, stdin=subprocess.DEVNULL)
    return done.returncode, json.loads(done.stdout)


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["verdict"] for c in report["checks"]}


def test_a_local_record_with_hooks_set_up_is_all_ok(tmp_path: Path,
                                                     home: dict[str, str]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert run_atlas("init", str(work / "record")).returncode == 0
    assert run_atlas("setup", "claude", "--dir", str(work), "--as", "ann").returncode == 0
    # The record is below the project: the hooks find it by ATLAS_RECORD (without it they
    # find none, test_hooks_that_find_no_record_are_degraded).
    home = {**home, "ATLAS_RECORD": str(work / "record")}
    code, report = doctor_json("--record", str(work / "record"), cwd=work, env=home)
    assert code == 0 and report["ok"] is True
    assert [c["name"] for c in report["checks"]] == [*VOLUME_CHECKS, *MACHINE_CHECKS]
    assert set(verdicts(report).values()) == {"ok"}, report
    for check in report["checks"]:
        assert set(check) == {"name", "verdict", "detail", "affects"}
        assert check["detail"] and check["affects"]
    assert report["record"] == str(work / "record")
    assert report["volume"]["clock"]["error_s"] < 0.1  # a local disk stamps finely
    assert abs(report["volume"]["clock"]["ahead_of_volume_s"]) < 0.1
    hooks = next(c for c in report["checks"] if c["name"] == "hooks")
    assert str(work / ".claude" / "settings.json") in hooks["detail"]
    # The probes ran in a scratch folder of the record's cache, and left nothing.
    assert not [p for p in (work / "record" / layout.CACHE).iterdir()
                if p.name.startswith(volume.SCRATCH_PREFIX)]
    # The text says the same, one line per check.
    text = subprocess.run(atlas_command("--record", str(work / "record"),
                                        "doctor"), capture_output=True, text=True,
                          cwd=work, env=child_env(home), timeout=120)
    assert text.returncode == 0
    assert "14 checks: 14 ok, 0 degraded, 0 unsafe; nothing unsafe." in text.stdout


def test_outside_a_record_it_measures_this_folder(tmp_path: Path, home: dict[str, str]) -> None:
    here = tmp_path / "plain"
    here.mkdir()
    code, report = doctor_json(cwd=here, env=home)
    assert code == 0 and report["record"] is None
    assert report["volume"]["path"] == str(here)
    found = verdicts(report)
    assert found["hooks"] == "degraded"  # nothing set up: the ritual is the agent's job
    assert all(found[name] == "ok" for name in VOLUME_CHECKS)
    assert os.listdir(here) == []  # its scratch folder is gone


def test_a_record_that_is_not_there_is_named(tmp_path: Path) -> None:
    result = run_atlas("--record", str(tmp_path / "nowhere"), "doctor", "--json")
    assert result.returncode == 2
    assert result.json()["error"]["kind"] == "not_found"


def test_hooks_whose_atlas_is_not_on_path_and_no_git(tmp_path: Path,
                                                     home: dict[str, str]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    record = Record.init(work / "record", ["web"])
    assert run_atlas("setup", "codex", "--dir", str(work)).returncode == 0
    bare = {**home, "PATH": str(tmp_path / "empty-bin")}
    code, report = doctor_json("--record", str(record.root), cwd=work, env=bare)
    found = verdicts(report)
    assert found["hooks"] == "degraded" and found["git"] == "degraded"
    hooks = next(c for c in report["checks"] if c["name"] == "hooks")
    assert "not found on PATH" in hooks["detail"] and "hooks.json" in hooks["detail"]
    assert code == 0  # degraded is not unsafe
    # A record that travels by git cannot sync without it: that is unsafe.
    record.update_config(lambda data: {**data, "sync": {"remote": "origin"}})
    code, report = doctor_json("--record", str(record.root), cwd=work, env=bare)
    assert verdicts(report)["git"] == "unsafe" and report["ok"] is False and code == 1


def test_hooks_that_find_no_record_are_degraded(tmp_path: Path, home: dict[str, str]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    record = Record.init(work / "shared" / "record", ["web"])
    assert run_atlas("setup", "claude", "--dir", str(work)).returncode == 0
    code, report = doctor_json("--record", str(record.root), cwd=work, env=home)
    hooks = next(c for c in report["checks"] if c["name"] == "hooks")
    assert hooks["verdict"] == "degraded", hooks
    assert "will find no record" in hooks["detail"]
    assert f"ATLAS_RECORD={record.root}" in hooks["detail"]
    code, report = doctor_json("--record", str(record.root), cwd=work,
                               env={**home, "ATLAS_RECORD": str(record.root)})
    assert verdicts(report)["hooks"] == "ok"


def test_a_command_server_folder_others_can_write(tmp_path: Path,
                                                  home: dict[str, str]) -> None:
    shared = Path(home["XDG_RUNTIME_DIR"]) / "atlas-files"
    shared.mkdir()
    shared.chmod(0o777)
    record = Record.init(tmp_path / "record", ["web"])
    for extra in ({}, {"ATLAS_SERVER": "1"}):
        code, report = doctor_json("--record", str(record.root), cwd=tmp_path,
                                   env={**home, **extra})
        server = next(c for c in report["checks"] if c["name"] == "command_server")
        assert server["verdict"] == "degraded" and "others may write" in server["detail"]
        assert code == 0


# -- failures injected at the syscall boundary (the probes' own forked processes inherit
# -- the injection, as they would a file system's behaviour) ---------------------------


def _probe(tmp_path: Path) -> dict[str, volume.Check]:
    report = volume.probe(tmp_path / "vol", rounds=6, replaces=60)
    return {c.name: c for c in report.checks}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "vol").mkdir()
    return tmp_path


def test_a_link_that_overwrites_is_unsafe(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def overwriting_link(src: Any, dst: Any, **_: Any) -> None:
        shutil.copyfile(src, dst)  # a "link" that neither refuses a name nor shares a file

    monkeypatch.setattr(os, "link", overwriting_link)
    found = _probe(folder)
    assert found["hard_links"].verdict == "degraded"
    assert found["exclusive_create"].verdict == "unsafe"
    assert "2 of two links to one name succeeded" in found["exclusive_create"].detail
    assert found["exclusive_create"].affects == volume.PUBLISH


def test_a_refused_link_is_unsafe(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(src: Any, dst: Any, **_: Any) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", refused)
    found = _probe(folder)
    assert found["hard_links"].verdict == "unsafe"
    assert "Operation not permitted" in found["hard_links"].detail
    # O_EXCL still excludes, but atlas publishes with link(2).
    assert found["exclusive_create"].verdict == "unsafe"
    assert "exactly one won each time" in found["exclusive_create"].detail


def test_a_rename_that_leaves_a_gap_is_degraded(folder: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    real_rename = os.rename

    def gappy_replace(src: Any, dst: Any, **_: Any) -> None:
        os.unlink(dst)  # the old name goes before the new one comes
        time.sleep(0.002)
        real_rename(src, dst)

    monkeypatch.setattr(os, "replace", gappy_replace)
    found = _probe(folder)
    assert found["atomic_rename"].verdict == "degraded"
    assert "found no file at all" in found["atomic_rename"].detail


def test_a_lock_that_does_not_exclude_and_a_refused_folder_fsync(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EINVAL, "Invalid argument")
        real_fsync(fd)

    monkeypatch.setattr(fcntl, "flock", lambda fd, op: None)
    monkeypatch.setattr(os, "fsync", fsync)
    found = _probe(folder)
    assert found["locks"].verdict == "degraded"
    assert "locks do not exclude" in found["locks"].detail
    assert found["folder_fsync"].verdict == "degraded"
    assert "Invalid argument" in found["folder_fsync"].detail
    assert found["exclusive_create"].verdict == "ok"  # the rest stands


def test_a_volume_that_takes_no_new_file_is_unsafe_and_says_why(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only(path: Any, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "mkdir", read_only)
    report = volume.probe(folder / "vol")
    (writable,) = [c for c in report.checks if c.name == "writable"]
    assert writable.verdict == "unsafe" and "Read-only file system" in writable.detail
    assert [c.name for c in report.checks] == ["volume", "writable"]


def test_a_check_whose_own_files_fail_reads_as_not_measured(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def full(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("Case-Probe"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", full)
    found = _probe(folder)
    assert found["case_sensitivity"].verdict == "degraded"
    assert found["case_sensitivity"].detail == "not measured: No space left on device"
    assert found["clock"].verdict == "ok"  # the report goes on


def test_jsonschema_rs_missing_is_unsafe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema_rs", None)  # its import now fails
    validators.fast.cache_clear()
    try:
        check = doctor.schema_check()
    finally:
        validators.fast.cache_clear()
    assert check.verdict == "unsafe" and "jsonschema-rs" in check.detail
    assert "atlas check" in check.affects


# -- a real volume that refuses hard links -------------------------------------------------


def test_an_exfat_volume_refuses_what_the_record_needs(tmp_path: Path,
                                                       home: dict[str, str]) -> None:
    reason = exfat.unavailable()
    if reason is not None:
        if os.environ.get(exfat.REQUIRE_ENV):
            pytest.fail(f"{exfat.REQUIRE_ENV} is set, but {reason}")
        pytest.skip(reason)
    with exfat.exfat(tmp_path / "exfat") as mount:
        root = mount / "record"
        init = subprocess.run(atlas_command("init", str(root)),
                              capture_output=True, text=True, env=child_env(home),
                              timeout=120, stdin=subprocess.DEVNULL)
        # init makes the record and says at once what this volume cannot do.
        assert init.returncode == 0, init.stderr
        assert "hard_links unsafe" in init.stderr and "atlas doctor" in init.stderr
        code, report = doctor_json("--record", str(root), cwd=tmp_path, env=home)
        found = verdicts(report)
        assert found["hard_links"] == "unsafe" and found["exclusive_create"] == "unsafe"
        assert found["case_sensitivity"] == "degraded"
        assert report["volume"]["type"] == "fuseblk"
        assert code == 1 and report["ok"] is False
        # And a write there fails with a message, not a traceback.
        put = run_atlas("--record", str(root), "--as", "ann", "put", "plan", "-f", "-",
                        input="x\n", process=True)
        assert put.returncode == 2 and "Traceback" not in put.stderr


# -- an injected clock offset ----------------------------------------------------------------


@needs_faketime
def test_a_clock_offset_is_measured_against_the_volume(tmp_path: Path,
                                                       home: dict[str, str]) -> None:
    record = Record.init(tmp_path / "record", ["web"])
    args = ("--record", str(record.root))
    code, report = doctor_json(*args, cwd=tmp_path, env=home, clock="-30s")
    clock = next(c for c in report["checks"] if c["name"] == "clock")
    assert clock["verdict"] == "degraded" and "up to 30.0 s early" in clock["detail"]
    assert "behind the volume's" in clock["detail"]
    assert -30.2 < report["volume"]["clock"]["ahead_of_volume_s"] < -29.8
    assert code == 0
    code, report = doctor_json(*args, cwd=tmp_path, env=home, clock="+10m")
    assert verdicts(report)["clock"] == "unsafe" and code == 1  # past clock_tolerance
    # The allowance is the record's: with a minute allowed, 30 s is fine.
    record.update_config(lambda data: {**data, "clock_skew_allowance": "1m"})
    code, report = doctor_json(*args, cwd=tmp_path, env=home, clock="-30s")
    assert verdicts(report)["clock"] == "ok" and code == 0


def test_init_on_a_local_disk_measures_and_says_nothing(tmp_path: Path) -> None:
    result = run_atlas("init", str(tmp_path / "record"), "--json")
    assert result.returncode == 0 and "warning" not in result.stderr
    checks = result.json()["volume_checks"]
    assert [c["name"] for c in checks] == list(VOLUME_CHECKS)
    assert {c["verdict"] for c in checks} == {"ok"}
