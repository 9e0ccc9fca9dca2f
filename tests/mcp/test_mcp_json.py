"""Each tool's result is the document `atlas ... --json` prints for the same operation.

Two twin records are seeded alike under one frozen clock; the tool runs on one, the CLI
on the other, and the two documents must be equal once each record's folder reads ROOT
(and an entry's random id reads ID). The SDK's client also checks every result against
the tool's output schema, so a schema that lies fails here too.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from support.mcp_client import call, cli_json, frozen, same, seed

from atlas_files.storage.record import Record

__all__ = ["frozen"]  # the fixture, used by name


@pytest.fixture
def twins(tmp_path: Path, frozen: datetime) -> tuple[Record, Record]:
    return seed(tmp_path / "a"), seed(tmp_path / "b")


def tool(record: Record, name: str, args: dict[str, Any] | None = None) -> Any:
    result = call(record.root, name, args)
    assert not result.is_error, result.content
    return same(result.structured_content, record.root)


def cli(record: Record, *args: str, input: str | None = None) -> Any:
    return same(cli_json(record.root, *args, input=input), record.root)


def without_id(doc: dict[str, Any]) -> dict[str, Any]:
    """An entry with its id (random in part) and the file named after it set aside."""
    return {k: v for k, v in doc.items() if k not in ("id", "path")}


def test_begin_is_atlas_begin(twins: tuple[Record, Record]) -> None:
    a, b = twins
    got, want = tool(a, "begin"), cli(b, "begin")
    # Entry ids are random in part: the twins' decisions differ in that alone.
    assert [without_id(d) for d in got.pop("decisions")] == [
        without_id(d) for d in want.pop("decisions")]
    assert got == want
    assert got["new"] and all(i["kind"] == "artifact" for i in got["new"])


def test_status_read(twins: tuple[Record, Record]) -> None:
    a, b = twins
    assert tool(a, "status_read") == cli(b, "status", "show")
    assert tool(a, "status_read", {"version": 1}) == cli(b, "status", "show", "--version", "1")


def test_status_write(twins: tuple[Record, Record]) -> None:
    a, b = twins
    got = tool(a, "status_write", {"body": "all well, and more\n", "expect": 1,
                                   "summary": "more"})
    want = cli(b, "status", "write", "-f", "-", "--expect", "1", "--summary", "more",
               input="all well, and more\n")
    assert got == want and got["version"] == 2


def test_get(twins: tuple[Record, Record]) -> None:
    a, b = twins
    assert tool(a, "get", {"name": "plan"}) == cli(b, "get", "plan")
    assert tool(a, "get", {"name": "plan", "version": 1}) == cli(b, "get", "plan", "--version",
                                                                 "1")


def test_put(twins: tuple[Record, Record]) -> None:
    a, b = twins
    args: dict[str, Any] = {"name": "plan", "body": "# Plan\n\nthree steps\n", "expect": 2,
                            "summary": "3", "links": ["plan@v1"]}
    got = tool(a, "put", args)
    want = cli(b, "put", "plan", "-f", "-", "--expect", "2", "--summary", "3", "--link",
               "plan@v1", input=args["body"])
    assert got == want and got["version"] == 3
    assert tool(a, "put", {"name": "new", "body": "x\n", "proposal": True}) == cli(
        b, "put", "new", "--proposal", "-f", "-", input="x\n")


def test_feed(twins: tuple[Record, Record]) -> None:
    a, b = twins
    assert tool(a, "feed") == cli(b, "feed")
    marked = tool(a, "feed", {"mark_read": True})
    assert marked == cli(b, "feed", "--mark-read") and marked["marked_read"] is True
    assert tool(a, "feed")["new"] == [] == cli(b, "feed")["new"]


def test_lease_every_action(twins: tuple[Record, Record]) -> None:
    a, b = twins
    steps: list[tuple[dict[str, Any], tuple[str, ...]]] = [
        ({"action": "list"}, ("lease", "ls")),
        ({"action": "show", "resource": "gpu0"}, ("lease", "show", "gpu0")),
        ({"action": "claim", "resource": "gpu1", "duration": "90m", "why": "eval"},
         ("lease", "claim", "gpu1", "--for", "90m", "--why", "eval")),
        ({"action": "renew", "resource": "gpu1", "duration": "2h", "generation": 1},
         ("lease", "renew", "gpu1", "--for", "2h", "--generation", "1")),
        ({"action": "release", "resource": "gpu1"}, ("lease", "release", "gpu1")),
        ({"action": "break", "resource": "gpu0", "why": "bob is gone"},
         ("lease", "break", "gpu0", "--why", "bob is gone")),
    ]
    for args, argv in steps:
        assert tool(a, "lease", args) == cli(b, *argv), args


def test_decide(twins: tuple[Record, Record]) -> None:
    a, b = twins
    got = tool(a, "decide", {"topic": "idea", "recommended": "X", "chosen": "X",
                             "relation": "agreed", "why": "cheap", "accepts": "idea@v1",
                             "links": ["plan@v2"]})
    want = cli(b, "decide", "--topic", "idea", "--recommended", "X", "--chosen", "X",
               "--relation", "agreed", "--why", "cheap", "--accepts", "idea@v1", "--link",
               "plan@v2")
    assert without_id(got) == without_id(want) and got["author"] == "alice"


def test_end_is_atlas_end(twins: tuple[Record, Record]) -> None:
    a, b = twins
    tool(a, "begin")
    cli(b, "begin")
    got = tool(a, "end", {"status": "done: plan v2 stands\n", "summary": "done"})
    want = cli(b, "end", "--status", "done: plan v2 stands\n", "--summary", "done")
    # An entry is named by its id, random in part: the twins' entries differ in that alone.
    assert [{k: v for k, v in w.items() if k != "name" or w["kind"] == "artifact"}
            for w in got.pop("others")] == [
        {k: v for k, v in w.items() if k != "name" or w["kind"] == "artifact"}
        for w in want.pop("others")]
    assert got == want and got["ok"] and got["status"]["version"] == 2


def test_topics_list_history_diff(twins: tuple[Record, Record]) -> None:
    a, b = twins
    assert tool(a, "topics") == cli(b, "ls")
    assert tool(a, "topics", {"accepted": True}) == cli(b, "ls", "--accepted")
    assert tool(a, "topics", {"action": "history", "name": "plan"}) == cli(b, "history", "plan")
    assert tool(a, "topics", {"action": "history", "name": "status"}) == cli(b, "status", "log")
    assert tool(a, "topics", {"action": "diff", "name": "plan"}) == cli(b, "diff", "plan")
    assert tool(a, "topics", {"action": "diff", "name": "plan", "old": 0, "new": 1}) == cli(
        b, "diff", "plan", "0", "1")
    assert tool(a, "topics", {"action": "diff", "name": "status", "old": 0}) == cli(
        b, "status", "diff", "0")


def test_decisions(twins: tuple[Record, Record]) -> None:
    a, b = twins
    got, want = tool(a, "decisions"), cli(b, "decisions")
    assert [without_id(d) for d in got.pop("decisions")] == [
        without_id(d) for d in want.pop("decisions")]
    assert got == want
    assert tool(a, "decisions", {"relation": "disagreed"}) == cli(
        b, "decisions", "--relation", "disagreed")


def test_correct_and_retract(twins: tuple[Record, Record]) -> None:
    a, b = twins
    got = tool(a, "correct", {"ref": "plan@v1", "text": "step one was step zero"})
    want = cli(b, "correct", "plan@v1", "--what", "step one was step zero")
    assert without_id(got) == without_id(want) and got["kind"] == "correction"
    got = tool(a, "correct", {"ref": "plan@v2", "text": "wrong order", "retract": True})
    want = cli(b, "retract", "plan@v2", "--why", "wrong order")
    assert got.pop("retractions")[0]["id"] == got["id"]
    assert want.pop("retractions")[0]["id"] == want["id"]
    assert without_id(got) == without_id(want) and got["kind"] == "retraction"


def test_search(twins: tuple[Record, Record]) -> None:
    a, b = twins
    def entries_unnamed(doc: dict[str, Any]) -> dict[str, Any]:
        # An entry's id is random in part: the twins' entries differ in that alone.
        return {**doc, "results": [r if r["kind"] in ("artifact", "status") else
                                   without_id(r) for r in doc["results"]]}

    got = tool(a, "search", {"query": "plan"})
    assert entries_unnamed(got) == entries_unnamed(cli(b, "search", "plan"))
    assert {r["kind"] for r in got["results"]} >= {"artifact", "decision"}
    got = tool(a, "search", {"query": "plan", "kinds": ["decision"]})
    assert entries_unnamed(got) == entries_unnamed(cli(b, "search", "plan", "--kind",
                                                        "decision"))


def test_lease_machines_is_telemetry_ls(twins: tuple[Record, Record]) -> None:
    a, b = twins
    got = tool(a, "lease", {"action": "machines"})
    assert got == cli(b, "telemetry", "ls") and got["machines"][0]["machine"] == "gpubox"


def test_check(twins: tuple[Record, Record], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = twins
    got = tool(a, "check")
    monkeypatch.chdir(b.root)  # the CLI shows paths relative to where it runs
    assert got == cli(b, "check") and got["ok"] is True


def test_lease_with_paths_is_the_cli_with_paths(twins: tuple[Record, Record]) -> None:
    a, b = twins
    got = tool(a, "lease", {"action": "claim", "resource": "web", "duration": "1h",
                            "why": "refactor", "paths": ["src/**", "docs/index.md"]})
    want = cli(b, "lease", "claim", "web", "--for", "1h", "--why", "refactor",
               "--paths", "src/**", "--paths", "docs/index.md")
    assert got == want
    covering = tool(a, "lease", {"action": "list", "paths": ["src/app.py"]})
    assert covering == cli(b, "lease", "ls", "--path", "src/app.py")
    assert [row["resource"] for row in covering["leases"]] == ["web"]
    assert tool(a, "lease", {"action": "list", "paths": ["README.md"]})["leases"] == []


def test_task(twins: tuple[Record, Record]) -> None:
    a, b = twins
    got = tool(a, "task", {"action": "add", "title": "eval", "why": "numbers",
                           "paths": ["src/"]})
    want = cli(b, "task", "add", "eval", "--why", "numbers", "--paths", "src/")
    task_ids = got["id"], want["id"]  # random in part
    assert without_id(got) == without_id(want) and got["state"] == "ready"
    got, want = tool(a, "task", {"action": "next", "duration": "1h"}), \
        cli(b, "task", "next", "--for", "1h")
    assert without_id(got["task"]) == without_id(want["task"])
    got, want = tool(a, "task", {"action": "list"}), cli(b, "task", "ls")
    assert [without_id(t) for t in got.pop("tasks")] == \
        [without_id(t) for t in want.pop("tasks")]
    assert got == want
    got = tool(a, "task", {"action": "done", "id": task_ids[0], "why": "ran"})
    want = cli(b, "task", "done", task_ids[1], "--why", "ran")
    for doc in (got, want):
        doc["ended"] = without_id(doc["ended"]) | {"task": None}
    assert without_id(got) == without_id(want) and got["state"] == "done"
