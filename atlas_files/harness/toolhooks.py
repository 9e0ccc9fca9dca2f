"""The tool-call hook protocols of the agent harnesses, as `atlas guard --hook H` (before a
tool runs) and `atlas news --hook H` (after it) speak them.

Which files a call would change, by harness and tool (``edit_targets``):

* Claude Code ``PreToolUse``/``PostToolUse``: ``Edit``, ``Write`` and ``MultiEdit`` name
  ``tool_input.file_path``, ``NotebookEdit`` ``tool_input.notebook_path`` (absolute).
* Codex ``PreToolUse``/``PostToolUse``: ``apply_patch`` carries the patch text in
  ``tool_input.command``; its ``*** Add File:``, ``*** Update File:``, ``*** Delete
  File:`` and ``*** Move to:`` lines name the files, relative to ``cwd`` (indented or
  not: Codex trims white space around each line). A shell command that feeds such a
  patch to ``apply_patch`` is read the same way.
* Gemini CLI ``BeforeTool``/``AfterTool``: ``write_file`` and ``replace`` name
  ``tool_input.file_path``, relative to the project folder or absolute.
* Cursor ``preToolUse``/``postToolUse``: its file tools (``Write``, ``Edit``,
  ``Delete``, ...) name ``tool_input.file_path`` (or ``path``, ``target_file``).

What a hook answers (one JSON document on stdout, exit 0; docs/sessions.md cites the
references):

=========  ====================================  ==========================================
harness    stop for a person / refuse            context for the model
=========  ====================================  ==========================================
claude     ``hookSpecificOutput``                ``hookSpecificOutput.additionalContext``
           ``permissionDecision`` ask / deny,    (PreToolUse and PostToolUse)
           ``permissionDecisionReason``
codex      ``permissionDecision`` deny (Codex    the same ``additionalContext``
           fails ``ask`` open: it would let
           the edit through)
gemini     ``decision`` deny, ``reason`` (its    AfterTool's ``additionalContext`` only:
           ``ask`` tells the person, never the   BeforeTool takes none, so the guard's
           model, and waits in a headless run)   context waits for the next AfterTool
cursor     ``permission`` ask / deny,            postToolUse's ``additional_context``
           ``user_message``, ``agent_message``   only, as for Gemini
=========  ====================================  ==========================================
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from atlas_files.facts.text import escape_controls, field
from atlas_files.harness import hookio

HARNESSES = ("claude", "codex", "gemini", "cursor")
# Harnesses whose pre-tool hook can hand the model context while letting the call run.
PRE_CONTEXT = ("claude", "codex")

_FILE_KEYS = ("file_path", "notebook_path", "path", "target_file", "filePath")
_EDIT_TOOLS = {
    "claude": {"edit", "write", "multiedit", "notebookedit"},
    "codex": {"apply_patch", "edit", "write"},
    "gemini": {"write_file", "replace", "edit"},
    "cursor": {"write", "edit", "multiedit", "delete", "strreplace", "search_replace",
               "edit_file", "write_file", "delete_file", "apply_patch"},
}
_PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
# Codex's parser trims each header line of the white space Rust's `str::trim` knows
# (Unicode White_Space), so an indented header names a file as surely as one that is not.
CODEX_SPACE = ("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
               "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_MAX_FILES = 200  # files taken from one call; a patch naming more is still guarded by these


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value and "\0" not in value else None


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


def event_folder(event: dict[str, Any]) -> str | None:
    """The session's folder: ``cwd``, else Cursor's first workspace root."""
    cwd = _text(event.get("cwd"))
    if cwd:
        return cwd
    roots = event.get("workspace_roots")
    if isinstance(roots, list) and roots:
        return _text(roots[0])
    return None


def edit_targets(harness: str, event: dict[str, Any]) -> list[str]:
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
    command = _text(tool_input.get("command")) or _text(tool_input.get("patch")) \
        or _text(tool_input.get("input"))
    if command and "*** Begin Patch" in command and (name == "apply_patch"
                                                      or "apply_patch" in command):
        found += patch_files(command)
    elif name in _EDIT_TOOLS.get(harness, ()) or name in _EDIT_TOOLS["claude"]:
        for key in _FILE_KEYS:
            value = _text(tool_input.get(key))
            if value:
                found.append(value)
                break
    base = event_folder(event) or os.getcwd()
    out = []
    for path in found[:_MAX_FILES]:
        path = os.path.expanduser(path) if path.startswith("~") else path
        # A relative cwd in the event (no harness sends one) is taken from this folder.
        out.append(os.path.abspath(os.path.join(base, path)))
    return list(dict.fromkeys(out))


def _dump(value: dict[str, Any]) -> str:
    # ASCII only: nothing in the document can reach a terminal or a parser as a control.
    return json.dumps(value, ensure_ascii=True)


# -- before the tool runs -------------------------------------------------------------------


def pre_allow(harness: str, note: str | None = None) -> str | None:
    """Let the call run, deciding nothing (the harness's own permissions still apply);
    ``note`` is shown to the person where the harness shows one. None: print nothing."""
    if note and harness in ("claude", "codex", "gemini"):
        return _dump({"systemMessage": note})
    return None if harness == "claude" else "{}"


def pre_context(harness: str, text: str) -> str | None:
    """Let the call run and hand ``text`` to the model (claude, codex); elsewhere, let it
    run and say nothing (the caller keeps ``text`` for the post-tool hook)."""
    if harness in PRE_CONTEXT:
        return _dump({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                             "additionalContext": text}})
    return pre_allow(harness)


def pre_ask(harness: str, person: str, model: str) -> str:
    """Stop the call for a person to decide, as the harness offers it: Claude Code and
    Cursor ask (a headless run treats that as a denial); Codex and Gemini CLI deny, with
    ``model`` as the reason their model reads."""
    if harness == "claude":
        return _dump({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                             "permissionDecision": "ask",
                                             "permissionDecisionReason": person,
                                             "additionalContext": model}})
    if harness == "cursor":
        return _dump({"permission": "ask", "user_message": person, "agent_message": model})
    return pre_deny(harness, model, person)


def pre_deny(harness: str, model: str, person: str | None = None) -> str:
    """Refuse the call, ``model`` the reason the model reads."""
    if harness in ("claude", "codex"):
        return _dump({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                             "permissionDecision": "deny",
                                             "permissionDecisionReason": model}})
    if harness == "gemini":
        out: dict[str, Any] = {"decision": "deny", "reason": model}
        if person:
            out["systemMessage"] = person
        return _dump(out)
    return _dump({"permission": "deny", "user_message": person or model,
                  "agent_message": model})


def override(harness: str, resource: str, holder: str) -> str:
    """How a person lets an edit the guard stopped go ahead, in the harness at hand."""
    if harness in ("claude", "cursor"):
        return ("This edit was put to a person. If it did not run, do not work around the "
                "guard (no shell command that writes the file): do one of the above. If a "
                f"person allowed it, tell {holder} through the record what you changed.")
    return (f"A person who decides to go ahead anyway breaks the lease, which {holder} will "
            f"see: `atlas lease break {resource} --why TEXT`; then the edit passes. Do not "
            "work around the guard (no shell command that writes the file).")


# -- after the tool ran ---------------------------------------------------------------------

_POST_EVENTS = {"claude": ("PostToolUse", "UserPromptSubmit"),
                "codex": ("PostToolUse", "UserPromptSubmit"),
                "gemini": ("AfterTool", "BeforeAgent")}


def post_context(harness: str, event: dict[str, Any], text: str | None) -> str | None:
    """What a post-tool (or prompt-submit) hook prints to hand ``text`` to the model; with
    no text, what lets the harness go on."""
    if text is None:
        return None if harness == "claude" else "{}"
    if harness == "cursor":
        return _dump({"additional_context": text})
    events = _POST_EVENTS[harness]
    name = event.get("hook_event_name")
    return _dump({"hookSpecificOutput": {
        "hookEventName": name if name in events else events[0],
        "additionalContext": text}})


def succeeded(event: dict[str, Any]) -> bool:
    """Whether the tool call an after-tool event reports went through (a response that
    says it failed, or an error, did not change the file)."""
    response = event.get("tool_response")
    if isinstance(response, dict):
        if response.get("error") or response.get("success") is False:
            return False
    return event.get("error") in (None, "", False)


# -- the hooks' answers -----------------------------------------------------------------------
# Given by the entry point's fast path before click loads (they run around every tool call
# an agent makes: this module is outside the cli package, whose import loads click), and
# by the full CLI's `guard --hook` and `news --hook` alike. Neither ever breaks the
# harness or traps the agent: outside a record they let the call run and say nothing;
# whatever goes wrong in them (a damaged record, input they cannot read, a bug) lets the
# call run too, with a short note on stderr and, where the harness shows one to the
# person, in its message.

NOTE = "atlas guard could not check this edit, and let it through"


def _say(message: str) -> None:
    sys.stderr.write(f"atlas: {escape_controls(message)}\n")


def _out(text: str | None) -> None:
    if text is not None:
        sys.stdout.write(text + "\n")


def _person(verdict: Any) -> str:
    """The short form a person reads in the harness's prompt."""
    from atlas_files.api.editguard import STOPPED  # noqa: PLC0415

    stops = verdict.of(STOPPED)
    lines = [field(f"{f.path}: {f.by}'s path lease {f.resource}", 200) for f in stops[:3]]
    more = f" and {len(stops) - 3} more" if len(stops) > 3 else ""
    return (f"atlas guard: this edit touches files under another's lease ({'; '.join(lines)}"
            f"{more}). The lease is advisory. Allow the edit only if you mean to go ahead "
            "anyway; then tell the holder through the record.")


def guard_hook(harness: str, record_path: str | None, identity: str | None,
               project: str | None) -> None:
    """Answer harness ``harness``'s pre-tool hook for the call on stdin."""
    event = hookio.read_event()
    try:
        _guard(harness, event, record_path, hookio.identity(identity))
    except Exception as exc:  # noqa: BLE001 - an edit never waits on a bug of the guard's
        _say(f"{NOTE}: {type(exc).__name__}: {exc}")
        _out(pre_allow(harness, NOTE))


def _guard(harness: str, event: dict[str, Any], record_path: str | None,
           identity: str | None) -> None:
    files = edit_targets(harness, event)
    if not files:
        _out(pre_allow(harness))
        return
    from atlas_files.api import editguard  # noqa: PLC0415 - only for an edit

    verdict = editguard.check_edit(files, identity=identity, record=record_path,
                            cwd=event_folder(event))
    for note in verdict.notes:
        _say(note)
    decision = verdict.decision
    if decision == editguard.ALLOW:
        _out(pre_allow(harness))
        return
    waiting = harness not in PRE_CONTEXT and bool(verdict.of(editguard.TOLD))
    kept = editguard.remember(verdict, pending=waiting)
    text = verdict.text()
    if decision == editguard.REFUSED:
        _out(pre_deny(harness, text, "atlas guard refused an edit of the "
                                "record's own files: " + verdict.of(editguard.REFUSED)[0].path))
    elif decision == editguard.STOPPED:
        stop = verdict.of(editguard.STOPPED)[0]
        model = f"{text}\n\n{override(harness, stop.resource or '', field(stop.by or '', 80))}"
        _out(pre_ask(harness, _person(verdict), model))
    elif harness in PRE_CONTEXT:
        _out(pre_context(harness, text))
    else:
        # Gemini CLI and Cursor take no context before a tool: the next post-tool hook
        # hands it over (kept); without a session row to keep it in, the person is told.
        _out(pre_allow(harness, None if kept else verdict.of(editguard.TOLD)[0].what))


def news_hook(harness: str, record_path: str | None, identity: str | None,
              project: str | None) -> None:
    """Answer harness ``harness``'s post-tool (or prompt-submit) hook."""
    event = hookio.read_event()
    try:
        text = _news(harness, event, record_path, hookio.identity(identity))
    except Exception as exc:  # noqa: BLE001 - news is never worth breaking a session
        _say(f"no news this time ({type(exc).__name__}: {exc})")
        text = None
    _out(post_context(harness, event, text))


def _news(harness: str, event: dict[str, Any], record_path: str | None,
          identity: str | None) -> str | None:
    from atlas_files.api import editguard  # noqa: PLC0415
    from atlas_files.facts import environment  # noqa: PLC0415
    from atlas_files.facts.names import is_name  # noqa: PLC0415

    folder = event_folder(event)
    files = edit_targets(harness, event) if succeeded(event) else []
    real = [os.path.realpath(f) for f in files]
    root, notes = editguard.find_record(record_path, folder, real, os.environ)
    for note in notes:
        _say(note)
    who = environment.identity(identity)
    if root is None or not who or not is_name(who):
        return None
    from atlas_files.facts import layout  # noqa: PLC0415
    from atlas_files.storage import volcase  # noqa: PLC0415

    record_real = os.path.realpath(root)
    folds = volcase.folds_case(record_real, layout.CONFIG_NAME)
    edited = []
    for path in real:
        repo = editguard.repository_root(path, record_real, folds)
        rel = editguard.inside(path, repo, folds) if repo else None
        if rel:
            edited.append(rel)
    from atlas_files.api.news import after_tool  # noqa: PLC0415
    from atlas_files.storage.record import Record  # noqa: PLC0415

    news = after_tool(Record(root), who, edited=edited, files=real)
    return news.text if news else None
