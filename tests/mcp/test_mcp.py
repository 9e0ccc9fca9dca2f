"""The MCP server in-process, through the SDK's own client: what a model sees listed, the
limits it reads there, and errors it can act on."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from support.mcp_client import call, frozen, run, seed, server, text
from support.runner import run_atlas, snapshot

from atlas_files.api import core
from atlas_files.api.leases import ADVISORY
from atlas_files.cli import main
from atlas_files.mcp.app import INSTRUCTIONS
from atlas_files.mcp.results import ERROR_META
from atlas_files.storage.record import Record

FIXED = ["begin", "status_read", "status_write", "get", "put", "feed", "lease", "task", "decide",
         "end"]
WRITERS = {"status_write", "put", "decide", "end", "correct"}
__all__ = ["frozen"]  # the fixture, used by name


@pytest.fixture
def rec(tmp_path: Path) -> Record:
    return seed(tmp_path / "rec")


def listing(root: Path, read_only: bool = False) -> tuple[Any, str | None]:
    async def go() -> tuple[Any, str | None]:
        async with Client(server(root, read_only=read_only)) as client:
            return await client.list_tools(), client.instructions

    return run(go)


def cli_error(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """The JSON document `atlas ... --json` prints when the command fails."""
    with pytest.raises(SystemExit):
        main(["--record", str(root), "--as", "alice", *args, "--json"])
    return dict(json.loads(capsys.readouterr().out))


def test_tools_list_has_the_fixed_names_annotations_and_output_schemas(rec: Record) -> None:
    listed, _ = listing(rec.root)
    tools = {t.name: t for t in listed.tools}
    assert set(FIXED) <= set(tools) and len(tools) <= 15
    for tool in tools.values():
        ann = tool.annotations
        assert ann is not None and None not in (ann.read_only_hint, ann.destructive_hint,
                                                ann.idempotent_hint), tool.name
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        assert ann.read_only_hint is (tool.name not in WRITERS | {"lease", "task"}), tool.name
    assert tools["lease"].annotations.destructive_hint is True  # a break takes a lease over
    assert tools["put"].annotations.destructive_hint is False  # versions are only added
    assert "identity" not in json.dumps([t.input_schema for t in tools.values()])


def test_the_whole_tools_list_stays_under_16000_characters(rec: Record) -> None:
    listed, _ = listing(rec.root)
    size = len(listed.model_dump_json(by_alias=True, exclude_none=True))
    assert 4000 < size < 16000


def test_the_limits_are_stated_where_the_model_reads_them(rec: Record) -> None:
    listed, instructions = listing(rec.root)
    says = {t.name: t.description or "" for t in listed.tools}
    assert ADVISORY in says["lease"]
    for writer in ("put", "status_write"):
        assert "`expect`" in says[writer] and "`stop:`" in says[writer]
    for reader in ("get", "feed", "begin", "status_read"):
        assert "read for you" in says[reader]
    assert instructions == INSTRUCTIONS and len(instructions.splitlines()) == 3
    first, middle, last = instructions.splitlines()
    assert "begin first" in first and "expect" in middle and "end last" in last


def test_a_put_on_a_stale_expect_is_a_stop_naming_who_wrote_and_writes_nothing(
        rec: Record, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(rec.root)
    result = call(rec.root, "put", {"name": "plan", "body": "mine\n", "expect": 1})
    assert result.is_error
    assert text(result).startswith("stop: you read v1 of plan, but it is at v2")
    assert "v2 by bob" in text(result) and "hint: read the latest" in text(result)
    assert snapshot(rec.root) == before
    # No structured part (it would break the tool's output schema); the document the CLI
    # prints on the same failure travels in _meta.
    want = cli_error(rec.root, capsys, "put", "plan", "--expect", "1", "-f", "/dev/null",
                     "--allow-empty")
    assert result.structured_content is None
    assert (result.meta or {})[ERROR_META] == want and want["error"]["exit_code"] == 3


def test_begin_then_end_writes_the_status_without_an_expect(rec: Record) -> None:
    async def go() -> tuple[Any, Any, Any]:
        async with Client(server(rec.root)) as client:
            early = await client.call_tool("end", {"status": "too early\n"})
            begun = await client.call_tool("begin", {})
            ended = await client.call_tool("end", {"status": "plan v2 stands\n"})
            return early, begun, ended

    early, begun, ended = run(go)
    assert early.is_error and text(early).startswith("stop: you have never read the status of web")
    assert begun.structured_content["status"]["version"] == 1
    assert not ended.is_error and ended.structured_content["ok"]
    assert ended.structured_content["status"]["version"] == 2


@pytest.mark.parametrize(("name", "args", "word", "cli_args"), [
    ("lease", {"action": "claim", "resource": "gpu0", "duration": "1h", "why": "eval"},
     "held", ("lease", "claim", "gpu0", "--for", "1h", "--why", "eval")),
    ("get", {"name": "nosuch"}, "not found", ("get", "nosuch")),
    ("put", {"name": "Bad Name", "body": "x"}, "bad input", ("put", "Bad Name", "-f",
                                                              "/dev/null", "--allow-empty")),
    ("lease", {"action": "claim", "resource": "gpu1", "duration": "99h", "why": "x"},
     "bad input", ("lease", "claim", "gpu1", "--for", "99h", "--why", "x")),
])
def test_errors_start_with_their_kind_and_carry_the_cli_message_and_hint(
        frozen: object, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
        args: dict[str, Any], word: str, cli_args: tuple[str, ...]) -> None:
    # One moment for both reads: "held for 59m59s more" must not differ by the second
    # that passed between them.
    rec = seed(tmp_path / "rec")
    before = snapshot(rec.root)
    result = call(rec.root, name, args)
    error = cli_error(rec.root, capsys, *cli_args)["error"]
    assert result.is_error
    assert text(result) == f"{word}: {error['message']}\nhint: {error['hint']}"
    assert result.structured_content is None
    assert (result.meta or {})[ERROR_META] == {"error": error}
    assert snapshot(rec.root) == before


@pytest.mark.parametrize(("args", "says"), [
    ({"name": "plan", "body": "x", "expected": 2}, "put takes no argument expected"),
    ({"name": "plan", "body": "x", "identity": "bob"}, "put takes no argument identity"),
    ({"name": "plan", "body": "x", "expect": "two"}, "put: expect: Input should be"),
    ({"name": "plan", "body": "  \n"}, "the body is empty; nothing was written"),
    ({"body": "x"}, "put: name: Field required"),
])
def test_a_bad_call_is_bad_input_and_writes_nothing(rec: Record, args: dict[str, Any],
                                                    says: str) -> None:
    before = snapshot(rec.root)
    result = call(rec.root, "put", args)
    assert result.is_error and text(result).startswith(f"bad input: {says}"), text(result)
    assert snapshot(rec.root) == before


def test_the_librarys_warnings_reach_the_model(rec: Record) -> None:
    (rec.root / "receipts" / "alice.json").write_text("{not json")
    result = call(rec.root, "feed")
    assert not result.is_error
    notes = [c.text for c in result.content[1:]]  # type: ignore[union-attr]
    assert len(notes) == 1 and notes[0].startswith("warning: ")
    assert "treats alice as having read nothing" in notes[0]
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]


def test_read_only_lists_no_writing_tool_and_refuses_one_by_name(rec: Record) -> None:
    listed, _ = listing(rec.root, read_only=True)
    names = {t.name for t in listed.tools}
    assert names == {"begin", "status_read", "get", "feed", "lease", "task", "topics",
                     "decisions", "search", "check"}
    assert all(t.annotations.read_only_hint for t in listed.tools)
    lease = next(t for t in listed.tools if t.name == "lease")
    assert lease.input_schema["properties"]["action"]["enum"] == ["list", "show", "machines"]
    task = next(t for t in listed.tools if t.name == "task")
    assert task.input_schema["properties"]["action"]["enum"] == ["list", "show"]
    assert ADVISORY in (lease.description or "")
    before = snapshot(rec.root)
    for name, args in [("put", {"name": "plan", "body": "x"}), ("status_write", {"body": "x"}),
                       ("decide", {}), ("end", {"status": "x"}),
                       ("lease", {"action": "claim", "resource": "gpu1", "duration": "1h",
                                  "why": "x"}),
                       ("task", {"action": "add", "title": "x"})]:
        result = call(rec.root, name, args, read_only=True)
        assert result.is_error, name
    assert snapshot(rec.root) == before
    shown = call(rec.root, "lease", {"action": "show", "resource": "gpu0"}, read_only=True)
    assert shown.structured_content["holder"] == "bob"


def test_the_task_tool_claims_refuses_held_and_stop_like_the_cli(rec: Record) -> None:
    added = call(rec.root, "task", {"action": "add", "title": "eval the model"})
    task_id = added.structured_content["id"]
    assert added.structured_content["state"] == "ready"
    taken = call(rec.root, "task", {"action": "next", "duration": "1h"})
    assert taken.structured_content["task"]["holder"] == "alice"
    assert run_atlas("--record", str(rec.root), "--as", "bob", "task", "claim", task_id,
                     "--for", "1h").returncode == 4
    assert run_atlas("--record", str(rec.root), "--as", "bob", "task", "add", "other"
                     ).returncode == 0
    again = call(rec.root, "task", {"action": "next", "duration": "1h"})
    other = again.structured_content["task"]["id"]
    assert run_atlas("--record", str(rec.root), "--as", "bob", "task", "release", other
                     ).returncode == 4
    refused = call(rec.root, "task", {"action": "claim", "id": task_id[:12]})
    assert refused.is_error and text(refused).startswith("bad input: task claim needs")
    assert not call(rec.root, "task", {"action": "done", "id": task_id}).is_error
    stop = call(rec.root, "task", {"action": "claim", "id": task_id, "duration": "1h"})
    assert stop.is_error and text(stop).startswith(f"stop: task {task_id}")
    none = call(rec.root, "task", {"action": "next", "duration": "1h"})
    assert none.structured_content == {"task": None}
    listed = call(rec.root, "task", {"action": "list"}).structured_content
    assert [t["id"] for t in listed["tasks"]] == [other]


def test_the_task_tool_says_held_naming_the_holder(rec: Record) -> None:
    task_id = call(rec.root, "task", {"action": "add", "title": "eval"}).structured_content["id"]
    assert run_atlas("--record", str(rec.root), "--as", "bob", "task", "claim", task_id,
                     "--for", "1h").returncode == 0
    held = call(rec.root, "task", {"action": "claim", "id": task_id, "duration": "1h"})
    assert held.is_error and text(held).startswith(f"held: task {task_id}")
    assert "bob" in text(held)


SDK = ("mcp", "mcp_types", "starlette", "uvicorn", "pydantic", "anyio", "httpx2")


def test_the_sdk_is_imported_by_the_mcp_front_end_alone() -> None:
    package = Path(__file__).resolve().parents[2] / "atlas_files"
    allowed = {package / "cli" / "mcp.py", *(package / "mcp").rglob("*.py")}
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                 for a in n.names}
        names |= {(n.module or "").split(".")[0] for n in ast.walk(tree)
                  if isinstance(n, ast.ImportFrom) and not n.level}
        if path not in allowed:
            assert not names & set(SDK), path


def test_status_show_does_not_load_the_sdk(rec: Record) -> None:
    probe = ("import sys\nfrom atlas_files.cli import main\n"
             "try:\n    main(['--record', sys.argv[1], 'status', 'show'])\n"
             "except SystemExit:\n    pass\n"
             f"print(sorted(m for m in {SDK!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe, str(rec.root)], capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout.strip().endswith("[]"), done.stdout


def test_a_bug_is_reported_as_one_not_as_a_bare_error(rec: Record,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("secret detail")

    monkeypatch.setattr(core, "get", broken)
    result = call(rec.root, "get", {"name": "plan"})
    assert result.is_error
    assert text(result).startswith("error: atlas failed unexpectedly (ZeroDivisionError)")
    assert "secret detail" not in text(result) and "Error executing tool" not in text(result)
