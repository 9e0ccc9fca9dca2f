"""Unauthenticated clients of `atlas mcp --http --oauth` (registration, /authorize, the
consent page need no credential) cannot make the OAuth state unreadable, keep a person's
connection out, flood the owner's terminal, or brick the server: each test drives a real
server process over HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from support.oauth import (
    CALLBACK,
    Server,
    approve_on_terminal,
    authorize,
    bounded,
    code_by_hand,
    exchange,
    mcp_status,
    oauth_client,
    peak_rss,
    pkce,
    post_chunked,
    process,
    register,
)
from support.runner import run_atlas

from atlas_files.facts.errors import BadInput
from atlas_files.mcp import oauthstore, tokens
from atlas_files.mcp.notices import Notices
from atlas_files.storage.record import Record


def places(tmp_path: Path) -> tuple[Path, Path]:
    record = Record.init(tmp_path / "rec")
    (tmp_path / "private").mkdir()
    return record.root, tmp_path / "private" / "tokens.json"


def state_file(server: Server) -> Path:
    return oauthstore.state_path(server.tokens)


def pending_ok(server: Server) -> list[dict[str, Any]]:
    code, out, err = run_atlas("mcp", "pending", "--tokens", str(server.tokens), "--json")
    assert code == 0, err
    return list(json.loads(out)["requests"])


def hostile_metadata(size: int) -> dict[str, Any]:
    """A registration with ``size`` bytes of metadata this server has no use for."""
    part = size // 4
    return {"client_name": "filler", "redirect_uris": [CALLBACK],
            "token_endpoint_auth_method": "none", "scope": "atlas",
            "contacts": ["a" * 1000] * (part // 1000), "jwks": {"keys": ["k" * part]},
            "software_id": "s" * part, "software_version": "v" * part}


def connects(server: Server, identity: str) -> None:
    """A well-behaved client (the SDK's) registers, is approved at the terminal, and
    writes as ``identity``."""
    async def go() -> None:
        client, _, _ = oauth_client(server, approve_on_terminal(server, identity))
        async with client:
            put = await client.call_tool("put", {"name": "hello", "body": "hi\n", "expect": 0})
            assert not put.is_error, put

    bounded(go)


def test_huge_registrations_never_make_the_state_unreadable(tmp_path: Path) -> None:
    root, tokens_file = places(tmp_path)
    with process(root, tokens_file, tmp_path / "server.log") as server:
        granted = exchange(server, code_by_hand(server, "alice")).json()["access_token"]
        for _ in range(2):  # two 4 MB registrations made the file unreadable
            sent = httpx2.post(f"{server.base}/register", json=hostile_metadata(3_900_000),
                               timeout=60)
            assert sent.status_code in (400, 413), sent.text[:300]
        # Under the body limit, what the server does not use is dropped, and its answer
        # shows what was kept.
        kept = httpx2.post(f"{server.base}/register", json=hostile_metadata(40_000), timeout=30)
        assert kept.status_code == 201, kept.text[:300]
        assert not {"contacts", "jwks", "software_id", "software_version"} & set(kept.json())
        assert kept.json()["client_name"] == "filler"
        assert mcp_status(server, granted) == 200
        assert state_file(server).stat().st_size < 64 << 10
        pending_ok(server)
    # And the server starts again on that state.
    with process(root, tokens_file, tmp_path / "again.log") as again:
        pending_ok(again)
        connects(again, "bob")


def test_a_flood_of_registrations_leaves_room_for_a_new_client(tmp_path: Path) -> None:
    root, tokens_file = places(tmp_path)
    with process(root, tokens_file, tmp_path / "server.log") as server:
        granted = exchange(server, code_by_hand(server, "alice")).json()["access_token"]
        with httpx2.Client(timeout=30) as http:
            for n in range(oauthstore.MAX_CLIENTS + 10):
                sent = http.post(f"{server.base}/register", json={
                    "client_name": f"flood {n}", "redirect_uris": [CALLBACK],
                    "token_endpoint_auth_method": "none"})
                assert sent.status_code == 201, (n, sent.text)
        stored = json.loads(state_file(server).read_text())["clients"]
        assert len(stored) <= oauthstore.MAX_CLIENTS
        connects(server, "bob")  # registers once more, and gets through
        assert mcp_status(server, granted) == 200  # a client with a grant is never forgotten
        assert "forgotten to make room" in server.log_text()


def test_a_flood_of_authorize_calls_neither_keeps_a_person_out_nor_floods_the_terminal(
        tmp_path: Path) -> None:
    root, tokens_file = places(tmp_path)
    with process(root, tokens_file, tmp_path / "server.log") as server:
        floods = [register(server.base, name=f"flood {n}").json()["client_id"]
                  for n in range(8)]
        for _ in range(4):
            for client_id in floods:
                assert authorize(server.base, client_id, pkce()[1]).status_code == 302
        connects(server, "bob")  # 32 unauthenticated requests: a person still gets in
        waiting = [r for r in pending_ok(server) if r["client_name"].startswith("flood")]
        assert len(waiting) < oauthstore.MAX_PENDING
        per_client: dict[str, int] = {}
        for row in waiting:
            per_client[row["client_name"]] = per_client.get(row["client_name"], 0) + 1
        assert max(per_client.values()) <= oauthstore.MAX_PENDING_PER_CLIENT
        lines = [x for x in server.log_text().splitlines() if "connection request " in x]
        assert len(lines) <= 5, lines  # not one line per request
        # The page of a request pushed out says so.
        dropped = [rid for rid in _all_requests(server) if rid not in {r["id"] for r in waiting}]
        page = httpx2.get(f"{server.base}/consent/{dropped[0]}", timeout=30)
        assert page.status_code == 410 and "dropped" in page.text


def _all_requests(server: Server) -> list[str]:
    return [r["id"] for r in json.loads(state_file(server).read_text())["requests"]]


def test_huge_or_malformed_authorize_parameters_are_refused_unstored(tmp_path: Path) -> None:
    root, tokens_file = places(tmp_path)
    with process(root, tokens_file, tmp_path / "server.log") as server:
        granted = exchange(server, code_by_hand(server, "alice")).json()["access_token"]
        client_id = register(server.base).json()["client_id"]
        _, challenge = pkce()
        form = {"response_type": "code", "client_id": client_id, "redirect_uri": CALLBACK,
                "code_challenge": challenge, "code_challenge_method": "S256",
                "resource": server.url, "scope": "atlas"}
        with httpx2.Client(timeout=60) as http:
            for _ in range(2):  # a 3 MB `state`, posted: stored whole, it broke the file
                sent = http.post(f"{server.base}/authorize",
                                 data={**form, "state": "s" * 3_000_000})
                assert sent.status_code == 413, sent.text[:200]
            sent = http.post(f"{server.base}/authorize", data={**form, "state": "s" * 5000})
            assert sent.status_code == 302
            assert "error=invalid_request" in sent.headers["location"]
            sent = http.post(f"{server.base}/authorize",
                             data={**form, "code_challenge": "x" * 5000, "state": "s"})
            assert "error=invalid_request" in sent.headers["location"]
        assert pending_ok(server) == []
        assert mcp_status(server, granted) == 200
        assert state_file(server).stat().st_size < 64 << 10


def test_a_damaged_state_file_is_said_once_and_does_not_stop_the_server(
        tmp_path: Path) -> None:
    root, tokens_file = places(tmp_path)
    static = tokens.add(tokens_file, "carol")
    state = oauthstore.state_path(tokens_file)
    state.write_text('{"kind": "atlas-mcp-oauth", "clients": ')  # cut short
    state.chmod(0o600)
    with process(root, tokens_file, tmp_path / "server.log") as server:
        assert mcp_status(server, static) == 200  # static tokens keep working
        for _ in range(10):
            assert mcp_status(server, "atlas_oa_" + "x" * 40) == 401
        sent = register(server.base)
        assert sent.status_code == 400 and "cannot be read now" in sent.text
        assert str(tmp_path) not in sent.text  # the owner's paths are not a stranger's
        said = [x for x in server.log_text().splitlines() if "is refused" in x]
        assert len(said) == 1, said
        assert f"mv {state} {state}.damaged" in said[0]
        code, _, err = run_atlas("mcp", "pending", "--tokens", str(tokens_file))
        assert code == 2 and "move it aside" in err
        state.rename(state.with_name(state.name + ".damaged"))
        connects(server, "bob")  # no restart needed


def test_a_change_past_the_file_limit_is_refused_and_the_file_stays_readable(
        tmp_path: Path) -> None:
    _, tokens_file = places(tmp_path)
    tokens.ensure(tokens_file)
    store = oauthstore.Store(oauthstore.state_path(tokens_file))
    with store.change() as state:
        state.clients["kept"] = {"client_id": "kept", "client_name": "kept"}
    before = store.path.read_bytes()
    with pytest.raises(BadInput, match="past the"), store.change() as state:
        state.clients["huge"] = {"client_id": "huge", "pad": "x" * oauthstore.MAX_FILE}
    assert store.path.read_bytes() == before
    assert set(oauthstore.Store(store.path).read().clients) == {"kept"}


def test_the_consent_page_refuses_a_huge_body_unread(tmp_path: Path) -> None:
    root, tokens_file = places(tmp_path)
    with process(root, tokens_file, tmp_path / "server.log") as server:
        before = peak_rss(server.pid)
        status, took = post_chunked(server, "/consent/0123456789ab", 256 << 20, {
            "Content-Type": "application/x-www-form-urlencoded"})
        assert status == 413 and took < 20
        assert peak_rss(server.pid) - before < 48 << 20
        pending_ok(server)


def test_lines_about_strangers_are_bounded_and_summed_up() -> None:
    said: list[str] = []
    notices = Notices(said.append, per_window=5, window_s=0.5)
    for n in range(12):
        notices.say("connection requests", f"request {n}", "see `atlas mcp pending`")
    notices.say("connections", "a grant")
    assert said == [f"request {n}" for n in range(5)] + ["a grant"]
    deadline = time.monotonic() + 10
    while len(said) < 7 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert said[6] == ("atlas mcp: 7 more connection requests in the last 0.5 s, not shown; "
                       "see `atlas mcp pending`")
    notices.say("connection requests", "a new window")
    assert said[-1] == "a new window"
    notices.lasting("state", "damaged")
    notices.lasting("state", "damaged")
    notices.lasting("state", None)
    notices.lasting("state", "damaged")
    assert said.count("damaged") == 2
    notices.close()
