"""What agents wrote reaches people's terminals as text, never as orders to the terminal;
and a failing command asked for --json still prints one JSON document on stdout."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.runner import atlas_command, child_env, run_atlas
from support.tools import needs

from atlas_files.api import core
from atlas_files.cli import main
from atlas_files.facts import timeutil
from atlas_files.facts.errors import NotFound
from atlas_files.facts.text import escape_controls
from atlas_files.protocol import artifacts, leases, status
from atlas_files.protocol.telemetry.rows import write_row
from atlas_files.storage.record import Record

ATLAS = Path(sys.executable).with_name("atlas")  # the installed console script

OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # writes the reader's clipboard
LINK = "\x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\"  # a link that hides its target
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
BIDI_C1 = "\u202etxt.exe \x9b31m"  # right-to-left override; a one-character CSI
PLAN_V2 = f"step two {OSC52}\nred \x1b[31mtext\x1b[0m {BIDI_C1}\x07\n"
NOTES = f"notes{CLEAR}.md"


def _entry(path: Path, fields: dict[str, str]) -> None:
    # Written by hand, as an agent with file access would: the CLI refuses such text.
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{key}: {json.dumps(value)}" for key, value in fields.items()]
    path.write_text("---\n" + "\n".join(lines) + "\n---\n", encoding="utf-8")


def _poisoned(root: Path) -> Record:
    """A record where an agent wrote terminal sequences into every field it can reach."""
    record = Record.init(root, ["web"])
    artifacts.put(record, "plan", f"step one {OSC52}\nbody {CLEAR} {LINK}\n", author="ann",
                  expect=0)
    # The default summary is its first line.
    artifacts.put(record, "plan", PLAN_V2, author="ann", expect=1)
    status.write(record, f"status {OSC52}\nall {CLEAR} well\n", author="ann", expect=0)
    now = timeutil.now()
    at = timeutil.format_time(now)
    web = root / "projects" / "web"
    _entry(web / "decisions" / "dec-20260101t000000000000z-0000abcd.md", {
        "id": "dec-20260101t000000000000z-0000abcd", "kind": "decision", "at": at,
        "author": "ann", "project": "web", "topic": f"db {OSC52}", "recommended": "pg",
        "chosen": f"my{LINK}", "relation": "agreed", "why": f"fast {CLEAR} {BIDI_C1}"})
    _entry(web / "corrections" / "cor-20260101t000000000000z-0000abcd.md", {
        "id": "cor-20260101t000000000000z-0000abcd", "kind": "correction", "at": at,
        "author": "ann", "project": "web", "ref": "plan@v2", "what": f"typo {OSC52}"})
    lease_dir = root / "leases" / "gpubox.gpu0"
    lease_dir.mkdir(parents=True)
    (lease_dir / "g00000001.json").write_text(json.dumps({
        "kind": "lease", "resource": "gpubox.gpu0", "generation": 1, "action": "claim",
        "holder": "ann", "why": f"train {OSC52}", "claimed_at": at,
        "expires_at": timeutil.format_time(now + timedelta(hours=1)), "duration_s": 3600.0,
        "written_at": at, "written_by": "ann", "previous": None}))
    write_row(record, {
        "machine": "gpubox", "observer": "prober", "observed_at": at, "reachable": True,
        "error": None, "nvml": {"available": True, "reason": None, "driver_version": "1"},
        "gpus": [{"index": 0, "name": f"H200 {OSC52}", "memory_used_mib": 1,
                  "memory_total_mib": 2, "processes": []}]})
    write_row(record, {"machine": "downbox", "observer": "prober", "observed_at": at,
                       "reachable": False, "error": f"ssh: {OSC52}", "gpus": []})
    (web / NOTES).write_text("[gone](missing.md)\n", encoding="utf-8")  # a broken link
    return record


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory: pytest.TempPathFactory) -> Record:
    return _poisoned(tmp_path_factory.mktemp("poisoned") / "rec")


def _env(record: Record, identity: str, **extra: str) -> dict[str, str]:
    env = child_env()
    env.update(ATLAS_RECORD=str(record.root), ATLAS_AS=identity, **extra)
    return env


def _on_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes]:
    """Run the installed `atlas` with stdout and stderr on a pseudo-terminal; every byte
    it wrote there."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(ATLAS), *args], stdin=subprocess.DEVNULL, stdout=follower,
                            stderr=follower, env=env, cwd=cwd)
    os.close(follower)
    out = bytearray()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            out += chunk
        return proc.wait(timeout=10), bytes(out)
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()


def _assert_inert(out: bytes) -> None:
    assert b"\x1b" not in out and b"\x07" not in out, out
    for raw in ("\x9b", "\u202e", "\x7f"):
        assert raw.encode() not in out, (raw, out)


READS = [
    (["get", "plan"], ["\\x1b]52;c;", "\\u202e", "\\u009b31m", "typo \\x1b]52"]),
    (["get", "plan", "--body-only"], ["\\x1b[31mtext", "\\u202e"]),
    (["ls"], ["step two \\x1b]52;c;cHduZWQ=\\x07"]),
    (["history", "plan"], ["step one \\x1b]52", "step two \\x1b]52"]),
    (["diff", "plan"], ["\\x1b]8;;https://evil.example/", "\\x1b[2J"]),
    (["feed"], ["status \\x1b]52", "step two \\x1b]52"]),
    (["lease", "ls"], ["train \\x1b]52"]),
    (["lease", "show", "gpubox.gpu0"], ["train \\x1b]52"]),
    (["telemetry", "ls"], ["ssh: \\x1b]52", "H200 \\x1b]52"]),
    (["status", "show"], ["status \\x1b]52", "all \\x1b[2J\\x1b[H well"]),
    (["status", "log"], ["status \\x1b]52"]),
    (["decisions"], ["db \\x1b]52", "my\\x1b]8;;", "fast \\x1b[2J", "\\u202etxt"]),
    (["check"], ["notes\\x1b[2J\\x1b[H.md"]),
]


@needs(ATLAS, "the atlas command is not installed")
@pytest.mark.parametrize(("args", "shown"), READS, ids=[" ".join(a) for a, _ in READS])
def test_every_read_command_shows_agent_text_escaped_on_a_terminal(
    poisoned: Record, args: list[str], shown: list[str], tmp_path: Path
) -> None:
    reader = "reader-" + "-".join(args[:2])  # each its own receipts: feed sees everything
    code, out = _on_a_terminal(args, _env(poisoned, reader), poisoned.root.parent)
    assert code in (0, 1), out  # check exits 1: the broken link
    _assert_inert(out)
    text = out.decode()
    for escaped in shown:
        assert escaped in text, (escaped, text)


@needs(ATLAS, "the atlas command is not installed")
def test_errors_on_stderr_are_escaped_and_an_ascii_terminal_gets_no_bypass(
    poisoned: Record
) -> None:
    title = "\x1b]0;pwned\x07"  # sets the window title
    code, out = _on_a_terminal(["get", f"--x{title}"], _env(poisoned, "ann"),
                               poisoned.root.parent)
    assert code == 2
    _assert_inert(out)
    assert "No such option '--x\\x1b]0;pwned\\x07'" in out.decode()
    # click writes past a stream set to ASCII; the filter must still be on that path.
    code, out = _on_a_terminal(["decisions"], _env(poisoned, "ann", PYTHONIOENCODING="ascii"),
                               poisoned.root.parent)
    assert code == 0
    _assert_inert(out)
    assert "db \\x1b]52" in out.decode()


def test_body_only_into_a_file_is_byte_exact(poisoned: Record, tmp_path: Path) -> None:
    target = tmp_path / "plan.md"
    with target.open("wb") as fh:
        subprocess.run(atlas_command("get", "plan", "--body-only"),
                       stdout=fh, env=_env(poisoned, "ann"), check=True, timeout=60)
    stored = artifacts.get(poisoned, "plan").body
    assert target.read_bytes() == PLAN_V2.encode() == stored.encode()


def test_human_output_into_a_pipe_is_escaped_too(poisoned: Record) -> None:
    # A pipe often ends on a terminal (`atlas decisions | head`, a CI log, `less -R`).
    r = run_atlas("decisions", record=poisoned.root)
    assert r.returncode == 0
    _assert_inert(r.stdout.encode())
    assert "fast \\x1b[2J\\x1b[H \\u202etxt.exe \\u009b31m" in r.stdout  # not stripped


def test_json_escapes_c1_and_bidi_and_keeps_the_values(poisoned: Record) -> None:
    r = run_atlas("decisions", "--json", record=poisoned.root)
    _assert_inert(r.stdout.encode())
    (why,) = [d["why"] for d in r.json()["decisions"]]
    assert why == f"fast {CLEAR} {BIDI_C1}"
    r = run_atlas("get", "plan", "--json", record=poisoned.root)
    _assert_inert(r.stdout.encode())
    assert r.json()["body"] == PLAN_V2


@given(st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x2070)
               | st.sampled_from(["\ud800", "\udc9b", "\\", '"'])))
def test_the_filter_keeps_any_json_document_valid_and_equal(value: str) -> None:
    # Every JSON document passes the filter (telemetry probe --every prints JSON lines
    # with plain json.dumps): what it escapes must be the same value in JSON.
    for doc in (json.dumps({"v": value}, ensure_ascii=False),
                json.dumps({"v": value}, ensure_ascii=False, indent=2)):
        shown = escape_controls(doc)
        assert json.loads(shown) == {"v": value}
        assert not any(0x7f <= ord(c) <= 0x9f or 0xd800 <= ord(c) <= 0xdfff
                       or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                       for c in shown)


# -- errors under --json ------------------------------------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[Any, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def _error_doc(out: str, kind: str, exit_code: int) -> dict[str, Any]:
    doc = json.loads(out)  # the whole of stdout is one document
    assert list(doc) == ["error"]
    error = doc["error"]
    assert set(error) == {"kind", "message", "hint", "exit_code"}
    assert (error["kind"], error["exit_code"]) == (kind, exit_code), error
    return dict(error)


def test_a_failure_with_json_prints_one_error_document(
    record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    root = str(record.root)
    code, out, err = _run(capsys, "--record", root, "get", "missing", "--json")
    error = _error_doc(out, "not_found", 2)
    assert code == 2 and error["hint"]
    # Still the two plain lines on stderr, and nothing on stdout without --json.
    assert err.splitlines() == [f"atlas: error: {error['message']}",
                                f"atlas: hint: {error['hint']}"]
    code, out, err = _run(capsys, "--record", root, "get", "missing")
    assert code == 2 and out == "" and err.startswith("atlas: error: ")

    artifacts.put(record, "plan", "a\n", author="ann", expect=0)
    artifacts.put(record, "plan", "b\n", author="bob", expect=1)
    code, out, _ = _run(capsys, "--record", root, "--as", "ann", "put", "plan",
                        "--expect", "1", "-f", os.devnull, "--allow-empty", "--json")
    assert code == 3
    assert "v2" in _error_doc(out, "version_conflict", 3)["message"]

    leases.claim(record, "gpubox.gpu0", holder="alice", duration_s=600, why="run")
    code, out, _ = _run(capsys, "--record", root, "--as", "bob", "lease", "claim",
                        "gpubox.gpu0", "--for", "1h", "--why", "mine", "--json")
    assert code == 4
    assert "alice" in _error_doc(out, "lease_held", 4)["message"]


@pytest.mark.parametrize(("args", "kind"), [
    (["get", "--json"], "usage"),  # a missing argument
    (["get", "plan", "--bogus", "--json"], "usage"),
    (["--json", "nosuchcommand"], "usage"),
    (["lease", "claim", "x", "--for", "soon", "--why", "w", "--json"], "bad_input"),
])
def test_a_usage_error_with_json_prints_one_error_document(
    record: Record, capsys: pytest.CaptureFixture[str], args: list[str], kind: str
) -> None:
    code, out, err = _run(capsys, "--record", str(record.root), "--as", "ann", *args)
    assert code == 2
    error = _error_doc(out, kind, 2)
    assert err.startswith(f"atlas: error: {error['message']}")


def test_an_environment_error_with_json_prints_one_error_document(
    record: Record, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(record.root / "projects"))

    monkeypatch.setattr(core, "get", refuse)
    code, out, err = _run(capsys, "--record", str(record.root), "get", "plan", "--json")
    error = _error_doc(out, "environment", 2)
    assert code == 2 and "Permission denied" in error["message"]
    assert "atlas: error: Permission denied" in err


def test_the_real_command_prints_the_error_document_and_exits_2(record: Record) -> None:
    r = run_atlas("get", "missing", "--json", record=record.root)
    assert r.returncode == 2
    _error_doc(r.stdout, "not_found", 2)


def test_error_messages_quoting_stored_text_are_escaped_on_stderr(
    record: Record, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def damaged(*args: Any, **kwargs: Any) -> Any:
        raise NotFound(f"no topic {OSC52}", hint=f"see {CLEAR}")

    monkeypatch.setattr(core, "get", damaged)
    code, out, err = _run(capsys, "--record", str(record.root), "get", "plan", "--json")
    assert code == 2
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "no topic \\x1b]52;c;cHduZWQ=\\x07" in err
    assert _error_doc(out, "not_found", 2)["message"] == f"no topic {OSC52}"
