"""Claude Code: ``.claude/settings.json``; the protocol of base.py as it stands.

Session start ``SessionStart``, turn end ``Stop``, tools ``PreToolUse`` and
``PostToolUse``; its file tools ``Edit``, ``Write`` and ``MultiEdit`` name
``tool_input.file_path``, ``NotebookEdit`` ``tool_input.notebook_path`` (absolute). A
hook that lets it go on prints nothing; a stopped edit asks the person
(``permissionDecision`` ask). Its plugin carries its own copy of these hooks
(plugin/hooks/hooks.json).
"""

from __future__ import annotations

from typing import ClassVar

from atlas_files.harness.base import COMMON_EDIT_TOOLS, Harness, Hook


class Claude(Harness):
    name = "claude"
    settings = (".claude", "settings.json")
    session_events = ("SessionStart", "Stop")
    tool_hooks: ClassVar[tuple[Hook, ...]] = (
        ("PreToolUse", "guard", "Edit|Write|MultiEdit|NotebookEdit"),
        ("PostToolUse", "news", None))
    edit_tools = COMMON_EDIT_TOOLS
    post_events = ("PostToolUse", "UserPromptSubmit")
    setup_note = ("Claude Code runs the hooks from .claude/settings.json; a teammate with "
                  "another identity sets ATLAS_AS instead of sharing --as")

    def allow(self) -> str | None:
        return None  # exit 0 with nothing on stdout: go on


HARNESS = Claude()
