"""`atlas mcp --http --oauth` as a real process on 127.0.0.1, with the SDK's own OAuth
client: discovery from the first 401, dynamic registration, PKCE, a person approving on
the terminal or on the consent page, tokens, refresh, revocation, and every way a code
or token must not come out."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from support.mcp_client import text
from support.oauth import (
    CALLBACK,
    Server,
    approve_on_page,
    approve_on_terminal,
    authorize,
    bounded,
    code_by_hand,
    exchange,
    mcp_status,
    oauth_client,
    pkce,
    process,
    register,
    request_id,
    start_by_hand,
    token,
)
from support.runner import run_atlas

from atlas_files.mcp import oauthstore, tokens
from atlas_files.mcp.app import tool_names
from atlas_files.storage.record import Record


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # One per test: the terminal shows a few connection requests a minute, and the tests
    # read each request's one-time code there.
    root = tmp_path_factory.mktemp("oauth")
    record = Record.init(root / "rec")
    (root / "private").mkdir()
    with process(record.root, root / "private" / "tokens.json", root / "server.log") as s:
        yield s


def author(server: Server, name: str) -> Any:
    root = server.log.parent / "rec"
    code, out, err = run_atlas("--record", str(root), "get", name, "--json")
    assert code == 0, err
    return json.loads(out)["author"]


def put_and_list(server: Server, person: Any, topic: str) -> tuple[Any, Any, Any]:
    async def go() -> tuple[Any, Any, Any]:
        client, auth, storage = oauth_client(server, person)
        async with client as c:
            listed = await c.list_tools()
            wrote = await c.call_tool("put", {"name": topic, "body": "hello\n", "expect": 0})
        return listed, wrote, storage

    return bounded(go)


def test_the_full_flow_approved_on_the_terminal(server: Server) -> None:
    listed, wrote, storage = put_and_list(server, approve_on_terminal(server, "alice"), "t-a")
    assert "put" in {t.name for t in listed.tools} and not wrote.is_error, text(wrote)
    assert author(server, "t-a") == "alice"
    issued = storage.tokens
    assert issued is not None and issued.token_type == "Bearer" and issued.refresh_token
    code, out, _ = run_atlas("mcp", "pending", "--tokens", str(server.tokens), "--json")
    assert code == 0 and json.loads(out) == {"requests": []}  # approved: waits no more


def test_the_full_flow_approved_on_the_consent_page_with_the_one_time_code(
        server: Server) -> None:
    listed, wrote, _ = put_and_list(server, approve_on_page(server, "bob"), "t-b")
    # Every tool of a server that writes: the token's approval gives the whole toolbox.
    assert {t.name for t in listed.tools} == set(tool_names(read_only=False))
    assert not wrote.is_error, text(wrote)
    assert author(server, "t-b") == "bob"


def test_a_refresh_rotates_the_tokens_and_the_old_refresh_token_is_refused(
        server: Server) -> None:
    async def go() -> Any:
        client, auth, storage = oauth_client(server, approve_on_terminal(server, "carol"))
        async with client as c:
            await c.call_tool("status_read", {})
            auth.context.token_expiry_time = time.time() - 1  # the SDK refreshes now
            after = await c.call_tool("status_read", {})
        return storage, after

    storage, after = bounded(go)
    assert not after.is_error
    first, second = storage.history[0], storage.history[-1]
    assert len(storage.history) == 2
    assert first.access_token != second.access_token
    assert first.refresh_token and second.refresh_token
    assert first.refresh_token != second.refresh_token
    client = storage.client
    assert client is not None
    again = token(server.base, grant_type="refresh_token", refresh_token=first.refresh_token,
                  client_id=client.client_id, client_secret=client.client_secret or "")
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert mcp_status(server, first.access_token) == 401
    assert mcp_status(server, second.access_token) == 200


def test_a_revoked_token_gets_401(server: Server) -> None:
    async def go() -> Any:
        client, _, storage = oauth_client(server, approve_on_terminal(server, "dave"))
        async with client as c:
            await c.call_tool("status_read", {})
        return storage

    storage = bounded(go)
    issued, client = storage.tokens, storage.client
    assert issued is not None and client is not None and issued.refresh_token
    assert mcp_status(server, issued.access_token) == 200
    ended = httpx2.post(f"{server.base}/revoke", timeout=30, data={
        "token": issued.access_token, "client_id": client.client_id,
        "client_secret": client.client_secret or ""})
    assert ended.status_code == 200
    assert mcp_status(server, issued.access_token) == 401
    refused = token(server.base, grant_type="refresh_token", refresh_token=issued.refresh_token,
                    client_id=client.client_id, client_secret=client.client_secret or "")
    assert refused.status_code == 400  # the whole grant ended

    # A public client revokes with no secret; `atlas mcp token revoke` ends grants too.
    flow = code_by_hand(server, "erin")
    got = exchange(server, flow).json()
    assert mcp_status(server, got["access_token"]) == 200
    code, out, err = run_atlas("mcp", "token", "revoke", "erin", "--tokens", str(server.tokens),
                               "--json")
    assert code == 0 and json.loads(out) == {"identity": "erin", "revoked": 1}, err
    assert mcp_status(server, got["access_token"]) == 401


def test_a_replayed_code_is_refused_and_ends_what_it_granted(server: Server) -> None:
    flow = code_by_hand(server, "frank")
    first = exchange(server, flow)
    assert first.status_code == 200, first.text
    assert first.json()["token_type"] == "Bearer"
    replay = exchange(server, flow)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert mcp_status(server, first.json()["access_token"]) == 401  # maybe stolen: ended


def test_a_token_for_another_resource_is_refused(server: Server) -> None:
    registered = register(server.base).json()
    verifier, challenge = pkce()
    asked = authorize(server.base, registered["client_id"], challenge,
                      resource="https://elsewhere.example/mcp")
    assert asked.status_code == 302
    back = parse_qs(urlsplit(asked.headers["location"]).query)
    assert back["error"] == ["invalid_target"] and "code" not in back
    assert asked.headers["location"].startswith(CALLBACK)

    flow = code_by_hand(server, "gina")
    other = exchange(server, flow, resource="https://elsewhere.example/mcp")
    assert other.status_code == 400 and other.json()["error"] == "invalid_target"
    assert "access_token" not in other.json()
    assert exchange(server, flow).status_code == 200  # the code was not spent on it


def test_an_unregistered_redirect_uri_is_refused(server: Server) -> None:
    registered = register(server.base).json()
    _, challenge = pkce()
    for elsewhere in ("http://127.0.0.1:9/other", "https://evil.example/callback"):
        asked = authorize(server.base, registered["client_id"], challenge, redirect=elsewhere)
        assert asked.status_code == 400 and "location" not in asked.headers
        assert "not registered" in asked.json()["error_description"]
    for refused in ("https://evil.example/callback", "http://evil.example/cb",
                    "https://claude.ai.evil.example/api/mcp/auth_callback",
                    "https://chatgpt.com/connector/oauth/a/b"):
        answer = register(server.base, redirect=refused)
        assert answer.status_code == 400, refused
        assert answer.json()["error"] == "invalid_redirect_uri"
    for allowed in ("https://claude.ai/api/mcp/auth_callback",
                    "https://chatgpt.com/connector/oauth/abc_123",
                    "http://[::1]:33418/callback"):
        assert register(server.base, redirect=allowed).status_code == 201, allowed


def no_code(server: Server, consent: str) -> httpx2.Response:
    answer = httpx2.get(consent, timeout=30)
    assert "code=" not in answer.headers.get("location", "")
    return answer


def test_a_denied_request_never_yields_a_code(server: Server) -> None:
    flow = start_by_hand(server)
    code, _, err = run_atlas("mcp", "deny", request_id(flow.consent), "--tokens",
                             str(server.tokens))
    assert code == 0, err
    told = no_code(server, flow.consent)
    assert told.status_code == 302
    assert parse_qs(urlsplit(told.headers["location"]).query)["error"] == ["access_denied"]
    assert no_code(server, flow.consent).status_code == 410
    code, _, err = run_atlas("mcp", "approve", request_id(flow.consent), "--as", "hal",
                             "--tokens", str(server.tokens))
    assert code == 2 and "denied already" in err

    on_page = start_by_hand(server)
    sent = httpx2.post(on_page.consent, data={"action": "deny"}, timeout=30)
    assert sent.status_code == 303 and no_code(server, on_page.consent).status_code == 302

    guessed = start_by_hand(server)
    for _ in range(oauthstore.MAX_ATTEMPTS):
        wrong = httpx2.post(guessed.consent, timeout=30,
                            data={"action": "approve", "as": "hal", "code": "0000-0000"})
        assert "not the one-time code" in wrong.text or wrong.status_code == 410
    right = server.one_time_code(request_id(guessed.consent))
    late = httpx2.post(guessed.consent, data={"action": "approve", "as": "hal", "code": right},
                       timeout=30)
    assert "code=" not in late.headers.get("location", "")
    assert "error=access_denied" in no_code(server, guessed.consent).headers["location"]


def test_an_expired_request_never_yields_a_code(server: Server) -> None:
    flow = start_by_hand(server)
    rid = request_id(flow.consent)
    otc = server.one_time_code(rid)
    store = oauthstore.Store(oauthstore.state_path(server.tokens))
    with store.change() as state:  # eleven minutes pass
        waiting = state.requests[rid]
        state.requests[rid] = type(waiting)(**{**waiting.__dict__,
                                               "created_at": waiting.created_at - 660})
    code, out, _ = run_atlas("mcp", "pending", "--tokens", str(server.tokens), "--json")
    assert rid not in out
    code, _, err = run_atlas("mcp", "approve", rid, "--as", "ivan", "--tokens", str(server.tokens))
    assert code == 2 and "expired" in err
    posted = httpx2.post(flow.consent, data={"action": "approve", "as": "ivan", "code": otc},
                         timeout=30)
    assert posted.status_code == 410 and "code=" not in posted.headers.get("location", "")
    assert no_code(server, flow.consent).status_code == 410
    state = httpx2.get(flow.consent + "/state", timeout=30).json()
    assert state == {"state": "expired"}


def test_static_tokens_keep_working_beside_oauth(server: Server) -> None:
    secret = tokens.add(server.tokens, "judy")
    assert mcp_status(server, secret) == 200  # no restart: the file is read again
    assert mcp_status(server, secret + "x") == 401
    assert mcp_status(server, "atlas_oa_" + "x" * 43) == 401


def test_the_pending_list_is_the_documented_shape(server: Server, tmp_path: Path) -> None:
    flow = start_by_hand(server, name="listed client")
    code, out, err = run_atlas("mcp", "pending", "--tokens", str(server.tokens), "--json")
    assert code == 0, err
    listed = [r for r in json.loads(out)["requests"] if r["id"] == request_id(flow.consent)]
    assert len(listed) == 1
    assert set(listed[0]) == {"id", "client_name", "redirect_uri", "created_at"}
    assert listed[0]["client_name"] == "listed client" and listed[0]["redirect_uri"] == CALLBACK
    code, out, _ = run_atlas("mcp", "pending", "--tokens", str(server.tokens))
    assert code == 0 and request_id(flow.consent) in out


def test_a_hostile_client_name_stays_one_plain_line_on_the_terminal(server: Server) -> None:
    flow = start_by_hand(server, name="Claude\x1b]0;owned\x07\natlas mcp: approved\u202eevil")
    line = next(x for x in server.log_text().splitlines() if request_id(flow.consent) in x)
    assert "\x1b" not in line and "\u202e" not in line and "\\x1b" in line
    assert not any(x.startswith("atlas mcp: approved") for x in server.log_text().splitlines())
    code, out, _ = run_atlas("mcp", "pending", "--tokens", str(server.tokens))
    assert code == 0 and "\x1b" not in out and "\u202e" not in out
