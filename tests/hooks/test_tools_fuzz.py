"""Whatever a harness (or anyone) feeds the edit-time hooks, they answer with one JSON
document the harness reads as "go on" or a decision, and never a traceback: fuzzed."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.hookevents import events

from atlas_files.harness import base
from atlas_files.harness.registry import NAMES, load
from atlas_files.hooks import tools
from atlas_files.storage.record import Record

HARNESSES = NAMES


def _answer(fn: Any, harness: str, data: bytes, cwd: Path,
            monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    with monkeypatch.context() as m:
        m.setattr(sys, "stdin", stdin)
        m.setattr(sys, "stdout", out)
        m.setattr(sys, "stderr", err)
        m.chdir(cwd)
        fn(harness, None, "alice", None)
    return out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    Record.init(root, ["web"])
    (root / ".git").mkdir()  # a repository root, as far as the guard walks
    return root


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(harness=st.sampled_from(HARNESSES),
       data=st.binary(max_size=200) | events.map(lambda e: json.dumps(e).encode()))
def test_the_hooks_always_answer_one_document(place: Path, harness: str, data: bytes,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for fn in (tools.guard_hook, tools.news_hook):
        out, err = _answer(fn, harness, data, place, monkeypatch)
        assert "Traceback" not in err
        if not out.strip():
            assert harness == "claude"
            continue
        doc = json.loads(out)
        assert isinstance(doc, dict)
        assert "could not check" not in err, err  # bad input is not a failure of the guard


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lead=st.text(alphabet=base.CODEX_SPACE.replace("\n", ""), min_size=1, max_size=4),
       trail=st.text(alphabet=base.CODEX_SPACE.replace("\n", ""), max_size=3),
       header=st.sampled_from(["Update File", "Delete File", "Add File"]),
       before=st.lists(st.sampled_from(["", "@@", " context", "*** Update File: src/a.py",
                                        "+x"]), max_size=3))
@example(lead="  ", trail="", header="Update File", before=[])  # the issue's own
@example(lead="\t", trail="\r", header="Delete File", before=["@@"])
def test_an_indented_codex_patch_header_is_guarded_as_codex_reads_it(
        place: Path, lead: str, trail: str, header: str, before: list[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex trims the white space around each line of a patch (Rust's `trim`), so
    `  *** Update File: PATH` edits PATH: a file of the record so named is refused."""
    rel = "projects/web/status/status.v0001.md"
    patch = "\n".join(["*** Begin Patch", *before, f"{lead}*** {header}: {rel}{trail}",
                       "@@", "-a", "+b", "*** End Patch"])
    assert str(place / rel) in base.edit_targets(
        load("codex"), {"tool_name": "apply_patch", "tool_input": {"command": patch},
                  "cwd": str(place)})
    event = {"hook_event_name": "PreToolUse", "tool_name": "apply_patch", "cwd": str(place),
             "tool_input": {"command": patch}}
    out, err = _answer(tools.guard_hook, "codex", json.dumps(event).encode(), place,
                       monkeypatch)
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny", (out, err)
