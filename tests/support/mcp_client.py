"""Helpers of the MCP tests: the SDK's own client against the server, in-process or as
a real `atlas mcp` subprocess, and the CLI's --json for the same operation."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from atlas_files.facts import timeutil
from atlas_files.mcp.app import Served, build
from atlas_files.protocol import artifacts, decisions, leases, status
from atlas_files.protocol.telemetry.rows import write_row
from atlas_files.storage import volclock
from atlas_files.storage.record import Record
from support.runner import run_atlas

T = TypeVar("T")
FROZEN = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


def server(root: Path, identity: str | None = "alice", read_only: bool = False) -> Any:
    return build(Served(str(root), None, identity, read_only))


def call(root: Path, name: str, args: dict[str, Any] | None = None, *,
         identity: str = "alice", read_only: bool = False) -> CallToolResult:
    """One tool call through the SDK's client, in-process (the client checks a success
    against the tool's output schema)."""

    async def go() -> CallToolResult:
        async with Client(server(root, identity, read_only)) as client:
            return await client.call_tool(name, args or {})

    return run(go)


def text(result: CallToolResult) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def stdio(root: Path, identity: str, *extra: str) -> StdioServerParameters:
    """A real `atlas mcp` child with its environment passed explicitly, as a client
    configuration would."""
    return StdioServerParameters(command=sys.executable, args=["-m", "atlas_files", "mcp", *extra],
                                 env={"ATLAS_RECORD": str(root), "ATLAS_AS": identity})


def cli_json(root: Path, *args: str, identity: str = "alice", input: str | None = None) -> Any:
    """`atlas --record ROOT --as IDENTITY ARGS --json`, in-process; its stdout parsed."""
    return run_atlas(*args, "--json", record=root, identity=identity, input=input).json()


def same(doc: Any, root: Path) -> Any:
    """A document with its record's folder written as ROOT, to compare twin records."""
    return json.loads(json.dumps(doc).replace(json.dumps(str(root))[1:-1], "ROOT"))


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> datetime:
    """One moment for every clock read, so twin records and two reads of a lease agree
    (the volume's clock against this machine's too: each lease write measures it)."""
    monkeypatch.setattr(timeutil, "now", lambda: FROZEN)
    monkeypatch.setattr(volclock, "measure", lambda folder: volclock.ClockOffset(0, 0.02, 0))
    for name in ("ATLAS_AS", "ATLAS_RECORD", "ATLAS_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    return FROZEN


def seed(root: Path) -> Record:
    """A record with one of most things, written by bob: a status, a topic in two
    versions, a proposal, a decision, a held lease and a machine's telemetry row."""
    record = Record.init(root, ["web", "ml"])
    status.write(record, "all well\n", author="bob", expect=0, summary="first status")
    artifacts.put(record, "plan", "# Plan\n\nstep one\n", author="bob", expect=0)
    artifacts.put(record, "plan", "# Plan\n\nstep one\nstep two\n", author="bob", expect=1,
                  summary="two steps")
    artifacts.put(record, "idea", "Do X.\n", author="bob", expect=0, proposal=True)
    decisions.decide(record, topic="plan", recommended="step one", chosen="step one",
                     relation="agreed", why="it is smaller", author="bob", links=["plan@v1"])
    leases.claim(record, "gpu0", holder="bob", duration_s=3600, why="training run")
    write_row(record, {"machine": "gpubox", "reachable": False, "observer": "bob",
                       "observed_at": timeutil.format_time(timeutil.now()), "gpus": [],
                       "error": "no answer in 10s"})
    return record
