"""`atlas status show` answered before click: the same output, warnings, errors and exit
codes as the full CLI gives for the same command, and no click imported."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.runner import child_env, run_atlas

from atlas_files.fast import status as fast
from atlas_files.protocol import corrections, status
from atlas_files.storage.record import Record


def full(*args: str) -> list[str]:
    """``args`` with the project named after the command: a command line the fast path
    leaves to the full CLI, which reads it the same."""
    return [*args, "--project", "web"]


def test_the_command_lines_it_answers_and_those_it_leaves_to_the_cli() -> None:
    request = fast.parse({"identity": "bob"}, ["status", "show", "--version=3", "--json"])
    assert request is not None
    assert (request.identity, request.version, request.as_json) == ("bob", 3, True)
    assert fast.parse({}, ["status", "show", "--version", "2"]) is not None
    for rest in (["status", "show", "--help"], ["status", "show", "--as", "bob"],
                 ["status", "show", "--version", "0"], ["status", "show", "--version"],
                 ["status", "show", "--version", "x"], ["status", "show", "--version", "٣"],
                 ["status", "show", "--json", "--json"], ["status", "log"], ["status"],
                 ["show"], ["status", "show", "extra"]):
        assert fast.parse({}, rest) is None, rest


def _same(record: Path, *args: str, identity: str = "bob") -> tuple[int, str, str]:
    quick = run_atlas(*args, record=record, identity=identity, process=True)
    slow = run_atlas(*full(*args), record=record, identity=identity, process=True)
    assert (quick.returncode, quick.stdout, quick.stderr) == \
        (slow.returncode, slow.stdout, slow.stderr), args
    return quick.returncode, quick.stdout, quick.stderr


def test_show_prints_what_the_full_cli_prints(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    assert _same(record.root, "status", "show")[1].startswith("project web has no status yet")
    status.write(record, "first\n", author="alice", summary="the start")
    # Text a teammate wrote: control sequences and a bidi override, and no final newline.
    status.write(record, "all \x1b[2J\x1b[H well \u202e txt", author="mallory", expect=1)
    corrections.correct(record, "status@v1", what="it was not\nthe start", author="carol")
    for args in (["status", "show"], ["status", "show", "--json"],
                 ["status", "show", "--version", "1"], ["status", "show", "--version=1"]):
        code, out, _ = _same(record.root, *args)
        assert code == 0
    code, out, _ = _same(record.root, "status", "show", "--version", "1")
    assert "CORRECTED by carol" in out and "summary: the start" in out
    code, out, _ = _same(record.root, "status", "show")
    assert "\\x1b[2J" in out and "\x1b" not in out and out.endswith("txt\n")


def test_a_body_edited_in_place_is_warned_of_the_same_way(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    version, _ = status.write(record, "as written\n", author="alice")
    path = Path(version.path)
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    path.write_text(path.read_text().replace("as written", "changed later"))
    code, out, err = _same(record.root, "status", "show")
    assert code == 0 and "changed later" in out
    assert "was edited in place" in err


@pytest.mark.parametrize("as_json", [False, True])
def test_a_failure_is_the_same_refusal_as_the_full_cli_gives(tmp_path: Path,
                                                              as_json: bool) -> None:
    record = Record.init(tmp_path / "rec", ["web"]).root
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    cases = [(nowhere, "bob", ["status", "show"]), (record, "Bad Name", ["status", "show"]),
             (record, "bob", ["status", "show", "--version", "7"])]
    for where, who, args in cases:
        line = [*args, "--json"] if as_json else args
        code, out, err = _same(where, *line, identity=who)
        assert code != 0 and err.startswith("atlas: error: "), (line, err)
        if as_json:
            assert json.loads(out)["error"]["exit_code"] == code


def test_show_never_imports_click(tmp_path: Path) -> None:
    """Nor yaml, once this user's cache holds the parse of the record's atlas.yaml."""
    record = Record.init(tmp_path / "rec", ["web"])
    status.write(record, "where we are\n", author="alice")
    script = ("import atexit, sys; atexit.register(lambda: sys.stderr.write("
              "'imported: %s\\n' % sorted(m for m in sys.modules if m.split('.')[0] in "
              "('click', 'yaml', 'jsonschema', 'mcp')))); "
              "from atlas_files.launch import main; main(sys.argv[1:])")
    env = child_env()
    for warm, args in ((True, ["status", "show"]), (False, ["status", "show"]),
                       (False, ["status", "show", "--json"])):
        done = subprocess.run([sys.executable, "-c", script, "--record", str(record.root),
                               "--as", "bob", *args], capture_output=True, text=True,
                              env=env, check=False, cwd=os.getcwd())
        assert done.returncode == 0, done.stderr
        assert "where we are" in done.stdout
        assert warm or "imported: []" in done.stderr, (args, done.stderr)
