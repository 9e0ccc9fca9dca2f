"""Codex: ``.codex/hooks.json``, the hooks trusted one by one (codextrust.py), and the
agent's shell identity in ``.codex/config.toml``.

Session start ``SessionStart``, turn end ``Stop``, tools ``PreToolUse`` and
``PostToolUse``. A file edit is ``apply_patch``, whose patch text in
``tool_input.command`` names the files (base.patch_files), relative to ``cwd``. Codex
fails ``ask`` open (it would let the edit through), so a stopped edit is refused, and
the reason says how a person lets it go ahead. Its hooks give the agent's shell no
identity (0.171), but its config does: `shell_environment_policy.set`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from atlas_files.harness.base import Harness, Hook, timeout

_STATUS = {"begin": "atlas: reading the record",
           "end": "atlas: checking the status was written",
           "guard": "atlas: checking the edit against leases and recent commits",
           "news": "atlas: news from the record"}


class Codex(Harness):
    name = "codex"
    settings = (".codex", "hooks.json")
    session_events = ("SessionStart", "Stop")
    # Codex names a file edit apply_patch (Edit and Write are its matcher aliases), or,
    # for a model it offers no apply_patch tool, Bash: the patch fed to apply_patch
    # through its shell (the guard reads the patch there too; other commands cost it a
    # look at the command line).
    tool_hooks: ClassVar[tuple[Hook, ...]] = (
        ("PreToolUse", "guard", "Bash|apply_patch|Edit|Write"),
        ("PostToolUse", "news", None))
    edit_tools = frozenset({"apply_patch", "edit", "write"})
    asks_person = False
    post_events = ("PostToolUse", "UserPromptSubmit")
    shell_set_by_setup = ("set ATLAS_AS for Codex's shell (`[shell_environment_policy.set]` "
                          "in .codex/config.toml)")
    shell_config = (".codex", "config.toml")
    trusts_hooks = True
    setup_note = (
        "Codex runs these hooks only in a trusted project, and only once a person has "
        "trusted each hook (by its content, so again after every change): trust the "
        "project (`codex exec --trust` once here, or [projects.\"<this folder>\"] "
        "trust_level = \"trusted\" in ~/.codex/config.toml), then trust the atlas hooks: "
        "run this setup again with --trust, or open `codex` here and trust them in "
        "/hooks. Until then `codex exec` skips them without a "
        "word; for unattended runs of hooks you have read, `codex exec "
        "--dangerously-bypass-hook-trust` runs them for that run only")

    def pre_ask(self, person: str, model: str) -> str:
        return self.pre_deny(model, person)

    def handler(self, verb: str, command: str) -> dict[str, Any]:
        return {"type": "command", "command": command, "timeout": timeout(verb),
                "statusMessage": _STATUS[verb]}

    def trust(self, root: Path, is_ours: Callable[[Any], str | None]) -> list[str]:
        """Have Codex record the person's trust in atlas's hooks of ``root``; the events
        trusted (codextrust.trust_hooks)."""
        # Here, not at the top: the hooks themselves never start a process.
        from atlas_files.harness import codextrust  # noqa: PLC0415 - see above

        return codextrust.trust_hooks(root, is_ours)


HARNESS = Codex()
