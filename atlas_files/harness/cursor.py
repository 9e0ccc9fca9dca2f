"""Cursor: ``.cursor/hooks.json`` (``{"version": 1, "hooks": {...}}``), flat entries.

``sessionStart`` answers ``{"additional_context": T}``; ``stop`` allows with ``{}`` and
keeps the agent working with ``{"followup_message": R}``, sent as the user's next message
at most ``loop_limit`` times in a row. Its input names ``workspace_roots`` rather than a
cwd, and counts follow-ups in ``loop_count`` rather than ``stop_hook_active``.
``preToolUse`` runs for every tool (the guard picks out its file tools: ``Write``,
``Edit``, ``Delete``, ... naming ``tool_input.file_path``, ``path`` or ``target_file``) and
answers ``permission`` ask / deny with ``user_message`` and ``agent_message``; only
``postToolUse`` takes context (``additional_context``), so the guard's waits for it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from atlas_files.harness.base import Harness, Hook, dump, timeout

# The stop hook may send the block's reason back as a follow-up this many times in a row.
LOOP_LIMIT = 5


class Cursor(Harness):
    name = "cursor"
    settings = (".cursor", "hooks.json")
    session_events = ("sessionStart", "stop")
    # preToolUse for every tool: the guard picks out its file tools itself.
    tool_hooks: ClassVar[tuple[Hook, ...]] = (
        ("preToolUse", "guard", None), ("postToolUse", "news", None))
    edit_tools = frozenset({"write", "edit", "multiedit", "delete", "strreplace",
                            "search_replace", "edit_file", "write_file", "delete_file",
                            "apply_patch"})
    pre_context_ok = False
    shows_note = False
    post_events = ("postToolUse",)
    setup_note = (
        "Cursor runs .cursor/hooks.json in this project (in a trusted workspace): "
        "session start, stop, the edit guard (preToolUse) and the news hook "
        "(postToolUse); its stop hook sends the "
        f"reason back as your next message at most loop_limit ({LOOP_LIMIT}) times in a "
        "row. No hook can set the agent's shell environment there: the briefing tells the "
        "agent to pass --as")

    def context(self, text: str) -> str:
        return dump({"additional_context": text})

    def block(self, reason: str) -> str:
        return dump({"followup_message": reason})  # loop_limit bounds it

    def pre_ask(self, person: str, model: str) -> str:
        return dump({"permission": "ask", "user_message": person, "agent_message": model})

    def pre_deny(self, model: str, person: str | None = None) -> str:
        return dump({"permission": "deny", "user_message": person or model,
                     "agent_message": model})

    def post_context(self, event: dict[str, Any], text: str | None) -> str | None:
        return self.allow() if text is None else dump({"additional_context": text})

    def handler(self, verb: str, command: str) -> dict[str, Any]:
        flat: dict[str, Any] = {"command": command, "timeout": timeout(verb)}
        return flat | ({"loop_limit": LOOP_LIMIT} if verb == "end" else {})

    def new_group(self, handler: dict[str, Any], matcher: str | None) -> dict[str, Any]:
        return handler  # a flat entry: no type, no group

    def settings_base(self) -> dict[str, Any]:
        return {"version": 1}


HARNESS = Cursor()
