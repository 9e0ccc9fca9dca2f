"""The entry point: the collector is off during start-up only, whatever the command line."""

from __future__ import annotations

import gc
import json
import signal
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from support.runner import child_env

from atlas_files import launch
from atlas_files.cli import app
from atlas_files.storage.record import Record


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """A command `gc-state` whose module records, at import and when run, whether the
    collector is on."""
    states: list[bool] = []

    @click.command()
    def gc_state() -> None:
        states.append(gc.isenabled())

    module = types.ModuleType("gc_state_command")
    module.command = gc_state  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gc_state_command", module)
    monkeypatch.setitem(app.COMMANDS, "gc-state", "gc_state_command:command")
    yield states
    gc.enable()


def run(args: list[str]) -> int:
    try:
        launch.main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_a_command_runs_with_the_collector_on(seen: list[bool], tmp_path: Path) -> None:
    assert run(["--record", str(tmp_path), "gc-state"]) == 0
    assert seen == [True] and gc.isenabled()


@pytest.mark.parametrize("args", [["--version"], ["no-such-command"], ["-p"], ["--help"],
                                  ["status", "--help"], []])
def test_the_collector_is_on_again_whatever_the_command_line(
        seen: list[bool], args: list[str]) -> None:
    run(args)
    assert gc.isenabled()


def test_the_global_options_are_split_from_the_command() -> None:
    assert launch.split_globals(["--as", "bob", "-p", "web", "status", "show"]) == (
        {"identity": "bob", "project": "web"}, ["status", "show"])
    assert launch.split_globals(["--record=r", "ls"]) == ({"record_path": "r"}, ["ls"])
    assert launch.split_globals(["--as"]) is None


@pytest.mark.parametrize("verb", ["begin", "end", "guard", "news"])
def test_a_hook_answered_by_the_fast_path_never_imports_click(verb: str,
                                                              tmp_path: Path) -> None:
    # The hooks run at every session start, turn end and tool call: click's import is
    # most of the start-up floor they are measured against.
    from atlas_files.storage.record import Record

    record = Record.init(tmp_path / "rec", ["web"])
    event = json.dumps({"session_id": "s", "cwd": str(record.root), "transcript_path": "t",
                        "hook_event_name": "SessionStart", "source": "startup",
                        "tool_name": "Edit", "tool_input": {"file_path": str(record.root / "x")}})
    script = ("import atexit, sys; atexit.register(lambda: sys.stderr.write("
              "'click imported: %s\\n' % ('click' in sys.modules))); "
              "from atlas_files.launch import main; main(sys.argv[1:])")
    done = subprocess.run([sys.executable, "-c", script, "--as", "bob", verb, "--hook",
                           "claude"], input=event, capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert "click imported: False" in done.stderr


# The child writes one byte on stderr from main's first step, once its interpreter is up
# and the entry point's module is in (what comes before is Python's own start-up, which
# no program can answer for); from then on a Ctrl-C at any moment is atlas's to answer.
STARTED = ("import os, atlas_files.launch as launch; start = launch._start; "
           "launch._start = lambda args: (os.write(2, b'.'), start(args)); launch.main()")


@pytest.mark.parametrize(("command", "tries", "spacing", "data"), [
    (["put", "t", "-f", "-"], 40, 0.0025, b"a body\n"),  # a plain command's first 100 ms
    (["mcp"], 16, 0.05, None),                             # the MCP server's longer start-up
])
def test_ctrl_c_at_any_moment_of_the_start_is_the_interrupted_error(
        record: Record, command: list[str], tries: int, spacing: float,
        data: bytes | None) -> None:
    seen = []
    for i in range(tries):
        proc = subprocess.Popen(
            [sys.executable, "-c", STARTED, "--record", str(record.root), "--as", "alice",
             *command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=child_env())
        try:
            assert proc.stderr is not None and proc.stderr.read(1) == b"."
            time.sleep(i * spacing)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(data, timeout=60)
        finally:
            proc.kill()
            proc.wait()
        said = err.decode("utf-8", "replace")
        assert "Traceback" not in said and "Exception ignored" not in said, said
        # 130 with its one line; or the command had ended already (0), or was exiting,
        # where a Ctrl-C ends the process silently (killed by SIGINT).
        assert (proc.returncode, said.strip()) in ((130, "atlas: interrupted"), (0, ""),
                                           (-signal.SIGINT, "")), (proc.returncode, said)
        seen.append(proc.returncode)
    assert seen.count(130) >= tries // 4, seen


def test_ctrl_c_while_a_json_command_starts_still_prints_one_json_document(
        record: Record) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", STARTED, "--record", str(record.root), "ls", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    try:
        assert proc.stderr is not None and proc.stderr.read(1) == b"."
        time.sleep(0.005)  # while click and the command's module load
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    assert json.loads(out)["error"]["kind"] == "interrupted"


@pytest.mark.parametrize("globals_", [[], ["--as", "bob", "-p", "web"]])
def test_bare_atlas_is_a_short_friendly_start(globals_: list[str], tmp_path: Path) -> None:
    # The first thing a newcomer types used to print ~50 lines framed as an error, exit 2,
    # after importing every command's module for its line of help.
    from atlas_files.facts.guide import START

    script = ("import atexit, sys; atexit.register(lambda: sys.stderr.write("
              "'imported: %s\\n' % sorted(m for m in sys.modules if m == 'click' or "
              "m.startswith('atlas_files.cli')))); "
              "from atlas_files.launch import main; main(sys.argv[1:])")
    done = subprocess.run([sys.executable, "-c", script, *globals_], capture_output=True,
                          text=True, cwd=tmp_path, env=child_env(), check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == START and len(START.splitlines()) <= 15
    assert "atlas --help" in START and "atlas init" in START
    assert done.stderr == "imported: []\n"
