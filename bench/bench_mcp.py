"""MCP server benchmarks: a `get` through the stdio server against one `atlas get` CLI
call, an in-process call, the size of tools/list, and HTTP with many clients.

    python bench/bench_mcp.py [--calls 500] [--cli-runs 15] [--clients 16] [--seconds 10]

Ratios are against a baseline measured in the same run; tools/list is a size in
characters; HTTP is calls per second and p99 latency (each client alternates a `put` of
its own topic and a `get` of it).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anyio
import httpx2
from _common import atlas_argv, clean_env, interleaved
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from atlas_files.mcp import tokens
from atlas_files.mcp.app import Served, build
from atlas_files.protocol import artifacts, status
from atlas_files.storage.record import Record


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def timed_calls(client: Client, calls: int) -> list[float]:
    await client.call_tool("get", {"name": "plan"})  # warm-up
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        result = await client.call_tool("get", {"name": "plan"})
        out.append(time.perf_counter() - start)
        assert not result.is_error
    return out


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(fn)


def stdio_vs_cli(record: Record, calls: int, cli_runs: int) -> None:
    env = clean_env() | {"ATLAS_RECORD": str(record.root), "ATLAS_AS": "bench"}
    cli = interleaved({"atlas get": [*atlas_argv(), "get", "plan", "--json"]}, cli_runs, env)
    argv = atlas_argv()
    params = StdioServerParameters(command=argv[0], args=[*argv[1:], "mcp"],
                                   env={"ATLAS_RECORD": str(record.root), "ATLAS_AS": "bench"})

    async def go() -> list[float]:
        async with Client(params) as client:
            return await timed_calls(client, calls)

    stdio = statistics.median(run(go))
    ratio = stdio / cli["atlas get"]
    print(f"get through the stdio server, p50 of {calls} round trips: {stdio * 1000:.2f} ms")
    print(f"one `atlas get --json` CLI call, median of {cli_runs}: "
          f"{cli['atlas get'] * 1000:.1f} ms")
    print(f"  target stdio get <= 0.1x CLI get -> {ratio:.3f}x "
          f"{'OK' if ratio <= 0.1 else 'MISSED'}")


def in_process(record: Record, calls: int) -> None:
    server = build(Served(str(record.root), None, "bench"))

    async def go() -> tuple[list[float], int]:
        async with Client(server) as client:
            listed = await client.list_tools()
            size = len(listed.model_dump_json(by_alias=True, exclude_none=True))
            return await timed_calls(client, calls), size

    times, size = run(go)
    print(f"get in-process (SDK client, same process), p50 of {calls}: "
          f"{statistics.median(times) * 1000:.2f} ms")
    print(f"tools/list response: {size} characters (~{size // 4} tokens)")
    print(f"  target <= 15,000 characters -> {'OK' if size <= 15000 else 'MISSED'}")


def http(record: Record, tmp: Path, clients: int, seconds: float) -> None:
    tokens_file = tmp / "tokens.json"
    secret = tokens.add(tokens_file, "bench")
    log = tmp / "http.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [*atlas_argv(), "--record", str(record.root), "mcp", "--http", "127.0.0.1:0",
             "--tokens", str(tokens_file)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=clean_env())
    try:
        url = None
        for _ in range(600):
            found = re.search(r"serving (http://\S+/mcp)", log.read_text())
            if found:
                url = found.group(1)
                break
            time.sleep(0.1)
        if url is None:
            raise SystemExit(f"the HTTP server did not start: {log.read_text()}")
        latencies: list[float] = []
        failures: list[str] = []

        async def one(i: int, deadline: float) -> None:
            headers = {"Authorization": f"Bearer {secret}"}
            transport = streamable_http_client(url, http_client=httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(30, read=120)))
            written = 0
            async with Client(transport) as client:
                while time.monotonic() < deadline:
                    for name, args in (("put", {"name": f"load-{i}", "body": f"{written}\n",
                                                "expect": written}),
                                       ("get", {"name": f"load-{i}"})):
                        start = time.perf_counter()
                        result = await client.call_tool(name, args)
                        latencies.append(time.perf_counter() - start)
                        if result.is_error:
                            failures.append(str(result.content)[:200])
                            return
                    written += 1

        async def go() -> float:
            start = time.monotonic()
            async with anyio.create_task_group() as tg:
                for i in range(clients):
                    tg.start_soon(one, i, start + seconds)
            return time.monotonic() - start

        elapsed = run(go)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"HTTP, {clients} clients for {seconds:.0f} s (put and get, alternating): "
          f"{len(latencies) / elapsed:.1f} calls/s, p50 {pct(latencies, 0.5) * 1000:.1f} ms, "
          f"p99 {pct(latencies, 0.99) * 1000:.1f} ms, {len(failures)} errors")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--cli-runs", type=int, default=15)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        record = Record.init(tmp / "rec", ["web"])
        status.write(record, "where things stand\n", author="bench")
        artifacts.put(record, "plan", "# Plan\n\n" + "a line of the plan\n" * 40,
                      author="bench")
        stdio_vs_cli(record, args.calls, args.cli_runs)
        in_process(record, args.calls)
        http(record, tmp, args.clients, args.seconds)


if __name__ == "__main__":
    main()
