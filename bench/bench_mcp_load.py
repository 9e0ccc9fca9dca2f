"""Many MCP clients over HTTP at once: does every call either succeed or get refused
cleanly, and is every write the server acknowledged in the record?

    python bench/bench_mcp_load.py [--clients 256] [--seconds 30]

CLIENTS clients of the official SDK (each its own HTTP connection pool, so about two
connections: its calls and its event stream) connect to one `atlas mcp --http` on
127.0.0.1 and, for SECONDS s, alternate a `put` of their own topic and a `get` of it.
Counted apart: calls answered, calls failed (a dropped connection, a read error, a tool
error: target 0), and calls refused with 503 and `Retry-After` at the server's connection
limit (sent again after the wait the server asked; --server-descriptors lowers that limit
so that fewer clients reach it). Afterwards every acknowledged put is
looked for in the record, byte for byte (target: none missing), and the server's
terminal lines are counted. Calls per second and latency are shown too; on a machine
shared with other work they measure the machine as much as the server.
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anyio
import httpx2
from _common import atlas_argv, clean_env
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from atlas_files.facts import layout
from atlas_files.mcp import connections, limits, tokens
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record

BUSY = "busy: "  # how the server's refusal (503) begins


class Tally:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.refused = 0
        self.acknowledged: dict[str, dict[int, str]] = {}  # topic -> version -> body


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def latest(record: Path, topic: str) -> int:
    """The topic's newest version on disk: where a client starts again after a failure
    (its last put may have been written without its answer arriving)."""
    folder = record / layout.PROJECTS / "main" / layout.ARTIFACTS / topic
    names = [layout.VERSION_FILE.fullmatch(f.name) for f in folder.glob("*.md")]
    return max((int(m["number"]) for m in names if m), default=0)


async def client(url: str, secret: str, record: Path, topic: str, deadline: float,
                 tally: Tally) -> None:
    """One client: sessions one after another until the deadline, each alternating a put
    and a get; a refusal waits as asked, a failure starts a new session."""
    acknowledged = tally.acknowledged.setdefault(topic, {})
    while time.monotonic() < deadline:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"},
                                  timeout=httpx2.Timeout(60, read=120))
        try:
            async with Client(streamable_http_client(url, http_client=http)) as session:
                written = latest(record, topic)
                while time.monotonic() < deadline:
                    body = f"write {written + 1} to {topic}\n"
                    calls = (("put", {"name": topic, "body": body, "expect": written}),
                             ("get", {"name": topic}))
                    for name, args in calls:
                        while True:
                            start = time.perf_counter()
                            try:
                                result = await session.call_tool(name, args)
                            except MCPError as exc:
                                if not str(exc).startswith(BUSY):
                                    raise
                                tally.refused += 1
                                await anyio.sleep(limits.RETRY_AFTER_S)
                                continue
                            break
                        tally.latencies.append(time.perf_counter() - start)
                        if result.is_error:
                            raise RuntimeError(f"{name}: {str(result.content)[:200]}")
                        if name == "put":
                            written += 1
                            acknowledged[written] = body
        except Exception as exc:  # noqa: BLE001 - every failure is counted and shown
            text = "; ".join(f"{type(e).__name__}: {e}" for e in leaves(exc))[:300]
            if BUSY in text:  # refused while connecting: wait as asked, then again
                tally.refused += 1
                await anyio.sleep(limits.RETRY_AFTER_S)
            elif time.monotonic() < deadline:
                tally.failures.append(text)
        finally:
            await http.aclose()


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc`` (a task group's, from the SDK's transport)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def missing(record: Path, acknowledged: dict[str, dict[int, str]]) -> list[str]:
    """Acknowledged puts not in the record with the body that was sent."""
    lost = []
    for topic, versions in acknowledged.items():
        folder = record / layout.PROJECTS / "main" / layout.ARTIFACTS / topic
        for version, body in versions.items():
            path = folder / layout.version_filename(topic, version)
            try:
                found = frontmatter.parse(path.read_bytes()).body.decode()
            except OSError:
                found = None
            if found != body:
                lost.append(f"{topic} v{version}")
    return lost


def serve(record: Path, tmp: Path, descriptors: int | None,
          ) -> tuple[subprocess.Popen[bytes], str, str, Path]:
    tokens_file = tmp / "private" / "tokens.json"
    tokens_file.parent.mkdir(mode=0o700)
    secret = tokens.add(tokens_file, "bench")
    log = tmp / "server.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [*atlas_argv(), "--record", str(record), "mcp", "--http", "127.0.0.1:0",
             "--tokens", str(tokens_file)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=clean_env(),
            preexec_fn=None if descriptors is None else lambda: resource.setrlimit(
                resource.RLIMIT_NOFILE, (descriptors, descriptors)))
    for _ in range(600):
        found = re.search(r"serving (http://\S+/mcp)", log.read_text())
        if found:
            return proc, found.group(1), secret, log
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"the HTTP server did not start: {log.read_text()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--clients", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--server-descriptors", type=int, default=None, help=(
        "the server's descriptor limit: its connection limit is this less "
        f"{connections.SPARE_FDS} (at most "
        f"{connections.MOST}), so fewer clients reach it"))
    parser.add_argument("--log", help="keep a copy of the server's terminal lines here")
    args = parser.parse_args()
    # Two connections a client, and this process holds the clients' side of each.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with tempfile.TemporaryDirectory(prefix="bench-mcp-load-") as name:
        tmp = Path(name)
        record = Record.init(tmp / "rec").root
        proc, url, secret, log = serve(record, tmp, args.server_descriptors)
        tally = Tally()
        try:
            async def go() -> float:
                start = time.monotonic()
                async with anyio.create_task_group() as tg:
                    for i in range(args.clients):
                        tg.start_soon(client, url, secret, record, f"load-{i}",
                                      start + args.seconds, tally)
                return time.monotonic() - start

            elapsed = anyio.run(go)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        lost = missing(record, tally.acknowledged)
        said = log.read_text().splitlines()
        if args.log:
            Path(args.log).write_text(log.read_text())
    writes = sum(len(v) for v in tally.acknowledged.values())
    print(f"{args.clients} MCP HTTP clients for {args.seconds:.0f} s ({elapsed:.0f} s with the "
          f"last calls): {len(tally.latencies):,} calls answered, "
          f"{len(tally.latencies) / elapsed:.1f}/s, p50 {pct(tally.latencies, 0.5) * 1000:.0f} "
          f"ms, p99 {pct(tally.latencies, 0.99) * 1000:.0f} ms; {len(tally.failures)} calls "
          f"failed (target 0){f' (e.g. {tally.failures[0]})' if tally.failures else ''}; "
          f"{tally.refused} refused with 503 (sent again after Retry-After); {writes:,} "
          f"writes acknowledged, {len(lost)} of them missing from the record (target 0)"
          f"{f' (e.g. {lost[0]})' if lost else ''}; the server said {len(said)} lines "
          f"(descriptor limit here {soft} soft, {hard} hard)")
    for line in said[1:6]:
        print(f"  server: {line}")


if __name__ == "__main__":
    main()
