"""Bad input is refused before anything is touched: exit 2, a plain message, no traceback."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.runner import Result, atlas_command, child_env, run_atlas, snapshot

from atlas_files.facts.errors import BadInput
from atlas_files.facts.names import check_name
from atlas_files.protocol import artifacts
from atlas_files.storage.record import Record

BAD_NAMES = ["..", "a..b", "a/b", "../escape", "Plan", "", "-lead", ".hidden",
             "x" * 101, "white space", "émoji"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_topic_names_are_refused_and_nothing_is_written(
    record: Record, atlas: Callable[..., Any], name: str
) -> None:
    before = snapshot(record.root)
    r = atlas("put", name, identity="ann", input="body\n")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.startswith("atlas: error:")
    assert len(r.stderr.strip().splitlines()) <= 2
    assert snapshot(record.root) == before


@pytest.mark.parametrize("name", ["Ann", "a/b", "..", "x" * 101])
def test_bad_identities_and_projects_are_refused(
    record: Record, atlas: Callable[..., Any], name: str
) -> None:
    before = snapshot(record.root)
    assert atlas("put", "plan", identity=name, input="b\n").returncode == 2
    assert atlas("-p", name, "put", "plan", identity="ann", input="b\n").returncode == 2
    assert snapshot(record.root) == before


def test_a_write_without_an_identity_is_refused(record: Record, atlas: Callable[..., Any]) -> None:
    before = snapshot(record.root)
    r = atlas("put", "plan", input="body\n")
    assert r.returncode == 2 and "--as" in r.stderr
    r = atlas("status", "write", input="body\n")
    assert r.returncode == 2 and "ATLAS_AS" in r.stderr
    assert snapshot(record.root) == before


def test_identity_from_the_environment(record: Record, atlas: Callable[..., Any]) -> None:
    r = atlas("put", "plan", input="body\n", env={"ATLAS_AS": "envy"})
    assert r.returncode == 0
    assert artifacts.get(record, "plan").author == "envy"


def test_a_missing_record_is_a_clear_error(tmp_path: Path) -> None:
    r = run_atlas("ls", cwd=tmp_path)
    assert r.returncode == 2 and "no record here" in r.stderr and "atlas init" in r.stderr
    r = run_atlas("ls", record=tmp_path / "nope")
    assert r.returncode == 2 and "no record at" in r.stderr


@pytest.mark.parametrize("served", [False, True])
def test_a_deleted_current_folder_is_named_as_such(tmp_path: Path, served: bool) -> None:
    """A shell whose folder was deleted under it: "No such file or directory" said nothing
    of what was missing."""
    gone = tmp_path / "gone"
    gone.mkdir()
    env = child_env()
    env["ATLAS_SERVER"] = str(tmp_path / "srv" / "s.sock") if served else "0"
    (tmp_path / "srv").mkdir(mode=0o700)
    for args in ("status show", "check", "status show --json"):
        proc = subprocess.run(
            ["sh", "-c", f'cd "$1" && rmdir "$1" && exec "$2" -m atlas_files {args}', "sh",
             str(gone), sys.executable], capture_output=True, text=True, env=env, timeout=60)
        gone.mkdir()
        assert proc.returncode == 2, proc.stderr
        assert "the current folder no longer exists" in proc.stderr, proc.stderr
        assert "No such file or directory" not in proc.stderr
        assert "Traceback" not in proc.stderr
    if served:
        subprocess.run(atlas_command("server", "stop"), env=env,
                       capture_output=True, timeout=60)


def test_the_record_is_found_by_env_and_by_walking_up(record: Record, tmp_path: Path) -> None:
    artifacts.put(record, "plan", "x\n", author="ann")
    deep = record.root / "projects" / "web"
    assert "plan" in run_atlas("ls", cwd=deep).stdout
    assert "plan" in run_atlas("ls", cwd=tmp_path, env={"ATLAS_RECORD": str(record.root)}).stdout
    # ...and by a variable exported to a real process, as a shell would.
    r = run_atlas("ls", cwd=tmp_path, env={"ATLAS_RECORD": str(record.root)}, process=True)
    assert r.returncode == 0 and "plan" in r.stdout


def test_a_non_utf8_body_is_refused(record: Record, atlas: Callable[..., Any],
                                    tmp_path: Path) -> None:
    before = snapshot(record.root)
    r = atlas("put", "plan", identity="ann", input=b"caf\xe9\n")
    assert r.returncode == 2 and "not UTF-8" in r.stderr
    f = tmp_path / "latin1.txt"
    f.write_bytes(b"\xff\xfe")
    r = atlas("put", "plan", "-f", str(f), identity="ann")
    assert r.returncode == 2 and "latin1.txt" in r.stderr
    assert snapshot(record.root) == before


def test_an_unknown_topic_or_version_is_bad_input(record: Record,
                                                  atlas: Callable[..., Any]) -> None:
    r = atlas("get", "nothing")
    assert r.returncode == 2 and "atlas ls" in r.stderr
    artifacts.put(record, "plan", "x\n", author="ann")
    r = atlas("get", "plan", "--version", "7")
    assert r.returncode == 2 and "no v7" in r.stderr


def test_broken_front_matter_names_the_file(record: Record, atlas: Callable[..., Any]) -> None:
    written = artifacts.put(record, "plan", "x\n", author="ann")
    os.chmod(written.path, stat.S_IWUSR | stat.S_IRUSR)
    written.path.write_text("---\nname: [unclosed\n---\nbody\n")
    r = atlas("get", "plan")
    assert r.returncode == 2
    assert "plan.v0001.md" in r.stderr and "atlas check" in r.stderr
    assert "Traceback" not in r.stderr


def test_an_in_place_edit_is_reported_on_read(record: Record, atlas: Callable[..., Any]) -> None:
    written = artifacts.put(record, "plan", "the truth\n", author="ann")
    assert not os.access(written.path, os.W_OK) or os.geteuid() == 0
    assert stat.S_IMODE(written.path.stat().st_mode) == 0o444
    data = written.path.read_bytes().replace(b"the truth", b"a rewrite")
    os.chmod(written.path, 0o644)
    written.path.write_bytes(data)
    r = atlas("get", "plan")
    assert r.returncode == 0 and "edited in place" in r.stderr
    assert atlas("get", "plan", "--json").json()["digest_ok"] is False


def test_the_record_never_follows_a_symlink_out_of_itself(
    record: Record, atlas: Callable[..., Any], tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (record.root / "projects" / "web" / "artifacts" / "evil").symlink_to(outside)
    r = atlas("put", "evil", identity="ann", input="x\n")
    assert r.returncode == 2 and "outside the record" in r.stderr
    assert list(outside.iterdir()) == []


def test_a_nul_in_a_name_is_refused_by_the_library(record: Record) -> None:
    before = snapshot(record.root)
    for bad in ("a\x00b", "\x00"):
        with pytest.raises(BadInput):
            artifacts.put(record, bad, "x\n", author="ann")
        with pytest.raises(BadInput):
            artifacts.put(record, "plan", "x\n", author=bad)
    assert snapshot(record.root) == before


def test_check_name_accepts_good_names() -> None:
    for name in ("a", "plan", "gpubox.gpu0", "eval_results-2", "9" * 100):
        assert check_name(name) == name


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(max_size=120), body=st.binary(max_size=300))
def test_arbitrary_names_and_bodies_never_give_a_traceback(
    record: Record, name: str, body: bytes
) -> None:
    try:
        check_name(name)
        valid_name = True
    except BadInput:
        valid_name = False
    if "\x00" in name or name.startswith("-"):
        return  # an OS argument cannot carry NUL; a leading dash is an option to click
    r = run_atlas("put", name, record=record.root, identity="fuzz", input=body, timeout=60)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode in (0, 2, 3), r.stderr
    if not valid_name:
        assert r.returncode == 2


def _installed_atlas(*args: str, record: Path, identity: str | None = None,
                     input: str = "") -> Result:
    """The installed `atlas` script, found on PATH as a shell finds it."""
    scripts = sysconfig.get_path("scripts")
    path = os.pathsep.join([scripts, os.environ.get("PATH", "")])
    exe = shutil.which("atlas", path=path)
    assert exe is not None and Path(exe).parent == Path(scripts), "atlas is not installed"
    env = child_env()
    env["PATH"] = path
    who = ["--as", identity] if identity else []
    proc = subprocess.run(["atlas", "--record", str(record), *who, *args], input=input.encode(),
                          capture_output=True, env=env, timeout=60)
    return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                  proc.stderr.decode("utf-8", "replace"))


def test_the_installed_script_exits_with_the_contract_codes_and_no_traceback(
    record: Record,
) -> None:
    """Every other test runs the CLI in-process; this one runs the real `atlas` on PATH
    once per exit code of the contract, so the codes a shell sees are proven too."""

    def user_error(r: Result, code: int) -> None:
        assert r.returncode == code, r.stderr
        assert "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith("atlas: error:"), r.stderr
        assert len(r.stderr.splitlines()) <= 2, r.stderr

    ok = _installed_atlas("put", "plan", identity="ann", input="one\n", record=record.root)
    assert ok.returncode == 0, ok.stderr
    assert artifacts.get(record, "plan").body == "one\n"
    user_error(_installed_atlas("put", "../escape", identity="ann", input="x\n",
                                record=record.root), 2)
    user_error(_installed_atlas("put", "plan", "--expect", "0", identity="bob",
                                input="blind\n", record=record.root), 3)
    assert _installed_atlas("lease", "claim", "gpu0", "--for", "1h", "--why", "run",
                            identity="ann", record=record.root).returncode == 0
    held = _installed_atlas("lease", "claim", "gpu0", "--for", "1h", "--why", "mine",
                            identity="bob", record=record.root)
    user_error(held, 4)
    assert "ann" in held.stderr
    # A damaged file: exit 2, two plain lines and no traceback.
    damaged = artifacts.put(record, "notes", "x\n", author="ann")
    os.chmod(damaged.path, stat.S_IWUSR | stat.S_IRUSR)
    damaged.path.write_text("---\nname: [unclosed\n---\nbody\n")
    user_error(_installed_atlas("get", "notes", record=record.root), 2)
    found = _installed_atlas("check", record=record.root)
    assert found.returncode == 1 and "notes.v0001.md" in found.stdout, found.stdout
    assert "Traceback" not in found.stderr


def test_init_refuses_an_empty_folder_name_and_a_project_named_twice(tmp_path: Path) -> None:
    # `atlas init "$DIR"` with DIR unset made the current folder a record; a project named
    # twice made a record `atlas check` then refused (ATL001).
    here = tmp_path / "here"
    here.mkdir()
    done = run_atlas("init", "", cwd=here)
    assert done.returncode == 2 and "empty" in done.stderr, done.stderr
    assert list(here.iterdir()) == []
    done = run_atlas("init", str(tmp_path / "rec"), "--project", "a", "--project", "a")
    assert done.returncode == 2 and "project a is named more than once" in done.stderr
    assert not (tmp_path / "rec").exists()
    assert run_atlas("init", str(tmp_path / "rec"), "--project", "a",
                     "--project", "b").returncode == 0
    assert run_atlas("check", str(tmp_path / "rec")).returncode == 0


def test_a_missing_home_is_never_made(tmp_path: Path) -> None:
    # As root, HOME=/nonexistent (a service account's) used to be created by the first
    # command, to hold ~/.cache/atlas-files and ~/.config/atlas.
    record = Record.init(tmp_path / "rec", ["web"])
    home = tmp_path / "nonexistent"
    env = {k: v for k, v in child_env().items() if not k.startswith("XDG_")}
    env["HOME"] = str(home)
    for args in (["ls"], ["--as", "ann", "put", "plan", "-f", "-"], ["sync", "accept"]):
        subprocess.run(atlas_command("--record", str(record.root), *args), env=env,
                       input=b"text\n", capture_output=True, timeout=60, check=False)
    assert not home.exists()
