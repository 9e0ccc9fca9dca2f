"""Gemini CLI: ``.gemini/settings.json``, hooks named and timed in milliseconds.

Session start ``SessionStart``, turn end ``AfterAgent`` (block is ``{"decision":
"deny"}``), tools ``BeforeTool`` and ``AfterTool``; ``write_file`` and ``replace`` name
``tool_input.file_path``, relative to the project folder or absolute. Its ``ask`` tells
the person, never the model, and waits in a headless run, so a stopped edit is refused;
BeforeTool takes no context, so the guard's waits for the next AfterTool. No hook can
set the agent's shell environment, but a BeforeTool hook on its shell tool may rewrite
the command: with an identity, setup adds one that puts the exports before a command
that runs atlas.
"""

from __future__ import annotations

from typing import Any, ClassVar

from atlas_files.facts import environment
from atlas_files.harness.base import Harness, Hook, dump, exports, timeout

# Setup's identity hook: (event, the shell tool it matches).
SHELL_TOOL = ("BeforeTool", "run_shell_command")


class Gemini(Harness):
    name = "gemini"
    settings = (".gemini", "settings.json")
    session_events = ("SessionStart", "AfterAgent")
    tool_hooks: ClassVar[tuple[Hook, ...]] = (
        ("BeforeTool", "guard", "write_file|replace"), ("AfterTool", "news", None))
    edit_tools = frozenset({"write_file", "replace", "edit"})
    pre_context_ok = False
    asks_person = False
    post_events = ("AfterTool", "BeforeAgent")
    shell_set_by_setup = "installed its BeforeTool hook"
    shell_tool = SHELL_TOOL
    setup_note = (
        "Gemini CLI runs a project's hooks only in a folder you trusted (it asks; "
        "GEMINI_CLI_TRUST_WORKSPACE=true for unattended runs) and names them at start. "
        "With --as, a BeforeTool hook on its shell tool puts ATLAS_AS before each "
        "command that runs atlas (no hook can set the shell's environment there). "
        "It reads GEMINI.md, "
        "not AGENTS.md, unless context.fileName names AGENTS.md")

    def block(self, reason: str) -> str:
        return dump({"decision": "deny", "reason": reason})

    def pre_ask(self, person: str, model: str) -> str:
        return self.pre_deny(model, person)

    def pre_deny(self, model: str, person: str | None = None) -> str:
        answer: dict[str, Any] = {"decision": "deny", "reason": model}
        if person:
            answer["systemMessage"] = person
        return dump(answer)

    def shell_identity(self, event: dict[str, Any], values: dict[str, str]) -> str | None:
        """A command that runs atlas gets ``values`` exported before it (Gemini merges
        ``tool_input`` over the model's arguments); any other command is left as it is."""
        if (event.get("hook_event_name"), event.get("tool_name")) != self.shell_tool:
            return None
        tool_input = event.get("tool_input")
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        if not isinstance(command, str) or "atlas" not in command or environment.AS not in values:
            return "{}"
        return dump({"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {
            "command": f"export {exports(values)}; {command}"}}})

    def handler(self, verb: str, command: str) -> dict[str, Any]:
        return {"name": f"atlas-{verb}", "type": "command", "command": command,
                "timeout": timeout(verb) * 1000}

    def shell_handler(self, command: str) -> dict[str, Any]:
        return {**self.handler("begin", command), "name": "atlas-identity", "timeout": 10000}


HARNESS = Gemini()
