"""The HTTP-client boundary, from its threat model: whoever can reach `atlas mcp --http
--oauth` may send anything, with or without a token. Hypothesis generates hostile
requests of every kind the server reads (JSON-RPC at /mcp with and without a valid token,
registration metadata, /authorize and its PKCE parameters and redirect URIs, /token,
/revoke, the consent page, any path and header, bytes that are not HTTP, requests cut
short) and sends them as raw bytes to one real server process. Each must be answered or
closed in bounded time, never with a 500; afterwards the server still serves a person
(a static token and a whole OAuth flow), its state file is readable, its memory stayed
bounded, it started no process, it made no connection out (a client id naming a local
address is refused unfetched), it wrote nothing outside the record and its private
folder, and its terminal said a bounded number of lines."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.mcp_client import seed
from support.oauth import (
    CALLBACK,
    Server,
    code_by_hand,
    exchange,
    mcp_status,
    peak_rss,
    pkce,
    process,
    register,
)
from support.runner import run_atlas

from atlas_files.mcp import oauthstore, tokens
from atlas_files.mcp.app import SPECS

EXAMPLES = int(os.environ.get("ATLAS_HOSTILE_EXAMPLES", "150"))
ANSWER_S = 20.0  # the longest any one request may take to be answered or closed
PEAK_BYTES = 320 << 20
SPOKEN = 250  # the most lines the server's terminal may show for the whole run

HYPOTHESIS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                             HealthCheck.large_base_example])


@dataclass
class Canary:
    """A listener on 127.0.0.1 that hostile client ids name: nothing may connect."""

    port: int = 0
    accepted: list[str] = field(default_factory=list)


@dataclass
class Target:
    server: Server
    secret: str
    root: Path
    client_id: str
    canary: Canary
    before: dict[str, tuple[int, int]]
    statuses: dict[int, int] = field(default_factory=dict)
    slowest: float = 0.0
    sent: int = 0

    @property
    def port(self) -> int:
        return int(self.server.base.rsplit(":", 1)[1])


def outside(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` but the record, the private folder (tokens, OAuth state,
    their locks), the server's own YAML cache and its log: (size, mtime)."""
    kept = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("rec/", "private/", "home/.cache/atlas-files/")) or \
                rel == "server.log" or not path.is_file():
            continue
        st_ = path.stat()
        kept[rel] = (st_.st_size, st_.st_mtime_ns)
    return kept


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = tmp_path_factory.mktemp("hostile")
    record = seed(root / "rec")
    for folder in ("private", "home", "cwd"):
        (root / folder).mkdir()
    secret = tokens.add(root / "private" / "tokens.json", "alice")
    canary = Canary()
    listener = socket.create_server(("127.0.0.1", 0))
    canary.port = listener.getsockname()[1]

    def watch() -> None:
        while True:
            try:
                sock, peer = listener.accept()
            except OSError:
                return
            canary.accepted.append(str(peer))
            sock.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    env = {"HOME": str(root / "home"), "XDG_CACHE_HOME": str(root / "home" / ".cache")}
    before = outside(root)
    try:
        with process(record.root, root / "private" / "tokens.json", root / "server.log",
                     env=env, cwd=root / "cwd") as server:
            client_id = register(server.base).json()["client_id"]
            yield Target(server, secret, root, client_id, canary, before)
    finally:
        listener.close()
        watcher.join(timeout=10)


def send(target: Target, data: bytes, wait: bool = True) -> bytes:
    """``data`` on a new connection; the answer until the server closes (``wait``), or
    nothing after a moment (a request cut short, which the server must drop by itself)."""
    started = time.monotonic()
    answer = b""
    with socket.create_connection(("127.0.0.1", target.port), timeout=ANSWER_S) as sock:
        try:
            sock.sendall(data)
        except OSError:  # refused early and closed: the rest was not wanted
            pass
        if wait:
            try:
                while more := sock.recv(65536):
                    answer += more
            except OSError:
                pass
        else:
            time.sleep(0.05)
    took = time.monotonic() - started
    target.slowest = max(target.slowest, took)
    target.sent += 1
    assert took < ANSWER_S, data[:200]
    os.kill(target.server.pid, 0)  # still running
    if answer.startswith(b"HTTP/1.1 "):
        status = int(answer.split(b" ", 2)[1])
        target.statuses[status] = target.statuses.get(status, 0) + 1
        assert status != 500, (data[:300], answer[:500])
    return answer


def request(method: str, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    if body or method == "POST":
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("utf-8", "surrogateescape") + body


# -- what strangers send --------------------------------------------------------------

texts = st.text(max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12)
big_text = st.integers(1, 200_000).map(lambda n: "x" * n)


def urls(target: Target) -> st.SearchStrategy[str]:
    return st.one_of(
        st.just(CALLBACK), texts, st.just("https://claude.ai/api/mcp/auth_callback"),
        st.just("javascript:alert(1)"), st.just("http://127.0.0.1:9/cb#frag"),
        st.builds(lambda s: f"http://127.0.0.1:9/{quote(s)}", big_text),
        st.just(f"https://127.0.0.1:{target.canary.port}/client.json"),
        st.just(f"https://[::1]:{target.canary.port}/client.json"),
        st.just("https://10.0.0.1/client.json"))


def tool_call(target: Target) -> st.SearchStrategy[Any]:
    names = st.sampled_from([*SPECS, "nosuch", ""]) | texts
    args = st.dictionaries(st.sampled_from(["name", "body", "expect", "action", "resource",
                                            "duration", "why", "version", "paths", "query",
                                            "identity", "mark_read"]) | texts,
                           json_values | big_text, max_size=6)
    return st.fixed_dictionaries({"name": names, "arguments": args}) | json_values


def jsonrpc(target: Target) -> st.SearchStrategy[bytes]:
    methods = st.sampled_from(["initialize", "tools/call", "tools/list", "server/discover",
                               "subscriptions/listen", "ping", "notifications/initialized",
                               "resources/read", "prompts/get", "logging/setLevel",
                               "notifications/cancelled"]) | texts
    message = st.fixed_dictionaries(
        {"jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_values,
         "id": st.integers() | texts | json_values, "method": methods,
         "params": tool_call(target) | json_values})
    return st.one_of(
        message.map(lambda m: json.dumps(m).encode()),
        st.lists(message, max_size=5).map(lambda m: json.dumps(m).encode()),
        st.binary(max_size=2000),
        st.integers(100, 100_000).map(lambda n: b"[" * n + b"]" * n),
        st.integers(1 << 20, 9 << 20).map(
            lambda n: b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":'
            b'"put","arguments":{"name":"big","body":"' + b"a" * n + b'"}}}'))


def mcp_headers(target: Target) -> st.SearchStrategy[dict[str, str]]:
    auth = st.sampled_from([f"Bearer {target.secret}", "", "Bearer ", "Basic YTpi",
                            "Bearer atlas_oa_" + "x" * 43, "Bearer " + "y" * 8000]) | texts
    return st.fixed_dictionaries({}, optional={
        "Authorization": auth,
        "Content-Type": st.sampled_from(["application/json", "text/plain", "json"]) | texts,
        "Accept": st.sampled_from(["application/json, text/event-stream",
                                   "text/event-stream", "*/*"]) | texts,
        "MCP-Protocol-Version": st.sampled_from(["2025-11-25", "2026-07-28", "1999"]) | texts,
        "Mcp-Session-Id": texts, "Origin": texts,
        "Last-Event-ID": texts})


def registration(target: Target) -> st.SearchStrategy[bytes]:
    fields = st.sampled_from(["client_name", "redirect_uris", "token_endpoint_auth_method",
                              "grant_types", "response_types", "scope", "contacts", "jwks",
                              "jwks_uri", "software_id", "software_version", "logo_uri",
                              "client_uri", "tos_uri", "policy_uri", "application_type"])
    value = json_values | big_text | st.lists(urls(target), max_size=12)
    doc = st.dictionaries(fields | texts, value, max_size=10)
    base = st.fixed_dictionaries({"redirect_uris": st.lists(urls(target), min_size=1,
                                                             max_size=12)})
    return st.one_of(
        st.builds(lambda a, b: json.dumps({**a, **b}).encode(), base, doc),
        doc.map(lambda d: json.dumps(d).encode()), st.binary(max_size=3000))


def authorize_params(target: Target) -> st.SearchStrategy[dict[str, str]]:
    challenge = st.sampled_from([pkce()[1], "", "x" * 42, "=" * 43]) | texts | big_text
    return st.fixed_dictionaries({}, optional={
        "response_type": st.sampled_from(["code", "token"]) | texts,
        "client_id": st.sampled_from([target.client_id,
                                      f"https://127.0.0.1:{target.canary.port}/c.json"])
        | texts,
        "redirect_uri": urls(target), "code_challenge": challenge,
        "code_challenge_method": st.sampled_from(["S256", "plain"]) | texts,
        "state": texts | big_text, "scope": st.sampled_from(["atlas", "openid"]) | texts,
        "resource": st.sampled_from([target.server.resource, "https://evil.example/mcp"])
        | texts})


def token_form(target: Target) -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries({}, optional={
        "grant_type": st.sampled_from(["authorization_code", "refresh_token",
                                       "client_credentials",
                                       "urn:ietf:params:oauth:grant-type:jwt-bearer"]) | texts,
        "code": texts, "code_verifier": texts | big_text, "refresh_token": texts,
        "client_id": st.sampled_from([target.client_id]) | texts, "client_secret": texts,
        "redirect_uri": urls(target), "resource": texts, "token": texts,
        "token_type_hint": texts})


# -- the generators, one test each -----------------------------------------------------

@HYPOTHESIS
@given(data=st.data())
def test_hostile_json_rpc_at_mcp(target: Target, data: st.DataObject) -> None:
    body = data.draw(jsonrpc(target))
    headers = data.draw(mcp_headers(target))
    method = data.draw(st.sampled_from(["POST", "POST", "GET", "DELETE", "PUT"]))
    send(target, request(method, "/mcp", headers, body if method != "GET" else b""))


MODERN = "2026-07-28"


@HYPOTHESIS
@given(data=st.data())
def test_hostile_tool_arguments_with_a_valid_token(target: Target, data: st.DataObject) -> None:
    # A client with a token is still a stranger's program: its arguments reach the tools.
    call: dict[str, Any] = data.draw(st.fixed_dictionaries({
        "name": st.sampled_from(list(SPECS)),
        "arguments": st.dictionaries(st.sampled_from(
            ["name", "body", "expect", "action", "resource", "duration", "why", "version",
             "paths", "query", "kinds", "limit", "topic", "recommended", "chosen", "relation",
             "ref", "text", "retract", "status", "old", "new", "generation", "links",
             "summary", "proposal", "accepted", "mark_read", "since"]) | texts,
            json_values | big_text, max_size=7)}))
    call["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                     "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "1"},
                     "io.modelcontextprotocol/clientCapabilities": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": call}).encode()
    answer = send(target, request("POST", "/mcp", {
        "Authorization": f"Bearer {target.secret}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call", "Mcp-Name": call["name"]}, body))
    assert b"this is a bug in atlas" not in answer, answer[-2000:]
    if b'"result"' in answer:
        result = json.loads(answer[answer.index(b"\r\n\r\n") + 4:])["result"]
        if result.get("isError"):
            assert result["content"][0]["text"].split(":")[0] in (
                "stop", "held", "bad input", "not found", "error"), result
            assert "structuredContent" not in result


@HYPOTHESIS
@given(data=st.data())
def test_hostile_registrations(target: Target, data: st.DataObject) -> None:
    send(target, request("POST", "/register", {"Content-Type": "application/json"},
                         data.draw(registration(target))))


@HYPOTHESIS
@given(data=st.data())
def test_hostile_authorize_requests(target: Target, data: st.DataObject) -> None:
    params = data.draw(authorize_params(target))
    query = urlencode(params).encode()
    if data.draw(st.booleans()):
        send(target, request("GET", f"/authorize?{query.decode()}", {}))
    else:
        send(target, request("POST", "/authorize",
                             {"Content-Type": "application/x-www-form-urlencoded"}, query))


@HYPOTHESIS
@given(data=st.data())
def test_hostile_token_revoke_and_consent_requests(target: Target, data: st.DataObject) -> None:
    form = urlencode(data.draw(token_form(target))).encode()
    where = data.draw(st.sampled_from(["/token", "/revoke", "/consent/"]))
    if where == "/consent/":
        where += quote(data.draw(texts | st.just("0" * 12)), safe="")
        form = urlencode(data.draw(st.dictionaries(
            st.sampled_from(["as", "code", "action"]) | texts, texts, max_size=4))).encode()
    headers = data.draw(st.fixed_dictionaries({}, optional={
        "Authorization": st.sampled_from(["Basic " + "Zm9vOmJhcg==", "Basic !!"]) | texts,
        "Content-Type": st.just("application/x-www-form-urlencoded") | texts}))
    send(target, request(data.draw(st.sampled_from(["POST", "GET"])), where, headers, form))


@HYPOTHESIS
@given(data=st.data())
def test_bytes_that_are_not_http_and_requests_cut_short(target: Target,
                                                        data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(["garbage", "headers", "cut"]))
    if kind == "garbage":
        send(target, data.draw(st.binary(max_size=4000)) + b"\r\n\r\n")
    elif kind == "headers":
        names = st.text(min_size=1, max_size=30)
        headers = data.draw(st.dictionaries(names, st.text(max_size=300) | big_text,
                                            max_size=8))
        path = data.draw(st.sampled_from(["/", "/mcp", "/.well-known/oauth-protected-resource",
                                          "/.well-known/oauth-authorization-server",
                                          "/consent/x/state", "/nothing"])
                         | texts.map(lambda t: "/" + quote(t)))
        method = data.draw(st.sampled_from(["GET", "POST", "OPTIONS", "HEAD", "TRACE"]) | texts)
        send(target, request(method, path, headers))
    else:
        whole = request("POST", "/register", {"Content-Type": "application/json"},
                        data.draw(registration(target)))
        send(target, whole[:data.draw(st.integers(0, max(0, len(whole) - 1)))], wait=False)


def test_many_hostile_connections_at_once(target: Target) -> None:
    bodies = [request("POST", "/register", {"Content-Type": "application/json"},
                      b'{"redirect_uris": ["' + b"x" * 60_000 + b'"]}'),
              request("POST", "/mcp", {"Authorization": "Bearer nope"}, b"{" * 1000),
              b"GET / HTTP/1.1\r\n" + b"X: " + b"y" * 70_000 + b"\r\n\r\n"]
    errors: list[BaseException] = []

    def one(n: int) -> None:
        try:
            send(target, bodies[n % len(bodies)])
        except BaseException as exc:  # noqa: BLE001 - reported below, with the others
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(120)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=ANSWER_S * 3)
    assert not errors, errors[:3]


# -- afterwards ------------------------------------------------------------------------

def children(pid: int) -> list[str]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += (task / "children").read_text().split()
    return found


def test_afterwards_the_server_serves_a_person_and_kept_every_bound(target: Target) -> None:
    server = target.server
    assert target.sent >= 5 * min(EXAMPLES, 20)  # the generators ran first
    assert mcp_status(server, target.secret) == 200
    granted = exchange(server, code_by_hand(server, "bob")).json()
    assert mcp_status(server, granted["access_token"]) == 200
    oauthstore.Store(oauthstore.state_path(server.tokens)).read()  # readable
    code, _, err = run_atlas("mcp", "pending", "--tokens", str(server.tokens))
    assert code == 0, err
    assert oauthstore.state_path(server.tokens).stat().st_size < oauthstore.MAX_FILE
    peak = peak_rss(server.pid)
    assert peak < PEAK_BYTES, peak
    assert children(server.pid) == []
    assert target.canary.accepted == []
    assert outside(target.root) == target.before
    log = server.log_text()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]
    lines = log.splitlines()
    assert len(lines) < SPOKEN, lines[-40:]
    print(f"\nhostile HTTP: {target.sent} requests, statuses {sorted(target.statuses.items())}, "
          f"slowest answer {target.slowest:.2f} s, peak memory {peak >> 20} MiB, "
          f"{len(lines)} terminal lines")
