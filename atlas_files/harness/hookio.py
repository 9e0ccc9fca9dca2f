"""The hook protocols of the agent harnesses, as `atlas begin|end --hook H` speak them.

A harness runs the hook command with one JSON object on stdin and reads stdout as JSON
only: any other byte there breaks the hook (Codex fails a Stop hook whose stdout is not a
JSON object; Gemini CLI requires stdout to hold nothing but the final JSON). So hook mode
prints exactly one document, or nothing where the harness reads nothing as "go on"
(Claude Code); notes for a person go to stderr. docs/sessions.md cites the references.

* Session start (Claude ``SessionStart``, Codex ``SessionStart``, Gemini ``SessionStart``):
  ``{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": T}}``.
* The agent's own shell: Claude Code hands a session-start hook a file (``CLAUDE_ENV_FILE``)
  whose ``export`` lines it runs before each of the agent's shell commands; Codex names
  the same kind of file ``CODEX_ENV_FILE`` in versions that have it. ``export_to_shell``
  writes the identity and the record there, so the agent's own ``atlas put`` acts as the
  identity the hooks act as. Gemini CLI and Codex 0.171 give a hook no such file: for
  Gemini, `atlas setup gemini --as NAME` adds a BeforeTool hook on its shell tool whose
  answer (``shell_identity``) puts the same exports before a command that runs atlas.
* Turn end (Claude and Codex ``Stop``, Gemini ``AfterAgent``): allow is exit 0 with no
  output (Claude) or ``{}`` (Codex, Gemini); block is ``{"decision": "block", "reason":
  R}`` (Claude, Codex) or ``{"decision": "deny", "reason": R}`` (Gemini), exit 0. The
  input's ``stop_hook_active`` is true while the agent already goes on because of a
  block: such a stop is always allowed, so a hook can never trap the agent.
* Cursor (``.cursor/hooks.json``, ``{"version": 1, "hooks": {...}}``): ``sessionStart``
  answers ``{"additional_context": T}``; ``stop`` allows with ``{}`` and keeps the agent
  working with ``{"followup_message": R}``; its input names ``workspace_roots`` rather
  than a cwd, and counts follow-ups in ``loop_count`` rather than ``stop_hook_active``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Any

from atlas_files.facts import environment
from atlas_files.facts.text import escape_controls

HARNESSES = ("claude", "codex", "gemini", "cursor")
INPUT_LIMIT = 16 << 20  # a harness sends a few hundred bytes; never read a runaway stream


def say(message: str) -> None:
    """A word to the person on stderr (a hook's stdout is the harness's)."""
    sys.stderr.write(f"atlas: {escape_controls(message)}\n")


def out(text: str | None) -> None:
    """The hook's answer on stdout, if it has one."""
    if text is not None:
        sys.stdout.write(text + "\n")


def read_event() -> dict[str, Any]:
    """The harness's JSON event from stdin ({} when there is none or it is not JSON: a
    person trying the command by hand, or a harness that sends nothing)."""
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    try:
        raw = sys.stdin.buffer.read(INPUT_LIMIT)
        value = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def goes_on(event: dict[str, Any]) -> bool:
    """A session start that continues a session: after a compaction, or a resume."""
    return event.get("source") in ("compact", "resume")


def stop_hook_active(event: dict[str, Any]) -> bool:
    """The agent already goes on because of a hook (Cursor counts its follow-ups in
    ``loop_count`` instead), or the loop did not end by itself (Cursor's ``status``
    aborted or error): either way the stop is let through."""
    if event.get("stop_hook_active") is True:
        return True
    count = event.get("loop_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return True
    return event.get("status") in ("aborted", "error")


def cwd(event: dict[str, Any]) -> str | None:
    value = event.get("cwd")
    if isinstance(value, str) and value:
        return value
    roots = event.get("workspace_roots")  # Cursor names the workspace, not a cwd
    if isinstance(roots, list) and roots and isinstance(roots[0], str) and roots[0]:
        return roots[0]
    return None


def _dump(value: dict[str, Any]) -> str:
    # ASCII only: nothing in the document can reach a terminal or a parser as a control.
    return json.dumps(value, ensure_ascii=True)


def context(harness: str, text: str) -> str:
    """What a session-start hook prints to hand ``text`` to the agent."""
    if harness == "cursor":
        return _dump({"additional_context": text})
    return _dump({"hookSpecificOutput": {"hookEventName": "SessionStart",
                                         "additionalContext": text}})


def allow(harness: str) -> str | None:
    """What a hook prints to let the harness go on; None: nothing at all."""
    return None if harness == "claude" else "{}"


def block(harness: str, reason: str) -> str:
    """What a turn-end hook prints to keep the agent working, ``reason`` its next prompt."""
    if harness == "cursor":  # sent as the user's next message; loop_limit bounds it
        return _dump({"followup_message": reason})
    decision = "deny" if harness == "gemini" else "block"
    return _dump({"decision": decision, "reason": reason})


# The variables a harness names for a file of `export` lines that its agent's shell runs
# before each command, the first one set wins (Codex sets both in versions that have it).
ENV_FILES = ("CODEX_ENV_FILE", "CLAUDE_ENV_FILE")


def export_to_shell(values: dict[str, str]) -> str | None:
    """Append ``export NAME=VALUE`` lines for ``values`` to the file the harness named
    for its agent's shell; the file's path, or None where the harness named none (or it
    could not be written: the session goes on without)."""
    path = next((os.environ[name] for name in ENV_FILES if os.environ.get(name)), None)
    if path is None or not values:
        return None
    lines = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in values.items())
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(lines)
    except OSError:
        return None
    return path


# Where Claude Code hands a plugin's hooks and servers the identity a person configured
# for the plugin (`claude plugin install atlas --config identity=NAME`): its userConfig
# option `identity`, exported to the plugin's processes.
PLUGIN_IDENTITY = "CLAUDE_PLUGIN_OPTION_IDENTITY"


def identity(given: str | None) -> str | None:
    """Who a hook acts as: ``given`` (--as, else $ATLAS_AS), else the identity configured
    for the plugin that runs it, else None."""
    if given:
        return given
    configured = os.environ.get(PLUGIN_IDENTITY, "")
    # An option never set reaches a server as "" or as its unexpanded ${user_config...}.
    return configured if configured and "$" not in configured else None


def before_shell(event: dict[str, Any]) -> bool:
    """Gemini CLI's BeforeTool event for its shell tool (setup's identity hook)."""
    return (event.get("hook_event_name") == "BeforeTool"
            and event.get("tool_name") == "run_shell_command")


def shell_identity(harness: str, event: dict[str, Any], values: dict[str, str]) -> str:
    """The answer to a BeforeTool event of the shell tool: a command that runs atlas gets
    ``values`` exported before it (Gemini merges ``tool_input`` over the model's
    arguments); any other command is left as it is."""
    tool_input = event.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or "atlas" not in command or environment.AS not in values:
        return "{}"
    exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in values.items())
    return _dump({"hookSpecificOutput": {"hookEventName": "BeforeTool",
                                         "tool_input": {"command": f"export {exports}; "
                                                        f"{command}"}}})
