"""`atlas task ls` and `atlas task next` answered before click: the same output, errors
and exit codes as the full CLI gives for the same command, and no click imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.runner import child_env, run_atlas

from atlas_files.fast import tasks as fast
from atlas_files.storage.record import Record

# A global option after the command is left to the full CLI, which reads it the same.
FULL = ["--project", "web"]


def test_the_command_lines_it_answers_and_those_it_leaves_to_the_cli() -> None:
    request = fast.parse({"identity": "bob"}, ["task", "next", "--for=2h", "--json",
                                               "--no-sync"])
    assert request is not None
    assert (request.verb, request.identity, request.duration, request.sync) == \
        ("next", "bob", "2h", False)
    assert fast.parse({}, ["task", "ls", "--ready", "--mine", "--json"]) is not None
    for rest in (["task", "ls", "--help"], ["task", "ls", "--as", "bob"],
                 ["task", "ls", "--for", "1h"], ["task", "next", "--json"],
                 ["task", "next", "--for"], ["task", "next", "--for", "--json"],
                 ["task", "next", "--for", "1h", "--sync", "--no-sync"],
                 ["task", "add", "x"], ["task"], ["ls", "--ready"]):
        assert fast.parse({}, rest) is None, rest


def test_ls_and_next_print_what_the_full_cli_prints(record: Record) -> None:
    for title in ("one", "two", "three"):
        assert run_atlas("task", "add", title, "--why", "because\nof it", record=record.root,
                         identity="alice").returncode == 0
    for args in (["task", "ls"], ["task", "ls", "--ready", "--json"],
                 ["task", "ls", "--all", "--mine"]):
        quick = run_atlas(*args, record=record.root, identity="bob", process=True)
        full = run_atlas(*args, *FULL, record=record.root, identity="bob", process=True)
        assert quick.returncode == full.returncode == 0
        assert (quick.stdout, quick.stderr) == (full.stdout, full.stderr)
    quick = run_atlas("task", "next", "--for", "1h", record=record.root, identity="bob",
                      process=True)
    full = run_atlas("task", "next", "--for", "1h", *FULL, record=record.root,
                     identity="carol", process=True)
    assert quick.returncode == full.returncode == 0
    assert quick.stdout.split()[1:3] == ["claimed", "one"]
    assert full.stdout.split()[1:3] == ["claimed", "two"]
    assert quick.stdout.splitlines()[1] == full.stdout.splitlines()[1] == \
        "    why: because of it"


@pytest.mark.parametrize("as_json", [False, True])
def test_a_failure_is_the_same_refusal_as_the_full_cli_gives(tmp_path: Path,
                                                              as_json: bool) -> None:
    record = Record.init(tmp_path / "rec", ["web"]).root
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    cases = [(nowhere, "bob", ["task", "ls"]), (nowhere, "bob", ["task", "next", "--for", "1h"]),
             (record, "Bad Name", ["task", "ls"]),
             (record, "bob", ["task", "next", "--for", "forever"])]
    for where, who, args in cases:
        line = [*args, "--json"] if as_json else args
        quick = run_atlas(*line, record=where, identity=who, process=True)
        full = run_atlas(*line, *FULL, record=where, identity=who, process=True)
        assert quick.returncode == full.returncode == 2, (line, quick.stderr)
        assert (quick.stdout, quick.stderr) == (full.stdout, full.stderr)
        assert quick.stderr.startswith("atlas: error: ")
        if as_json:
            assert json.loads(quick.stdout)["error"]["exit_code"] == 2


def test_ls_and_next_never_import_click(record: Record) -> None:
    """Nor yaml, once this user's cache holds the parse of the record's atlas.yaml (the
    first command after it changes reads it with yaml)."""
    script = ("import atexit, sys; atexit.register(lambda: sys.stderr.write("
              "'imported: %s\\n' % sorted(m for m in sys.modules if m.split('.')[0] in "
              "('click', 'yaml', 'jsonschema', 'mcp', 'dataclasses')))); "
              "from atlas_files.launch import main; main(sys.argv[1:])")
    for warm, args in ((True, ["task", "ls", "--ready"]), (False, ["task", "ls", "--ready"]),
                       (False, ["task", "next", "--for", "1h", "--json"])):
        done = subprocess.run([sys.executable, "-c", script, "--record", str(record.root),
                               "--as", "bob", *args], capture_output=True, text=True,
                              env=child_env(), check=False)
        assert done.returncode == 0, done.stderr
        assert warm or "imported: []" in done.stderr, (args, done.stderr)
