"""The entry point: the collector is off during start-up only, whatever the command line."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from atlas_files import launch
from atlas_files.cli import app


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
    from atlas_files.record import Record

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
