"""How much of a client's request `atlas mcp` reads, and how long it waits for it: a call
past the record's limits is refused at the limit (over HTTP and stdio) without being read
whole, a call within a raised limit is served, and clients that are slow to send, or very
many at once, do not keep another out. Real server processes, real sockets."""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support.oauth import Server, bounded, mcp_status, peak_rss, post_chunked, process
from support.runner import atlas_command, child_env

from atlas_files.mcp import connections, limits, tokens
from atlas_files.storage.record import Record

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def record_with(tmp_path: Path, body_limit: int | None = None) -> Record:
    record = Record.init(tmp_path / "rec")
    if body_limit is not None:
        path = record.root / "atlas.yaml"
        data = yaml.safe_load(path.read_text())
        data["body_limit"] = body_limit
        path.write_text(yaml.safe_dump(data))
    return record


@contextmanager
def serving(tmp_path: Path, body_limit: int | None = None,
            descriptors: int | None = None) -> Iterator[tuple[Server, str]]:
    """A real `atlas mcp --http` (OAuth too, as a public server runs) and a static token."""
    record = record_with(tmp_path, body_limit)
    (tmp_path / "private").mkdir()
    tokens_file = tmp_path / "private" / "tokens.json"
    secret = tokens.add(tokens_file, "alice")

    def limit_fds() -> None:
        if descriptors is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    with process(record.root, tokens_file, tmp_path / "server.log", preexec=limit_fds) as s:
        yield s, secret


def put_body(size: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "put", "arguments": {"name": "big", "body": "x" * size, "expect": 0}}}).encode()


async def call(server: Server, secret: str, tool: str, args: dict[str, Any]) -> Any:
    """One tool call through the SDK's client, with a static token."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"},
                              timeout=httpx2.Timeout(60, read=120))
    async with Client(streamable_http_client(server.url, http_client=http)) as client:
        return await client.call_tool(tool, args)


def test_an_http_call_within_a_raised_body_limit_is_written(tmp_path: Path) -> None:
    # The SDK's fixed 4 MiB refused it, whatever the record allowed.
    with serving(tmp_path, body_limit=8 << 20) as (server, secret):
        result = bounded(lambda: call(server, secret, "put", {
            "name": "big", "body": "é" * (3 << 20), "expect": 0}), 180)
        assert not result.is_error, result
        written = tmp_path / "rec/projects/main/artifacts/big/big.v0001.md"
        assert written.stat().st_size > 6 << 20


def test_an_http_call_past_the_record_limit_is_refused_unread(tmp_path: Path) -> None:
    body_limit = 64 << 10
    limit = limits.request_limit(body_limit)
    with serving(tmp_path, body_limit=body_limit) as (server, secret):
        auth = {**HEADERS, "Authorization": f"Bearer {secret}"}
        # Declared too large: refused before a byte of it is read.
        sent = httpx2.post(server.url, content=put_body(limit), headers=auth, timeout=60)
        assert sent.status_code == 413
        error = sent.json()["error"]
        assert error["message"].startswith("bad input: the request is larger than "
                                           f"the {limit} bytes")
        assert f"body_limit of {body_limit} bytes" in error["message"]
        # Streamed with no length: read to the limit, then the connection is closed.
        before = peak_rss(server.pid)
        status, took = post_chunked(server, "/mcp", 512 << 20, auth, fill=b"[")
        assert status == 413 and took < 30
        assert peak_rss(server.pid) - before < 48 << 20
        # Under the limit, a body over body_limit is the tool's refusal, as in the CLI.
        refused = bounded(lambda: call(server, secret, "put", {
            "name": "big", "body": "x" * (body_limit + 1), "expect": 0}))
        assert refused.is_error and "this record's body_limit is 65536" in str(refused.content)
        assert not (tmp_path / "rec/projects/main/artifacts/big").exists()
        assert mcp_status(server, secret) == 200


def test_a_stdio_line_past_the_limit_is_skipped_unread_and_answered(tmp_path: Path) -> None:
    record = record_with(tmp_path)
    env = {**child_env(),
           "ATLAS_RECORD": str(record.root), "ATLAS_AS": "alice"}
    child = subprocess.Popen(atlas_command("mcp"),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env)
    assert child.stdin is not None and child.stdout is not None
    try:
        def send(line: bytes) -> None:
            assert child.stdin is not None
            child.stdin.write(line + b"\n")
            child.stdin.flush()

        def answer() -> Any:
            assert child.stdout is not None
            return json.loads(child.stdout.readline())

        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}).encode())
        assert answer()["id"] == 1
        send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        before = peak_rss(child.pid)
        huge = "x" * (100 << 20)
        # The Python SDK writes the id first, the TypeScript SDK last: both are answered.
        first = (f'{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"put",'
                 f'"arguments":{{"name":"big","body":"{huge}"}}}}}}').encode()
        last = (f'{{"method":"tools/call","params":{{"name":"put","arguments":{{"name":"big",'
                f'"body":"{huge}"}}}},"jsonrpc":"2.0","id":"three"}}').encode()
        del huge

        def send_both() -> None:
            send(first)
            send(last)

        writer = threading.Thread(target=send_both)
        writer.start()
        refused = [answer(), answer()]
        writer.join()
        assert [r["id"] for r in refused] == [2, "three"]
        for r in refused:
            assert r["error"]["message"].startswith("bad input: the request is larger than")
        assert peak_rss(child.pid) - before < 48 << 20
        send(json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "put", "arguments": {"name": "small", "body": "fits\n"}}}).encode())
        done = answer()
        assert done["id"] == 4 and not done["result"].get("isError"), done
        assert not (record.root / "projects/main/artifacts/big").exists()
    finally:
        child.kill()
        child.wait()


def test_a_client_that_never_finishes_its_request_is_disconnected(tmp_path: Path) -> None:
    with serving(tmp_path) as (server, secret):
        port = int(server.base.rsplit(":", 1)[1])
        head = socket.create_connection(("127.0.0.1", port), timeout=60)
        head.sendall(b"POST /mcp HTTP/1.1\r\nHost: t\r\n")  # and no more
        body = socket.create_connection(("127.0.0.1", port), timeout=90)
        body.sendall(f"POST /mcp HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {secret}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
                     .encode())
        started = time.monotonic()
        assert head.recv(1) == b""  # closed by the server
        assert time.monotonic() - started < connections.HEAD_S + 10
        assert body.recv(1) == b""
        assert time.monotonic() - started < connections.IDLE_S + 15
        head.close()
        body.close()
        assert mcp_status(server, secret) == 200


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}}


def let_in(server: Server, secret: str, tries: int = 5) -> int:
    """The status of an MCP initialize, sent again after each 503 as its Retry-After
    asks (at most ``tries`` times)."""
    for _ in range(tries):
        answer = httpx2.post(server.url, json=INITIALIZE, timeout=30, headers={
            **HEADERS, "Authorization": f"Bearer {secret}"})
        if answer.status_code != 503:
            return answer.status_code
        time.sleep(int(answer.headers["retry-after"]))
    return 503


def test_many_waiting_connections_do_not_keep_a_client_out(tmp_path: Path) -> None:
    # A process that may open 200 descriptors: 300 half-open requests would leave it none.
    with serving(tmp_path, descriptors=200) as (server, secret):
        port = int(server.base.rsplit(":", 1)[1])
        held = []
        try:
            for _ in range(300):
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                sock.sendall(b"GET /mcp HTTP/1.1\r\n")
                held.append(sock)
            # Told to come back while they hold every place; let in once the head deadline
            # has closed them.
            assert let_in(server, secret, tries=int(connections.HEAD_S) + 10) == 200
        finally:
            for sock in held:
                sock.close()


def test_a_server_out_of_descriptors_says_so_a_few_times_not_once_per_accept(
        tmp_path: Path) -> None:
    # 150 connections at once to a process that may open 80 descriptors: asyncio takes
    # them faster than the limit is applied, its accept fails, and it logs each failure
    # (up to the listen backlog's length at each look).
    with serving(tmp_path, descriptors=80) as (server, secret):
        port = int(server.base.rsplit(":", 1)[1])
        held = []
        try:
            for _ in range(150):
                held.append(socket.create_connection(("127.0.0.1", port), timeout=30))
            time.sleep(2)  # the server's accept loop, at its pace
        finally:
            for sock in held:
                sock.close()
        assert let_in(server, secret) == 200
        log = server.log_text()
        assert "out of system resource" in log  # the failure this is about happened
        assert len(log.splitlines()) < 100, log[-2000:]


def test_a_connection_over_the_limit_gets_503_and_the_open_ones_keep_working(
        tmp_path: Path) -> None:
    most = 8  # the server's limit under this descriptor limit
    with serving(tmp_path, descriptors=connections.SPARE_FDS + most) as (server, secret):
        auth = {**HEADERS, "Authorization": f"Bearer {secret}"}
        clients: list[httpx2.Client] = []
        streams = []

        def session() -> tuple[httpx2.Client, dict[str, str]]:
            """A client of one connection, initialized: the headers of its session."""
            client = httpx2.Client(headers=auth, timeout=30, limits=httpx2.Limits(
                max_connections=1, max_keepalive_connections=1))
            clients.append(client)
            answer = client.post(server.url, json=INITIALIZE)
            assert answer.status_code == 200, answer.text
            said = {"mcp-session-id": answer.headers["mcp-session-id"],
                    "mcp-protocol-version": "2025-11-25"}
            assert client.post(server.url, headers=said, json={
                "jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
            return client, said

        try:
            # All but one of the connections the server takes: event streams it answers.
            for _ in range(most - 1):
                client, said = session()
                stream = client.stream("GET", server.url, headers={
                    **said, "Accept": "text/event-stream"})
                assert stream.__enter__().status_code == 200
                streams.append(stream)
            # The last one: a client between two calls, its connection kept alive.
            kept, said = session()
            # A new connection is refused whole, and told when to come back; twice.
            for _ in range(2):
                refused = httpx2.post(server.url, json=INITIALIZE, headers=auth, timeout=30)
                assert refused.status_code == 503, refused.text
                assert refused.headers["retry-after"] == "1"
                assert refused.json()["error"]["message"].startswith("busy: ")
            # The client between two calls still has its connection (a new one would be
            # refused): its next call is answered.
            listed = kept.post(server.url, headers=said, json={
                "jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            assert listed.status_code == 200 and '"put"' in listed.text
            # Said once on the server's terminal, however many were refused.
            assert server.log_text().count("connections are open, the most this server "
                                           "takes") == 1
            # Once one closes, a new connection is let in.
            streams.pop().__exit__(None, None, None)  # its connection closed with it
            assert let_in(server, secret) == 200
        finally:
            for stream in streams:
                stream.__exit__(None, None, None)
            for client in clients:
                client.close()
