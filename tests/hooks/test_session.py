"""The hook commands as the harnesses run them: the exact JSON each harness sends on stdin,
the real `atlas` in a child process, stdout parsed as the harness parses it, exit codes
as the harness reads them. The process boundary is the subject here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.runner import Result
from support.runner import run_atlas as run_in_process_or_child

from atlas_files import launch
from atlas_files.cli.app import cli
from atlas_files.protocol import sessions
from atlas_files.storage.record import Record


def run_atlas(*args: str, **kwargs: Any) -> Result:
    """A harness runs its hooks as processes of the installed entry point, whose fast path
    answers `end --hook` before the CLI loads: that process is the subject here."""
    return run_in_process_or_child(*args, process=True, **kwargs)


def claude_session_start(cwd: Path, source: str = "startup") -> dict[str, Any]:
    return {"session_id": "8d2c1f", "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd),
            "hook_event_name": "SessionStart", "source": source}


def claude_stop(cwd: Path, active: bool = False) -> dict[str, Any]:
    return {"session_id": "8d2c1f", "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd),
            "permission_mode": "default", "hook_event_name": "Stop",
            "stop_hook_active": active}


def codex_event(cwd: Path, event: str, **extra: Any) -> dict[str, Any]:
    return {"session_id": "0199a1", "transcript_path": None, "cwd": str(cwd),
            "hook_event_name": event, "model": "gpt-5-codex", **extra}


def gemini_event(cwd: Path, event: str, **extra: Any) -> dict[str, Any]:
    return {"session_id": "g-1", "transcript_path": str(cwd / "chat.json"), "cwd": str(cwd),
            "hook_event_name": event, "timestamp": "2026-01-31T12:00:00.000Z", **extra}


def hook(record: Record, verb: str, harness: str, event: dict[str, Any],
         identity: str | None = "bob", cwd: Path | None = None) -> Result:
    """Run `atlas [--as bob] begin|end --hook H` from ``cwd`` (default: somewhere outside
    the record, so the record is found through the event's cwd, as a harness sends it)."""
    args = (["--as", identity] if identity else []) + [verb, "--hook", harness]
    return run_atlas(*args, input=json.dumps(event), cwd=cwd or record.root.parent)


def put(record: Record, who: str, name: str, body: str = "text\n") -> None:
    assert run_atlas("--as", who, "put", name, record=record.root, input=body).returncode == 0


@pytest.fixture
def started(record: Record) -> Record:
    """ann wrote the status and a plan; bob's session began through Claude's hook."""
    assert run_atlas("--as", "ann", "status", "write", record=record.root,
                     input="Ship the loader by Friday.\n").returncode == 0
    put(record, "ann", "plan")
    out = hook(record, "begin", "claude", claude_session_start(record.root))
    assert out.returncode == 0, out.stderr
    return record


def test_claude_session_start_hands_the_briefing_to_the_agent(started: Record) -> None:
    out = hook(started, "begin", "claude", claude_session_start(started.root))
    assert out.returncode == 0
    doc = json.loads(out.stdout)  # stdout is one JSON document and nothing else
    assert list(doc) == ["hookSpecificOutput"]
    specific = doc["hookSpecificOutput"]
    assert specific["hookEventName"] == "SessionStart"
    assert "Ship the loader by Friday." in specific["additionalContext"]
    assert "plan v1 by ann" in specific["additionalContext"]


def test_the_scripted_session(started: Record) -> None:
    """begin, put, try to stop (blocked, with the reason), end with a status, stop."""
    stop = claude_stop(started.root)
    assert hook(started, "end", "claude", stop).stdout == ""  # nothing written yet
    put(started, "bob", "notes")
    blocked = hook(started, "end", "claude", stop)
    assert blocked.returncode == 0
    doc = json.loads(blocked.stdout)
    assert doc["decision"] == "block"
    assert "notes v1" in doc["reason"] and "atlas --as bob end --status" in doc["reason"]
    ended = run_atlas("--as", "bob", "end", "--status", "Notes written; loader next.",
                      record=started.root)
    assert ended.returncode == 0, ended.stderr
    allowed = hook(started, "end", "claude", stop)
    assert (allowed.returncode, allowed.stdout) == (0, "")


def test_a_stop_the_hook_already_blocked_is_always_allowed(started: Record) -> None:
    put(started, "bob", "notes")
    out = hook(started, "end", "claude", claude_stop(started.root, active=True))
    assert (out.returncode, out.stdout) == (0, "")


def test_a_reading_only_session_is_never_blocked(started: Record) -> None:
    assert run_atlas("--as", "bob", "get", "plan", record=started.root).returncode == 0
    assert run_atlas("--as", "bob", "feed", "--mark-read", record=started.root).returncode == 0
    out = hook(started, "end", "claude", claude_stop(started.root))
    assert (out.returncode, out.stdout) == (0, "")


def test_a_status_that_moved_under_the_session_stops_end(started: Record) -> None:
    assert run_atlas("--as", "ann", "status", "write", record=started.root,
                     input="Loader shipped.\n").returncode == 0
    before = sorted(p.name for p in (started.root / "projects/web/status").iterdir())
    out = run_atlas("--as", "bob", "end", "--status", "My view.", record=started.root)
    assert out.returncode == 3
    assert "ann" in out.stderr and "v2" in out.stderr
    assert sorted(p.name for p in (started.root / "projects/web/status").iterdir()) == before


def test_compaction_keeps_the_session_and_its_writes(started: Record) -> None:
    row = sessions.read(started, "bob")
    assert row is not None
    put(started, "bob", "notes")
    out = hook(started, "begin", "claude", claude_session_start(started.root, "compact"))
    assert "hookSpecificOutput" in json.loads(out.stdout)
    again = sessions.read(started, "bob")
    assert again is not None and again.started_at == row.started_at
    blocked = hook(started, "end", "claude", claude_stop(started.root))
    assert json.loads(blocked.stdout)["decision"] == "block"


def test_without_a_session_row_the_stop_is_allowed_and_says_why(record: Record) -> None:
    put(record, "bob", "notes")
    out = hook(record, "end", "claude", claude_stop(record.root))
    assert (out.returncode, out.stdout) == (0, "")
    assert "no session row for bob" in out.stderr


@pytest.mark.parametrize("harness", ["claude", "codex", "gemini"])
@pytest.mark.parametrize("verb", ["begin", "end"])
def test_outside_a_record_hooks_do_nothing(tmp_path: Path, harness: str, verb: str) -> None:
    event = claude_session_start(tmp_path) if verb == "begin" else claude_stop(tmp_path)
    out = run_atlas("--as", "bob", verb, "--hook", harness, input=json.dumps(event),
                    cwd=tmp_path)
    assert out.returncode == 0 and out.stderr == ""
    # Claude reads no output as "go on"; Codex and Gemini read the empty object.
    assert out.stdout == ("" if harness == "claude" else "{}\n")


def test_codex_hooks(started: Record) -> None:
    out = hook(started, "begin", "codex", codex_event(started.root, "SessionStart",
                                                      source="startup"))
    specific = json.loads(out.stdout)["hookSpecificOutput"]
    assert specific["hookEventName"] == "SessionStart"
    assert "Ship the loader" in specific["additionalContext"]
    stop = codex_event(started.root, "Stop", turn_id="t1", stop_hook_active=False,
                       last_assistant_message="done")
    allowed = hook(started, "end", "codex", stop)
    assert (allowed.returncode, json.loads(allowed.stdout)) == (0, {})
    put(started, "bob", "notes")
    blocked = json.loads(hook(started, "end", "codex", stop).stdout)
    assert blocked["decision"] == "block" and "notes v1" in blocked["reason"]


def test_gemini_hooks(started: Record) -> None:
    out = hook(started, "begin", "gemini", gemini_event(started.root, "SessionStart",
                                                        source="startup"))
    assert "Ship the loader" in json.loads(out.stdout)["hookSpecificOutput"][
        "additionalContext"]
    after = gemini_event(started.root, "AfterAgent", prompt="do it", prompt_response="done",
                         stop_hook_active=False)
    assert json.loads(hook(started, "end", "gemini", after).stdout) == {}
    put(started, "bob", "notes")
    denied = json.loads(hook(started, "end", "gemini", after).stdout)
    assert denied["decision"] == "deny" and "notes v1" in denied["reason"]
    retry = {**after, "stop_hook_active": True}
    assert json.loads(hook(started, "end", "gemini", retry).stdout) == {}


def test_a_hook_without_an_identity_tells_the_agent_so(started: Record) -> None:
    out = hook(started, "begin", "claude", claude_session_start(started.root), identity=None)
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert out.returncode == 0 and "ATLAS_AS" in text
    stop = hook(started, "end", "claude", claude_stop(started.root), identity=None)
    assert (stop.returncode, stop.stdout) == (0, "") and "no identity" in stop.stderr


@pytest.mark.parametrize(("args", "taken"), [
    (["end", "--hook", "claude"], True),
    (["--as", "bob", "-p", "web", "--record", "r", "end", "--hook", "codex"], True),
    (["--as=bob", "end", "--hook=gemini"], True),
    (["end", "--hook", "claude", "--json"], False),
    (["end", "--hook", "vim"], False),
    (["--as", "bob", "begin", "--hook", "claude"], True),
    (["begin", "--hook", "claude", "--max-chars", "900"], False),
    (["begin", "--hook", "vim"], False),
    (["--help", "end", "--hook", "claude"], False),
    (["end", "--status", "x"], False),
])
def test_only_a_hook_command_line_takes_the_fast_path(args: list[str], taken: bool) -> None:
    assert (launch.parse_hook(args) is not None) is taken


def test_the_full_cli_answers_the_session_start_hook_like_the_fast_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two records alike, one briefed by the fast path, one by the full CLI, each from the
    # folder above its record (the repository part of a briefing is the hook's folder's).
    answers = []
    for way in ("fast", "full"):
        record = Record.init(tmp_path / way / "rec", ["web"])
        assert run_atlas("--as", "ann", "status", "write", record=record.root,
                         input="Ship the loader by Friday.\n").returncode == 0
        put(record, "ann", "plan")
        event = claude_session_start(record.root)
        if way == "fast":
            out = hook(record, "begin", "claude", event).stdout
        else:
            monkeypatch.chdir(record.root.parent)
            run = CliRunner().invoke(cli, ["--as", "bob", "begin", "--hook", "claude"],
                                     input=json.dumps(event), catch_exceptions=False)
            assert run.exit_code == 0
            out = run.stdout
        answers.append(re.sub(r"begins now \([^)]*\)", "begins now",
                              out.replace(str(record.root.parent), "HERE")))
    assert json.loads(answers[0]) == json.loads(answers[1])
    assert "Ship the loader by Friday." in answers[0]


def test_the_full_cli_answers_the_stop_hook_like_the_fast_path(started: Record) -> None:
    put(started, "bob", "notes")
    event = json.dumps(claude_stop(started.root))
    fast = hook(started, "end", "claude", claude_stop(started.root))
    slow = CliRunner().invoke(cli, ["--as", "bob", "end", "--hook", "claude"], input=event,
                              catch_exceptions=False)
    assert slow.exit_code == 0 and json.loads(slow.stdout) == json.loads(fast.stdout)


def test_a_harness_that_sends_no_json_is_let_through(started: Record) -> None:
    put(started, "bob", "notes")
    out = run_atlas("--as", "bob", "end", "--hook", "claude", input="not json",
                    cwd=started.root)
    assert out.returncode == 0 and json.loads(out.stdout)["decision"] == "block"
    out = run_atlas("--as", "Bob!", "end", "--hook", "claude", input="{}", cwd=started.root)
    assert (out.returncode, out.stdout) == (0, "") and "not an identity" in out.stderr


def test_session_start_hands_the_identity_to_the_agents_shell(tmp_path: Path) -> None:
    """Claude Code names a file (CLAUDE_ENV_FILE) whose export lines run before each of
    the agent's shell commands: the hook writes the identity and the record there, quoted
    so that a record folder with spaces and quotes comes back exactly."""
    import subprocess

    root = tmp_path / "it's a \"record\" $HOME"
    Record.init(root, ["web"])
    env_file = tmp_path / "env.sh"
    env_file.write_text("export EARLIER=1\n")
    out = run_atlas("--as", "bob", "begin", "--hook", "claude", cwd=tmp_path,
                    input=json.dumps(claude_session_start(root)),
                    env={"CLAUDE_ENV_FILE": str(env_file)})
    assert out.returncode == 0
    assert "act as bob" in json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    shown = subprocess.run(["bash", "-c", f'. {env_file}; printf "%s\\n%s\\n%s" "$EARLIER" '
                            '"$ATLAS_AS" "$ATLAS_RECORD"'], capture_output=True, text=True)
    assert shown.stdout.split("\n") == ["1", "bob", str(root)]


def test_without_an_env_file_the_briefing_says_to_pass_the_identity(started: Record) -> None:
    out = hook(started, "begin", "gemini", gemini_event(started.root, "SessionStart",
                                                        source="startup"))
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "`atlas --as bob ...`" in text


@pytest.mark.parametrize(("configured", "acts_as"), [
    ("carol", "carol"), ("${user_config.identity}", None), ("", None)])
def test_a_plugins_configured_identity(started: Record, configured: str,
                                       acts_as: str | None) -> None:
    """Claude Code exports the plugin's userConfig identity to its hooks; an option never
    set (empty, or left unexpanded) is no identity."""
    out = run_atlas("begin", "--hook", "claude", cwd=started.root.parent,
                    input=json.dumps(claude_session_start(started.root)),
                    env={"CLAUDE_PLUGIN_OPTION_IDENTITY": configured})
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    if acts_as:
        assert f"you are {acts_as}" in text
    else:
        assert "names no identity" in text


def cursor_event(root: Path, event: str, **extra: Any) -> dict[str, Any]:
    """What Cursor sends: no cwd, the workspace's folders instead."""
    return {"conversation_id": "c-1", "generation_id": "g-1", "hook_event_name": event,
            "workspace_roots": [str(root)], "cursor_version": "2.0.77", **extra}


def test_cursor_hooks(started: Record) -> None:
    out = hook(started, "begin", "cursor", cursor_event(started.root, "sessionStart"))
    doc = json.loads(out.stdout)
    assert list(doc) == ["additional_context"] and "Ship the loader" in doc["additional_context"]
    stop = cursor_event(started.root, "stop", status="completed", loop_count=0)
    assert json.loads(hook(started, "end", "cursor", stop).stdout) == {}
    put(started, "bob", "notes")
    followup = json.loads(hook(started, "end", "cursor", stop).stdout)
    assert list(followup) == ["followup_message"] and "notes v1" in followup["followup_message"]
    for again in ({**stop, "loop_count": 1}, {**stop, "status": "aborted"}):
        assert json.loads(hook(started, "end", "cursor", again).stdout) == {}


def test_gemini_shell_commands_get_the_identity(started: Record) -> None:
    """The BeforeTool hook of Gemini's shell tool puts the identity and the record before
    a command that runs atlas (quoted), and leaves any other command alone."""
    import subprocess

    def before(command: str) -> dict[str, Any]:
        event = gemini_event(started.root, "BeforeTool", tool_name="run_shell_command",
                             tool_input={"command": command, "description": "d"})
        answer: dict[str, Any] = json.loads(hook(started, "begin", "gemini", event).stdout)
        return answer

    assert before("ls -la") == {}
    answer = before("atlas put notes -f notes.md")
    specific = answer["hookSpecificOutput"]
    assert specific["hookEventName"] == "BeforeTool" and list(specific) == [
        "hookEventName", "tool_input"]
    command = specific["tool_input"]["command"]
    assert command.endswith("; atlas put notes -f notes.md")
    shown = subprocess.run(["bash", "-c", command.replace("atlas put notes -f notes.md",
                                                          'echo "$ATLAS_AS|$ATLAS_RECORD"')],
                           capture_output=True, text=True)
    assert shown.stdout.strip() == f"bob|{started.root}"
    assert sessions.read(started, "bob") is not None  # the session row stayed as it was


@pytest.mark.parametrize("verb", ["begin", "end"])
def test_a_session_folder_no_path_can_name_lets_the_session_go_on(record: Record,
                                                                   verb: str) -> None:
    """A cwd holding a NUL byte names no folder: the hook answers "go on" as it does
    outside a record, never a traceback where Codex wants a JSON object."""
    out = hook(record, verb, "codex", codex_event(record.root, "Stop") | {"cwd": "a\0b"})
    assert (out.returncode, out.stdout.strip()) == (0, "{}"), out.stderr
