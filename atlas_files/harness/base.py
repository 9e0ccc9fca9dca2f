"""The hook protocol every agent harness speaks with atlas: the events a hook reads, the
answers it prints, and what `atlas setup` installs; each harness's module says how its
own harness differs (claude.py, codex.py, gemini.py, cursor.py, listed in registry.py).

A harness runs the hook command with one JSON object on stdin and reads stdout as JSON
only: any other byte there breaks the hook (Codex fails a Stop hook whose stdout is not a
JSON object; Gemini CLI requires stdout to hold nothing but the final JSON). So a hook
prints exactly one document, or nothing where the harness reads nothing as "go on"
(Claude Code); notes for a person go to stderr. docs/sessions.md cites the references.

Four hooks, each an `atlas VERB --hook H` command line:

* ``begin`` at session start: hands the agent the briefing as context.
* ``end`` at turn end: lets the agent stop, or keeps it working with a reason. The
  input's ``stop_hook_active`` (Cursor: ``loop_count``) is true while the agent already
  goes on because of a block: such a stop is always allowed, so a hook can never trap
  the agent.
* ``guard`` before a tool runs: lets the call run, hands the model context, stops it for
  a person, or refuses it.
* ``news`` after a tool ran (or before a prompt): hands the model what changed.

What the tool-call hooks answer, side by side (each harness's module says why):

=========  ====================================  ==========================================
harness    stop for a person / refuse            context for the model
=========  ====================================  ==========================================
claude     ``hookSpecificOutput``                ``hookSpecificOutput.additionalContext``
           ``permissionDecision`` ask / deny,    (PreToolUse and PostToolUse)
           ``permissionDecisionReason``
codex      ``permissionDecision`` deny           the same ``additionalContext``
gemini     ``decision`` deny, ``reason``         AfterTool's ``additionalContext`` only
cursor     ``permission`` ask / deny,            postToolUse's ``additional_context``
           ``user_message``, ``agent_message``   only, as for Gemini
=========  ====================================  ==========================================

The agent's own shell: Claude Code hands a session-start hook a file (``CLAUDE_ENV_FILE``)
whose ``export`` lines it runs before each of the agent's shell commands; Codex names the
same kind of file ``CODEX_ENV_FILE`` in versions that have it. ``export_to_shell`` writes
the identity and the record there, so the agent's own ``atlas put`` acts as the identity
the hooks act as. Where a harness gives a hook no such file, its `atlas setup --as NAME`
may (``Harness.shell_set_by_setup``).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import TYPE_CHECKING, Any, ClassVar

from atlas_files.facts.text import escape_controls

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

VERBS = ("begin", "end", "guard", "news")
INPUT_LIMIT = 16 << 20  # a harness sends a few hundred bytes; never read a runaway stream

# One hook group in a harness's settings: (event, verb, the matcher of its group).
Hook = tuple[str, str, str | None]


def dump(value: dict[str, Any]) -> str:
    """One answer document. ASCII only: nothing in it can reach a terminal or a parser as
    a control."""
    return json.dumps(value, ensure_ascii=True)


def _specific(event: str, **fields: Any) -> str:
    return dump({"hookSpecificOutput": {"hookEventName": event, **fields}})


class Harness:
    """One agent harness as atlas's hooks meet it. The class's own answers are those most
    harnesses share (Claude Code's documents, whose protocol the others follow most
    closely, and ``{}`` to go on); a harness's module overrides what differs."""

    name: ClassVar[str]
    # Where `atlas setup` writes the hooks: (folder, file) in the project.
    settings: ClassVar[tuple[str, str]]
    # The event at session start, and the one after each turn of the agent.
    session_events: ClassVar[tuple[str, str]]
    # The edit-time hooks: before each file edit `guard`, after each tool call `news`.
    tool_hooks: ClassVar[tuple[Hook, ...]]
    # Its file tools' names, lower case: a call of one edits the file it names.
    edit_tools: ClassVar[frozenset[str]]
    # Whether its pre-tool hook can hand the model context while letting the call run.
    pre_context_ok: ClassVar[bool] = True
    # Whether its pre-tool hook can stop a call for a person (else it refuses the call).
    asks_person: ClassVar[bool] = True
    # Whether a note to the person can go with an answer that lets a call run.
    shows_note: ClassVar[bool] = True
    # The post-tool events whose answer carries context (the first by default).
    post_events: ClassVar[tuple[str, ...]]
    # What its `atlas setup --as NAME` does for the agent's shell, where a hook cannot.
    shell_set_by_setup: ClassVar[str | None] = None
    # A file of the harness's config where setup sets ATLAS_AS for the agent's shell.
    shell_config: ClassVar[tuple[str, str] | None] = None
    # (event, tool): the shell tool whose commands setup's identity hook rewrites, where a
    # hook may rewrite a command but not set the shell's environment.
    shell_tool: ClassVar[tuple[str, str] | None] = None
    # Whether `atlas setup --trust` can record the person's trust in the hooks.
    trusts_hooks: ClassVar[bool] = False
    # What `atlas setup` tells the person about running the hooks there.
    setup_note: ClassVar[str]

    def hooks(self) -> tuple[Hook, ...]:
        """Every hook setup installs: the session's two, then the tool hooks."""
        start, stop = self.session_events
        return ((start, "begin", None), (stop, "end", None), *self.tool_hooks)

    # -- session start and turn end ------------------------------------------------------

    def context(self, text: str) -> str:
        """What a session-start hook prints to hand ``text`` to the agent."""
        return _specific("SessionStart", additionalContext=text)

    def allow(self) -> str | None:
        """What a hook prints to let the harness go on; None: nothing at all."""
        return "{}"

    def block(self, reason: str) -> str:
        """What a turn-end hook prints to keep the agent working, ``reason`` its next
        prompt."""
        return dump({"decision": "block", "reason": reason})

    def shell_identity(self, event: dict[str, Any], values: dict[str, str]) -> str | None:
        """The answer to an event of setup's shell-identity hook (``values`` to export
        before an atlas command); None: ``event`` is no such event."""
        return None

    # -- before a tool runs --------------------------------------------------------------

    def pre_allow(self, note: str | None = None) -> str | None:
        """Let the call run, deciding nothing (the harness's own permissions still
        apply); ``note`` is shown to the person where the harness shows one."""
        if note and self.shows_note:
            return dump({"systemMessage": note})
        return self.allow()

    def pre_context(self, text: str) -> str | None:
        """Let the call run and hand ``text`` to the model; where the harness cannot
        (``pre_context_ok``), let it run and say nothing (the caller keeps ``text`` for
        the post-tool hook)."""
        if self.pre_context_ok:
            return _specific("PreToolUse", additionalContext=text)
        return self.pre_allow()

    def pre_ask(self, person: str, model: str) -> str:
        """Stop the call for a person to decide (a headless run treats that as a denial),
        or, where the harness cannot ask, refuse it with ``model`` as the reason."""
        return _specific("PreToolUse", permissionDecision="ask",
                         permissionDecisionReason=person, additionalContext=model)

    def pre_deny(self, model: str, person: str | None = None) -> str:
        """Refuse the call, ``model`` the reason the model reads."""
        return _specific("PreToolUse", permissionDecision="deny",
                         permissionDecisionReason=model)

    def override(self, resource: str, holder: str) -> str:
        """How a person lets an edit the guard stopped go ahead, in this harness."""
        if self.asks_person:
            return ("This edit was put to a person. If it did not run, do not work around "
                    "the guard (no shell command that writes the file): do one of the above. "
                    f"If a person allowed it, tell {holder} through the record what you "
                    "changed.")
        return (f"A person who decides to go ahead anyway breaks the lease, which {holder} "
                f"will see: `atlas lease break {resource} --why TEXT`; then the edit passes. "
                "Do not work around the guard (no shell command that writes the file).")

    # -- after a tool ran ----------------------------------------------------------------

    def post_context(self, event: dict[str, Any], text: str | None) -> str | None:
        """What a post-tool (or prompt-submit) hook prints to hand ``text`` to the model;
        with no text, what lets the harness go on."""
        if text is None:
            return self.allow()
        name = event.get("hook_event_name")
        return _specific(name if name in self.post_events else self.post_events[0],
                         additionalContext=text)

    # -- what `atlas setup` writes -------------------------------------------------------

    def handler(self, verb: str, command: str) -> dict[str, Any]:
        """One hook entry running ``command`` in the harness's own form."""
        return {"type": "command", "command": command, "timeout": timeout(verb)}

    def new_group(self, handler: dict[str, Any], matcher: str | None) -> dict[str, Any]:
        """The entry a new hook is listed as under its event."""
        return {"matcher": matcher, "hooks": [handler]} if matcher else {"hooks": [handler]}

    def shell_handler(self, command: str) -> dict[str, Any]:
        """The entry of setup's identity hook on ``shell_tool``."""
        return self.handler("begin", command)

    def settings_base(self) -> dict[str, Any]:
        """What a settings file holds before any hook is in it."""
        return {}

    def trust(self, root: Path, is_ours: Callable[[Any], str | None]) -> list[str]:
        """Record in the harness the person's trust in atlas's hooks of project ``root``
        (``is_ours`` tells an entry setup wrote); the events trusted. Only where
        ``trusts_hooks``."""
        raise NotImplementedError(f"{self.name} keeps no trust record of hooks")


def timeout(verb: str) -> int:
    """Seconds a harness gives a hook: the briefing reads the record; the rest are quick."""
    return 30 if verb == "begin" else 10


# -- what a hook reads ------------------------------------------------------------------


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


def text(value: Any) -> str | None:
    """``value`` where it is a string a path can be made of, else None."""
    return value if isinstance(value, str) and value and "\0" not in value else None


def folder(event: dict[str, Any]) -> str | None:
    """The session's folder: ``cwd``, else Cursor's first workspace root."""
    cwd = text(event.get("cwd"))
    if cwd:
        return cwd
    roots = event.get("workspace_roots")
    if isinstance(roots, list) and roots:
        return text(roots[0])
    return None


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


def succeeded(event: dict[str, Any]) -> bool:
    """Whether the tool call an after-tool event reports went through (a response that
    says it failed, or an error, did not change the file)."""
    response = event.get("tool_response")
    if isinstance(response, dict):
        if response.get("error") or response.get("success") is False:
            return False
    return event.get("error") in (None, "", False)


# Which files a call would change (``edit_targets``): a file tool names
# ``tool_input.file_path`` (Claude Code's ``NotebookEdit`` ``notebook_path``, Cursor's
# tools ``path`` or ``target_file``); Codex's ``apply_patch`` carries the patch text in
# ``tool_input.command``, whose ``*** Add File:``, ``*** Update File:``, ``*** Delete
# File:`` and ``*** Move to:`` lines name the files, relative to ``cwd``. A shell command
# that feeds such a patch to ``apply_patch`` is read the same way.
_FILE_KEYS = ("file_path", "notebook_path", "path", "target_file", "filePath")
_PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
# Codex's parser trims each header line of the white space Rust's `str::trim` knows
# (Unicode White_Space), so an indented header names a file as surely as one that is not.
CODEX_SPACE = ("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
               "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_MAX_FILES = 200  # files taken from one call; a patch naming more is still guarded by these
# Claude Code's file tools, known whichever harness sends them.
COMMON_EDIT_TOOLS = frozenset({"edit", "write", "multiedit", "notebookedit"})


def patch_files(patch: str) -> list[str]:
    """The files an ``apply_patch`` patch adds, updates, deletes or moves to, as written."""
    if "*** Begin Patch" not in patch:
        return []
    found = []
    for line in patch.split("\n"):  # Codex's lines: only a line feed ends one
        line = line.strip(CODEX_SPACE)
        if line.startswith("*** "):
            for header in _PATCH_HEADERS:
                if line.startswith(header) and len(line) > len(header):
                    found.append(line[len(header):])
    return list(dict.fromkeys(found))


def edit_targets(harness: Harness, event: dict[str, Any]) -> list[str]:
    """The files the tool call in ``event`` would change, as absolute paths ([] for a
    call that edits no file, or an input this cannot read)."""
    tool = event.get("tool_name")
    tool_input = event.get("tool_input")
    if isinstance(tool_input, str):  # Cursor sends some tools' input as a JSON string
        try:
            tool_input = json.loads(tool_input)
        except (ValueError, RecursionError):
            return []
    if not isinstance(tool, str) or not isinstance(tool_input, dict):
        return []
    name = tool.lower()
    found: list[str] = []
    command = text(tool_input.get("command")) or text(tool_input.get("patch")) \
        or text(tool_input.get("input"))
    if command and "*** Begin Patch" in command and (name == "apply_patch"
                                                      or "apply_patch" in command):
        found += patch_files(command)
    elif name in harness.edit_tools or name in COMMON_EDIT_TOOLS:
        for key in _FILE_KEYS:
            value = text(tool_input.get(key))
            if value:
                found.append(value)
                break
    base = folder(event) or os.getcwd()
    paths = []
    for path in found[:_MAX_FILES]:
        path = os.path.expanduser(path) if path.startswith("~") else path
        # A relative cwd in the event (no harness sends one) is taken from this folder.
        paths.append(os.path.abspath(os.path.join(base, path)))
    return list(dict.fromkeys(paths))


# -- who acts, and the agent's shell ----------------------------------------------------

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


def exports(values: dict[str, str]) -> str:
    """``values`` as the assignments of one shell `export` command."""
    return " ".join(f"{name}={shlex.quote(value)}" for name, value in values.items())


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
