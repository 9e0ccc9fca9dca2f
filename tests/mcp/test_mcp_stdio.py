"""`atlas mcp` as a real child process over stdio, started as a client configuration
starts it (environment passed explicitly), driven by the SDK's client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from support.mcp_client import run, seed, stdio, text
from support.runner import run_atlas, snapshot

from atlas_files.api.leases import ADVISORY

FIXED = {"begin", "status_read", "status_write", "get", "put", "feed", "lease", "task", "decide",
         "end"}


def written(files: dict[str, bytes]) -> dict[str, bytes]:
    """What the record holds, less what a read leaves: receipts and latest-version hints."""
    return {k: v for k, v in files.items()
            if not k.startswith("receipts/") and not Path(k).name.startswith(".")}


def test_stdio_lists_the_tools_and_stops_a_stale_put(tmp_path: Path) -> None:
    rec = seed(tmp_path / "rec")

    async def go() -> tuple[Any, Any, Any]:
        async with Client(stdio(rec.root, "alice")) as client:
            listed = await client.list_tools()
            stale = await client.call_tool("put", {"name": "plan", "body": "x\n", "expect": 1})
            read = await client.call_tool("get", {"name": "plan"})
            return listed, stale, read

    before = snapshot(rec.root)
    listed, stale, read = run(go)
    tools = {t.name: t for t in listed.tools}
    assert FIXED <= set(tools) and len(tools) <= 15
    assert all(t.output_schema and t.annotations for t in tools.values())
    assert ADVISORY in (tools["lease"].description or "")
    assert len(listed.model_dump_json(by_alias=True, exclude_none=True)) < 16000
    assert stale.is_error and text(stale).startswith("stop: you read v1 of plan, but it is at v2")
    assert "v2 by bob" in text(stale)
    assert written(snapshot(rec.root)) == written(before)
    assert read.structured_content["version"] == 2 and read.structured_content["author"] == "bob"


def test_read_only_over_stdio_refuses_a_write_by_name(tmp_path: Path) -> None:
    rec = seed(tmp_path / "rec")

    async def go() -> tuple[Any, Any]:
        async with Client(stdio(rec.root, "alice", "--read-only")) as client:
            return await client.list_tools(), await client.call_tool(
                "put", {"name": "plan", "body": "x\n"})

    listed, put = run(go)
    assert not {t.name for t in listed.tools} & {"put", "status_write", "decide", "end",
                                                  "correct"}
    assert put.is_error and not (rec.root / "projects/web/artifacts/plan/plan.v0003.md").exists()


def test_two_sessions_race_for_one_lease_and_one_wins_each_round(tmp_path: Path) -> None:
    rec = seed(tmp_path / "rec")
    rounds: list[list[tuple[str, bool, str]]] = []

    async def claim(client: Client, who: str, out: list[tuple[str, bool, str]]) -> None:
        result = await client.call_tool("lease", {"action": "claim", "resource": "gpu7",
                                                  "duration": "10m", "why": f"{who} runs"})
        out.append((who, not result.is_error, text(result)))

    async def go() -> None:
        with anyio.fail_after(240):
            await race()

    async def race() -> None:
        async with Client(stdio(rec.root, "alice")) as alice, \
                Client(stdio(rec.root, "bob")) as bob:
            clients = {"alice": alice, "bob": bob}
            for _ in range(20):
                out: list[tuple[str, bool, str]] = []
                async with anyio.create_task_group() as tg:
                    tg.start_soon(claim, alice, "alice", out)
                    tg.start_soon(claim, bob, "bob", out)
                rounds.append(out)
                winner = next((who for who, won, _ in out if won), None)
                if winner is not None:
                    released = await clients[winner].call_tool(
                        "lease", {"action": "release", "resource": "gpu7"})
                    assert not released.is_error, text(released)

    run(go)
    for out in rounds:
        winners = [who for who, won, _ in out if won]
        assert len(winners) == 1, out
        loser = next(msg for who, won, msg in out if not won)
        assert loser.startswith(f"held: gpu7 is held by {winners[0]}"), loser
    history = json.loads(run_atlas("--record", str(rec.root), "lease", "show", "gpu7",
                                   "--json").stdout)["history"]
    assert [g["action"] for g in history] == ["claim", "release"] * 20


def test_stdio_needs_an_identity(tmp_path: Path) -> None:
    rec = seed(tmp_path / "rec")
    result = run_atlas("--record", str(rec.root), "mcp")
    assert result.returncode == 2 and result.stdout == ""
    assert "over stdio the server acts as one identity" in result.stderr
