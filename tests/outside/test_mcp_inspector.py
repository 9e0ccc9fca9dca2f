"""`atlas mcp` through a client that is not ours: the MCP Inspector's CLI, the TypeScript
SDK's client, which checks structured results against each tool's output schema. Every
refusal (stop, held, bad input, not found) reaches it as the text a model reads, over
stdio and Streamable HTTP, in both protocol revisions (the initialize handshake of
2025-11-25, and 2026-07-28: no initialize, server/discover, no session); a success
conforms to its schema; OAuth works end to end, the authorization response's `iss`
(RFC 9207) checked by the client."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from support.inspector import Inspector, document, fake_browser, free_port, install, relay, teed
from support.mcp_client import seed
from support.oauth import Server, process, request_id
from support.runner import atlas_command, child_env, run_atlas

from atlas_files.mcp import tokens
from atlas_files.mcp.app import SPECS
from atlas_files.storage.record import Record

ERAS = {"legacy": "2025-11-25", "modern": "2026-07-28"}

# (tool, arguments, what the text starts with): the record is seed()'s, the caller alice.
REFUSALS: dict[str, tuple[str, dict[str, Any], str]] = {
    "stop": ("put", {"name": "plan", "body": "mine\n", "expect": 1},
             "stop: you read v1 of plan, but it is at v2"),
    "held": ("lease", {"action": "claim", "resource": "gpu0", "duration": "1h", "why": "eval"},
             "held: gpu0 is held by bob"),
    "bad input": ("put", {"name": "Bad Name", "body": "x\n"}, "bad input: "),
    "not found": ("get", {"name": "nosuch"}, "not found: no topic named 'nosuch'"),
}


@pytest.fixture(scope="session")
def inspector_binary(tmp_path_factory: pytest.TempPathFactory,
                     request: pytest.FixtureRequest) -> Path:
    cache = getattr(request.config, "cache", None)
    folder = cache.mkdir("npm") if cache is not None else tmp_path_factory.mktemp("npm")
    return install(Path(folder))


@pytest.fixture
def inspector(inspector_binary: Path, tmp_path: Path) -> Inspector:
    home = tmp_path / "home"
    home.mkdir()
    return Inspector(inspector_binary, home)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Record, Server, str]]:
    """A seeded record and `atlas mcp --http` over it with a static token for alice."""
    root = tmp_path_factory.mktemp("inspected")
    record = seed(root / "rec")
    (root / "private").mkdir()
    secret = tokens.add(root / "private" / "tokens.json", "alice")
    with process(record.root, root / "private" / "tokens.json", root / "server.log",
                 oauth=False) as server:
        yield record, server, secret


def call(inspector: Inspector, transport: str, era: str, served: tuple[Record, Server, str],
         log: Path, tool: str, args: dict[str, Any]) -> tuple[Any, str]:
    """One tools/call through the Inspector; (its JSON document, what it sent)."""
    record, server, secret = served
    what = ["--protocol-era", era, "--method", "tools/call", "--tool-name", tool,
            "--tool-args-json", json.dumps(args)]
    if transport == "stdio":
        command = teed(log, *atlas_command("mcp"))
        done = inspector.against({"command": command[0], "args": command[1:], "env": {
            "ATLAS_RECORD": str(record.root), "ATLAS_AS": "alice"}}, *what)
        return document(done), log.read_text()
    port = int(server.base.rsplit(":", 1)[1])
    with relay(port) as kept:
        done = inspector.against({"type": "streamable-http",
                                  "url": f"http://127.0.0.1:{kept.port}/mcp",
                                  "headers": {"Authorization": f"Bearer {secret}"}}, *what)
    return document(done), kept.text()


def assert_era(era: str, sent: str) -> None:
    if era == "legacy":
        assert '"method":"initialize"' in sent.replace(" ", "")
        assert ERAS["modern"] not in sent
    else:
        assert '"method":"initialize"' not in sent.replace(" ", "")
        assert "server/discover" in sent and ERAS["modern"] in sent
        assert "mcp-session-id" not in sent.lower()


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("kind", list(REFUSALS))
def test_each_refusal_reaches_the_typescript_client_as_its_text(
        inspector: Inspector, served: tuple[Record, Server, str], tmp_path: Path,
        kind: str, transport: str, era: str) -> None:
    tool, args, starts = REFUSALS[kind]
    shown, sent = call(inspector, transport, era, served, tmp_path / "sent.jsonl", tool, args)
    result = shown.get("result")
    assert isinstance(result, dict), shown  # not {"error": "data must have required ..."}
    assert result["isError"] is True and "structuredContent" not in result
    text = result["content"][0]["text"]
    assert text.startswith(starts), text
    assert "\nhint: " in text
    assert result["_meta"]["atlas/error"]["error"]["kind"].replace("_", " ") in (
        {"stop": "version conflict", "held": "lease held"}.get(kind, kind))
    assert_era(era, sent)


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_success_conforms_to_its_output_schema(
        inspector: Inspector, served: tuple[Record, Server, str], tmp_path: Path,
        transport: str, era: str) -> None:
    # The Inspector validates structured content against the tool's schema, and fails
    # the call if it does not conform.
    shown, sent = call(inspector, transport, era, served, tmp_path / "sent.jsonl", "get",
                       {"name": "plan"})
    result = shown["result"]
    assert isinstance(result, dict) and not result.get("isError"), shown
    assert result["structuredContent"]["version"] == 2
    assert result["structuredContent"]["author"] == "bob"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert_era(era, sent)


def test_every_tool_schema_passes_the_inspectors_strict_portability_check(
        inspector: Inspector, served: tuple[Record, Server, str]) -> None:
    record, _, _ = served
    command = atlas_command("mcp")
    done = inspector.against({"command": command[0], "args": command[1:], "env": {
        "ATLAS_RECORD": str(record.root), "ATLAS_AS": "alice"}}, "--strict", "--method",
        "tools/list")
    assert done.returncode == 0, done.stderr[-2000:]
    listed = document(done)["result"]
    assert isinstance(listed, dict)
    assert sorted(t["name"] for t in listed["tools"]) == sorted(SPECS)


# -- OAuth --------------------------------------------------------------------------------

def oauth_run(inspector: Inspector, server: Server, folder: Path, era: str,
              iss: str | None = None) -> tuple[Any, str]:
    """The Inspector connecting through OAuth: it opens the authorization URL in the
    stand-in browser; the person (this test) approves at the terminal; the browser follows
    the consent page back to the Inspector's callback, with ``iss`` replaced if given.
    (The Inspector's document, the callback URL as the server sent it.)"""
    browser, opened = fake_browser(folder)
    callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
    # The Inspector runs while this test acts as the browser and the person.
    environ = {"BROWSER": str(browser), "MCP_AUTO_OPEN_ENABLED": "true"}
    child = subprocess.Popen(
        [str(inspector.binary), "--cli", "--format", "json", "--connect-timeout", "120000",
         "--protocol-era", era,
         "--callback-url", callback, "--method", "tools/call", "--tool-name", "put",
         "--tool-args-json", json.dumps({"name": "plan", "body": "x\n", "expect": 1}),
         server.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, env=inspector_env(inspector, environ))
    try:
        url = wait_for_line(opened, 120)
        consent = httpx2.get(url, timeout=30).headers["location"]
        code, _, err = run_atlas("mcp", "approve", request_id(consent), "--as", "web-alice",
                                 "--tokens", str(server.tokens))
        assert code == 0, err
        back = httpx2.get(consent, timeout=30).headers["location"]
        if iss is not None:
            parts = urlsplit(back)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()} | {"iss": iss}
            back = parts._replace(query=urlencode(query)).geturl()
        httpx2.get(back, timeout=60)
        out, errors = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return document(subprocess.CompletedProcess(child.args, child.returncode, out, errors)), back


def inspector_env(inspector: Inspector, more: dict[str, str]) -> dict[str, str]:
    environ = child_env()
    return {**environ, "HOME": str(inspector.home), "MCP_INSPECTOR_SECRET_STORE": "memory",
            "NO_COLOR": "1", **more}


def wait_for_line(path: Path, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().splitlines()[0]
        time.sleep(0.1)
    raise AssertionError("the Inspector opened no authorization URL")


@pytest.fixture
def oauth_server(tmp_path: Path) -> Iterator[Server]:
    record = seed(tmp_path / "rec")
    (tmp_path / "private").mkdir()
    with process(record.root, tmp_path / "private" / "tokens.json",
                 tmp_path / "server.log") as server:
        yield server


@pytest.mark.parametrize("era", list(ERAS))
def test_oauth_through_the_inspector_with_the_issuer_in_the_authorization_response(
        inspector: Inspector, oauth_server: Server, tmp_path: Path, era: str) -> None:
    shown, back = oauth_run(inspector, oauth_server, tmp_path, era)
    assert parse_qs(urlsplit(back).query)["iss"] == [oauth_server.base]
    result = shown["result"]
    assert isinstance(result, dict), shown
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("stop: you read v1 of plan, but it is at v2")
    assert re.search(r"web-alice", oauth_server.log_text())


def test_the_inspector_refuses_a_code_that_names_another_issuer(
        inspector: Inspector, oauth_server: Server, tmp_path: Path) -> None:
    # The check the issuer exists for: a code sent back under another server's name is
    # not exchanged, so what the server puts in `iss` is what a client really compares.
    shown, _ = oauth_run(inspector, oauth_server, tmp_path, "legacy",
                         iss="https://elsewhere.example")
    assert "result" not in shown, shown
    assert "issuer" in json.dumps(shown).lower() or "iss" in json.dumps(shown), shown
    code, out, err = run_atlas("mcp", "token", "ls", "--tokens", str(oauth_server.tokens), "--json")
    assert code == 0 and json.loads(out)["grants"] == [], err
