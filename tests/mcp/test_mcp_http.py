"""`atlas mcp --http` as a real process on 127.0.0.1 (a free port), with bearer tokens:
who may connect, who they act as, and many clients at once."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support.mcp_client import run, seed, text
from support.runner import atlas_command, child_env, run_atlas, snapshot

from atlas_files.mcp import tokens
from atlas_files.storage.record import Record

CLIENTS = 16
SECONDS = 10.0


@dataclass
class Http:
    url: str
    record: Record
    tokens: Path
    secrets: dict[str, str]


def _start(root: Path, tokens_file: Path, log: Path, *extra: str) -> tuple[subprocess.Popen[bytes],
                                                                           str]:
    env = child_env()
    with log.open("wb") as err:
        proc = subprocess.Popen(
            atlas_command("--record", str(root), "mcp", "--http", "127.0.0.1:0", "--tokens",
                          str(tokens_file), *extra),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"serving (http://127\.0\.0\.1:\d+/mcp)", log.read_text())
        if found:
            return proc, found.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the server did not start: {log.read_text()}")


@pytest.fixture
def http(tmp_path: Path) -> Iterator[Http]:
    record = seed(tmp_path / "rec")
    tokens_file = tmp_path / "private" / "tokens.json"
    tokens_file.parent.mkdir()
    secrets = {name: tokens.add(tokens_file, name) for name in ("alice", "bob", "carol")}
    proc, url = _start(record.root, tokens_file, tmp_path / "server.log")
    try:
        yield Http(url, record, tokens_file, secrets)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung server fails loudly
            proc.kill()
            raise


def raw_post(url: str, body: dict[str, Any], token: str | None, **more: str) -> int:
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream", **more}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                              timeout=httpx2.Timeout(30, read=120))
    return Client(streamable_http_client(url, http_client=http))


PUT = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
       "params": {"name": "put", "arguments": {"name": "plan", "body": "x", "expect": 2}}}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


def test_no_token_a_wrong_one_and_a_revoked_one_get_401_and_touch_nothing(http: Http) -> None:
    before = snapshot(http.record.root)
    for token in (None, "", "atlas_not-a-token", http.secrets["alice"] + "x"):
        assert raw_post(http.url, INIT, token) == 401, token
        assert raw_post(http.url, PUT, token) == 401, token
    assert raw_post(http.url, INIT, http.secrets["bob"]) == 200
    result = run_atlas("mcp", "token", "revoke", "bob", "--tokens", str(http.tokens))
    assert result.returncode == 0, result.stderr
    assert raw_post(http.url, INIT, http.secrets["bob"]) == 401  # no restart needed
    assert raw_post(http.url, PUT, http.secrets["bob"]) == 401
    assert raw_post(http.url, INIT, http.secrets["alice"]) == 200
    assert snapshot(http.record.root) == before


def test_behind_a_reverse_proxy_the_public_name_is_accepted(http: Http) -> None:
    # A proxy with TLS forwards to the loopback address under its own name.
    assert raw_post(http.url, INIT, http.secrets["alice"], Host="atlas.example.org",
                    Origin="https://atlas.example.org") == 200
    assert raw_post(http.url, INIT, None, Host="atlas.example.org") == 401


def test_each_token_writes_as_its_identity_and_only_as_it(http: Http) -> None:
    async def go() -> list[Any]:
        async with client(http.url, http.secrets["alice"]) as alice, \
                client(http.url, http.secrets["carol"]) as carol:
            return [
                await alice.call_tool("put", {"name": "note-a", "body": "from alice\n"}),
                await carol.call_tool("put", {"name": "note-c", "body": "from carol\n"}),
                await alice.call_tool("put", {"name": "note-x", "body": "x\n",
                                              "identity": "carol"}),
                await carol.call_tool("begin", {}),
            ]

    wrote_a, wrote_c, posing, begun = run(go)
    assert not wrote_a.is_error and not wrote_c.is_error
    history = {n: run_atlas("--record", str(http.record.root), "get", n, "--json").json()
               for n in ("note-a", "note-c")}
    assert history["note-a"]["author"] == "alice" and history["note-c"]["author"] == "carol"
    assert posing.is_error and text(posing).startswith("bad input: put takes no argument")
    assert begun.structured_content["identity"] == "carol"


def test_sixteen_clients_for_ten_seconds_lose_no_write(http: Http) -> None:
    names = ["alice", "bob", "carol"]
    done: dict[int, tuple[str, int]] = {}
    errors: list[str] = []

    async def one(i: int, deadline: float) -> None:
        who = names[i % len(names)]
        topic = f"load-{i}"
        written = 0
        async with client(http.url, http.secrets[who]) as c:
            while time.monotonic() < deadline:
                put = await c.call_tool("put", {"name": topic, "body": f"{written + 1}\n",
                                                "expect": written})
                if put.is_error:
                    errors.append(text(put))
                    break
                written += 1
                got = await c.call_tool("get", {"name": topic})
                doc = got.structured_content or {}
                if got.is_error or doc.get("version") != written or doc.get("author") != who:
                    errors.append(f"{topic}: {text(got)[:200]}")
                    break
        done[i] = (who, written)

    async def go() -> None:
        deadline = time.monotonic() + SECONDS
        with anyio.fail_after(SECONDS + 90):
            async with anyio.create_task_group() as tg:
                for i in range(CLIENTS):
                    tg.start_soon(one, i, deadline)

    run(go)
    assert errors == []
    assert len(done) == CLIENTS and all(n > 0 for _, n in done.values())
    for i, (who, written) in done.items():
        listed = run_atlas("--record", str(http.record.root), "history", f"load-{i}",
                           "--json").json()["versions"]
        assert len(listed) == written and {v["author"] for v in listed} == {who}


def test_read_only_over_http(http: Http, tmp_path: Path) -> None:
    proc, url = _start(http.record.root, http.tokens, tmp_path / "ro.log", "--read-only")
    try:
        async def go() -> tuple[Any, Any]:
            async with client(url, http.secrets["alice"]) as c:
                return await c.list_tools(), await c.call_tool("end", {"status": "x\n"})

        listed, ended = run(go)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert "end" not in {t.name for t in listed.tools} and ended.is_error


@pytest.mark.parametrize("problem", ["no tokens option", "readable by others", "inside the record",
                                     "no token in it", "missing file", "bad address"])
def test_http_refuses_to_start_unsafely(tmp_path: Path, problem: str) -> None:
    rec = seed(tmp_path / "rec")
    tokens_file = tmp_path / "tokens.json"
    tokens.add(tokens_file, "alice")
    args = ["--record", str(rec.root), "mcp", "--http", "127.0.0.1:0", "--tokens",
            str(tokens_file)]
    if problem == "no tokens option":
        args = args[:-2]
    elif problem == "readable by others":
        tokens_file.chmod(0o640)
    elif problem == "inside the record":
        inside = rec.root / "tokens.json"
        inside.write_bytes(tokens_file.read_bytes())
        inside.chmod(0o600)
        args[-1] = str(inside)
    elif problem == "no token in it":
        tokens.revoke(tokens_file, "alice")
    elif problem == "missing file":
        args[-1] = str(tmp_path / "nothing.json")
    else:
        args[4] = "127.0.0.1"
    result = run_atlas(*args, timeout=60)
    assert result.returncode == 2, (problem, result.stderr)
    assert result.stderr.startswith("atlas: error: ") and "Traceback" not in result.stderr
