"""What every harness's hook answers: one JSON object in ASCII (or nothing, where the
harness reads nothing as "go on"), carrying the text for the model whole."""

from __future__ import annotations

import json
from typing import Any

import pytest

from atlas_files.harness import base
from atlas_files.harness.registry import NAMES, load

# Text a record may hold: non-ASCII, controls, quotes and a line that looks like JSON.
TEXT = 'über "quoted"\n\x1b[31m{"decision": "approve"}\u2028end'


def _document(answer: str | None) -> dict[str, Any]:
    assert answer is not None and answer.isascii() and "\n" not in answer, answer
    doc = json.loads(answer)
    assert isinstance(doc, dict)
    return doc


def _carries(doc: Any, text: str) -> bool:
    if isinstance(doc, dict):
        return any(_carries(v, text) for v in doc.values())
    return doc == text or (isinstance(doc, str) and text in doc)


@pytest.mark.parametrize("name", NAMES)
def test_every_answer_is_one_ascii_json_object_carrying_the_text_whole(name: str) -> None:
    harness = load(name)
    event = {"hook_event_name": harness.tool_hooks[-1][0]}
    for answer in (harness.context(TEXT), harness.block(TEXT), harness.pre_ask("p", TEXT),
                   harness.pre_deny(TEXT), harness.post_context(event, TEXT)):
        assert _carries(_document(answer), TEXT), (name, answer)
    if harness.pre_context_ok:
        assert _carries(_document(harness.pre_context(TEXT)), TEXT)


@pytest.mark.parametrize("name", NAMES)
def test_go_on_is_nothing_only_where_the_harness_reads_nothing_so(name: str) -> None:
    harness = load(name)
    answers = {harness.allow(), harness.pre_allow(), harness.post_context({}, None)}
    assert answers == ({None} if name == "claude" else {"{}"})
    if not harness.pre_context_ok:
        # Where it takes no context before a tool, the text is never lost in an answer
        # that says it passed it on: the call runs, and the caller keeps the text.
        assert harness.pre_context(TEXT) == "{}"


def test_only_gemini_rewrites_an_atlas_shell_command_to_carry_the_identity() -> None:
    values = {"ATLAS_RECORD": "/r e c", "ATLAS_AS": "ann"}
    call = {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
            "tool_input": {"command": "atlas put plan -f p.md"}}
    doc = _document(load("gemini").shell_identity(call, values))
    command = doc["hookSpecificOutput"]["tool_input"]["command"]
    assert command == "export ATLAS_RECORD='/r e c' ATLAS_AS=ann; atlas put plan -f p.md"
    other = {**call, "tool_input": {"command": "ls"}}
    assert load("gemini").shell_identity(other, values) == "{}"
    assert all(load(n).shell_identity(call, values) is None for n in NAMES if n != "gemini")


@pytest.mark.parametrize("event", [{"cwd": "a\0b"}, {"cwd": ""}, {"workspace_roots": [7]},
                                   {"cwd": ["x"]}])
def test_a_session_folder_that_names_no_folder_is_none(event: dict[str, Any]) -> None:
    assert base.folder(event) is None


def test_cursor_s_workspace_root_is_the_session_folder() -> None:
    assert base.folder({"workspace_roots": ["/w", "/v"]}) == "/w"
