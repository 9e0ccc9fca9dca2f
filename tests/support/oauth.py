"""Helpers of the OAuth tests: `atlas mcp --http --oauth` as a real process (or in this
one, where a test must hand it a clock or a document fetcher), the SDK's
``OAuthClientProvider`` with a person approving on the terminal or on the consent page,
and a flow driven by hand for what no well-behaved client does (replays, wrong
resources)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2
import uvicorn
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from atlas_files.mcp import transports
from atlas_files.mcp.app import Served
from atlas_files.mcp.notices import Notices
from support.runner import atlas_command, child_env, run_atlas

CALLBACK = "http://127.0.0.1:9/callback"  # loopback: allowed; nothing listens, nothing needs to
T = TypeVar("T")


def bounded(fn: Callable[[], Awaitable[T]], seconds: float = 90) -> T:
    """Run ``fn`` to its end, or fail after ``seconds``: a flow waiting on a person who
    never comes must fail the test, not hang it."""

    async def go() -> T:
        with anyio.fail_after(seconds):
            return await fn()

    return anyio.run(go)


@dataclass
class Server:
    url: str  # where it serves /mcp
    base: str
    tokens: Path
    log: Path
    stop: Callable[[], None]
    resource: str = ""  # what tokens are for: url, or --public-url's /mcp
    pid: int = 0  # the server's process (0: served in this one)

    def __post_init__(self) -> None:
        self.resource = self.resource or self.url

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def one_time_code(self, request_id: str) -> str:
        found = re.search(rf"connection request {request_id} .*one-time code (\d{{4}}-\d{{4}})",
                          self.log_text())
        assert found, self.log_text()
        return found.group(1)


@contextmanager
def process(root: Path, tokens: Path, log: Path, *extra: str,
            preexec: Callable[[], None] | None = None, oauth: bool = True,
            env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[Server]:
    """`atlas --record ROOT mcp --http 127.0.0.1:0 --tokens TOKENS --oauth EXTRA...`
    (without --oauth if not ``oauth``; ``preexec`` runs in the child before atlas: a
    resource limit, say; ``env`` adds to its environment)."""
    environ = child_env()
    with log.open("wb") as err:
        proc = subprocess.Popen(
            atlas_command("--record", str(root), "mcp", "--http", "127.0.0.1:0", "--tokens",
                          str(tokens), *(["--oauth"] if oauth else []), *extra),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            env={**environ, **(env or {})}, preexec_fn=preexec, cwd=cwd)
    deadline = time.monotonic() + 60
    found = None
    started = (r"serving (http://127\.0\.0\.1:\d+)/mcp.*\n.*clients connect to (\S+);" if oauth
               else r"serving (http://127\.0\.0\.1:\d+)/mcp()")
    while time.monotonic() < deadline and found is None:
        found = re.search(started, log.read_text())
        if found is None:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    if found is None:
        proc.kill()
        raise AssertionError(f"the server did not start: {log.read_text()}")

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:  # pragma: no cover - a hung server fails loudly
                proc.kill()
                raise

    try:
        yield Server(found.group(1) + "/mcp", found.group(1), tokens, log, stop,
                     found.group(2) or found.group(1) + "/mcp", proc.pid)
    finally:
        stop()


@contextmanager
def in_process(root: Path, tokens: Path, log: Path, oauth: transports.OAuth) -> Iterator[Server]:
    """The same app served by uvicorn in a thread of this process, for tests that give it
    a clock or a document fetcher of their own."""
    sock = transports._bind("127.0.0.1", 0)
    port = sock.getsockname()[1]

    def say(line: str) -> None:
        with log.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    app, url = transports.app(Served(str(root), None, None), tokens, "127.0.0.1", port,
                         Notices(say), oauth)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           lifespan="on", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=20)

    try:
        yield Server(url, url.removesuffix("/mcp"), tokens, log, stop)
    finally:
        stop()
        sock.close()


class Storage:
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None
        self.history: list[OAuthToken] = []

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.history.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def request_id(consent_url: str) -> str:
    return consent_url.rstrip("/").rsplit("/", 1)[1]


def approve_on_terminal(server: Server, identity: str) -> Callable[[str], Awaitable[str]]:
    """A person at the server's terminal: lists the waiting requests, approves this one."""

    async def person(consent_url: str) -> str:
        rid = request_id(consent_url)
        code, out, err = run_atlas("mcp", "pending", "--tokens", str(server.tokens), "--json")
        assert code == 0, err
        assert rid in {r["id"] for r in json.loads(out)["requests"]}
        code, _, err = run_atlas("mcp", "approve", rid, "--as", identity, "--tokens",
                                 str(server.tokens))
        assert code == 0, err
        return consent_url

    return person


def approve_on_page(server: Server, identity: str) -> Callable[[str], Awaitable[str]]:
    """A person in the browser: types the identity and the code the terminal shows."""

    async def person(consent_url: str) -> str:
        otc = server.one_time_code(request_id(consent_url))
        async with httpx2.AsyncClient(timeout=30) as http:
            page = await http.get(consent_url)
            assert page.status_code == 200 and "One-time code" in page.text
            sent = await http.post(consent_url, data={"as": identity, "code": otc,
                                                      "action": "approve"})
            assert sent.status_code == 303, sent.text
            return str(httpx2.URL(consent_url).join(sent.headers["location"]))

    return person


@dataclass
class Browserless:
    """The SDK's redirect and callback handlers with a person in between: the
    authorization URL is followed to the consent page, the person approves, and the page
    reloaded sends the code back."""

    person: Callable[[str], Awaitable[str]]
    results: list[AuthorizationCodeResult] = field(default_factory=list)
    redirects: list[str] = field(default_factory=list)

    async def redirect(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            first = await http.get(authorization_url)
            assert first.status_code == 302, first.text
            consent = first.headers["location"]
            after = await self.person(consent)
            back = await http.get(after)
            assert back.status_code == 302, back.text
            self.redirects.append(back.headers["location"])
            query = parse_qs(urlsplit(back.headers["location"]).query)
            self.results.append(AuthorizationCodeResult(
                code=query["code"][0], state=query["state"][0], iss=query["iss"][0]))

    async def callback(self) -> AuthorizationCodeResult:
        return self.results[-1]


def oauth_client(server: Server, person: Callable[[str], Awaitable[str]],
                 storage: Storage | None = None, name: str = "test client",
                 metadata_url: str | None = None,
                 mode: str = "auto") -> tuple[Client, OAuthClientProvider, Storage]:
    storage = storage or Storage()
    flow = Browserless(person)
    auth = OAuthClientProvider(
        server.url, OAuthClientMetadata(client_name=name, redirect_uris=[CALLBACK]),  # type: ignore[list-item]
        storage, flow.redirect, flow.callback, client_metadata_url=metadata_url)
    http = httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30, read=60))
    return Client(streamable_http_client(server.url, http_client=http), mode=mode), auth, storage


# A flow by hand ------------------------------------------------------------------------

def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.decode().rstrip("=")


def register(base: str, redirect: str = CALLBACK, name: str = "by hand",
             method: str = "none") -> httpx2.Response:
    return httpx2.post(f"{base}/register", json={
        "client_name": name, "redirect_uris": [redirect], "token_endpoint_auth_method": method,
        "grant_types": ["authorization_code", "refresh_token"], "scope": "atlas"}, timeout=30)


def authorize(base: str, client_id: str, challenge: str, redirect: str = CALLBACK,
              resource: str | None = None) -> httpx2.Response:
    """GET /authorize as a client sends it; ``resource`` defaults to BASE/mcp."""
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect,
             "code_challenge": challenge, "code_challenge_method": "S256", "state": "st4te",
             "resource": resource or f"{base}/mcp", "scope": "atlas"}
    return httpx2.get(f"{base}/authorize?{urlencode(query)}", timeout=30)


def token(base: str, **form: str) -> httpx2.Response:
    return httpx2.post(f"{base}/token", data=form, timeout=30)


@dataclass
class Manual:
    client_id: str
    verifier: str
    consent: str
    code: str | None = None


def start_by_hand(server: Server, name: str = "by hand") -> Manual:
    registered = register(server.base, name=name)
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    verifier, challenge = pkce()
    sent = authorize(server.base, client_id, challenge, resource=server.resource)
    assert sent.status_code == 302, sent.text
    # Behind --public-url the consent page is named by the public address; reach it here.
    consent = sent.headers["location"].replace(server.resource.removesuffix("/mcp"),
                                               server.base, 1)
    return Manual(client_id, verifier, consent)


def code_by_hand(server: Server, identity: str, name: str = "by hand") -> Manual:
    """A registered public client, approved on the terminal, holding its code."""
    flow = start_by_hand(server, name)
    code, _, err = run_atlas("mcp", "approve", request_id(flow.consent), "--as", identity,
                             "--tokens", str(server.tokens))
    assert code == 0, err
    back = httpx2.get(flow.consent, timeout=30)
    assert back.status_code == 302, back.text
    flow.code = parse_qs(urlsplit(back.headers["location"]).query)["code"][0]
    return flow


def exchange(server: Server, flow: Manual, **more: str) -> httpx2.Response:
    assert flow.code is not None
    form = {"grant_type": "authorization_code", "code": flow.code, "redirect_uri": CALLBACK,
            "client_id": flow.client_id, "code_verifier": flow.verifier,
            "resource": server.resource, **more}
    return token(server.base, **form)


def mcp_status(server: Server, access_token: str) -> int:
    """The HTTP status of an MCP initialize carrying ``access_token``."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    answer = httpx2.post(server.url, json=body, timeout=30, headers={
        "Authorization": f"Bearer {access_token}",
        "Accept": "application/json, text/event-stream"})
    return answer.status_code


def peak_rss(pid: int) -> int:
    """The most memory process ``pid`` has held (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for {pid}")


def post_chunked(server: Server, path: str, size: int, headers: dict[str, str],
                 fill: bytes = b"a") -> tuple[int, float]:
    """POST ``size`` bytes of ``fill`` to ``path`` in 64 KiB chunks, no length said (a
    stream that ends when the server stops it): its status and how long it took."""
    port = int(server.base.rsplit(":", 1)[1])
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: t\r\n{head}Transfer-Encoding: "
                     "chunked\r\n\r\n".encode())
        chunk = b"10000\r\n" + fill * 0x10000 + b"\r\n"
        try:
            for _ in range(size // 0x10000):
                sock.sendall(chunk)
            sock.sendall(b"0\r\n\r\n")
        except OSError:  # refused and closed: the rest is never read
            pass
        answer = b""
        try:
            while b"\r\n" not in answer and (more := sock.recv(4096)):
                answer += more
        except OSError:
            pass
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
    return status, time.monotonic() - started
