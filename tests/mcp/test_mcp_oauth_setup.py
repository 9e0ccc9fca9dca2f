"""What a client discovers from `atlas mcp --oauth` (protected resource and authorization
server metadata, the 401 that points to them), `--public-url` made issuer and resource
exactly, and the setups the server refuses to start with."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from support.oauth import Server, authorize, pkce, process, register
from support.runner import run_atlas

from atlas_files.facts.errors import BadInput
from atlas_files.mcp import tokens
from atlas_files.mcp.oauth import RedirectPolicy, public_origin
from atlas_files.storage.record import Record


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("setup")
    record = Record.init(root / "rec")
    (root / "private").mkdir()
    yield record.root, root / "private" / "tokens.json"


@pytest.fixture(scope="module")
def server(setup: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("log") / "server.log"
    with process(*setup, log) as s:
        yield s


def challenge(base: str) -> httpx2.Response:
    return httpx2.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                       headers={"Accept": "application/json, text/event-stream"}, timeout=30)


def test_the_first_401_points_to_the_protected_resource_metadata(server: Server) -> None:
    first = challenge(server.base)
    assert first.status_code == 401
    pointed = re.search(r'resource_metadata="([^"]+)"', first.headers["www-authenticate"])
    assert pointed and pointed.group(1) == \
        f"{server.base}/.well-known/oauth-protected-resource/mcp"
    for where in (pointed.group(1), f"{server.base}/.well-known/oauth-protected-resource"):
        prm = httpx2.get(where, timeout=30).json()
        assert prm["resource"] == server.url
        assert prm["authorization_servers"] == [server.base]


def test_the_authorization_server_metadata_says_what_clients_need(server: Server) -> None:
    for alias in ("oauth-authorization-server", "openid-configuration"):
        meta = httpx2.get(f"{server.base}/.well-known/{alias}", timeout=30).json()
        assert meta["issuer"] == server.base  # exactly: no trailing slash
        assert meta["code_challenge_methods_supported"] == ["S256"]
        assert "none" in meta["token_endpoint_auth_methods_supported"]
        assert meta["client_id_metadata_document_supported"] is True
        assert meta["authorization_response_iss_parameter_supported"] is True
        assert meta["grant_types_supported"] == ["authorization_code", "refresh_token"]
        for endpoint in ("authorization", "token", "registration", "revocation"):
            assert meta[f"{endpoint}_endpoint"].startswith(server.base + "/")


def test_public_url_is_the_issuer_and_resource_exactly(
        setup: tuple[Path, Path], tmp_path: Path) -> None:
    with process(*setup, tmp_path / "log", "--public-url", "https://Atlas.Example.org:443/",
                 "--redirect-uri", "https://tools.example.org/oauth/done") as s:
        public = "https://atlas.example.org"
        meta = httpx2.get(f"{s.base}/.well-known/oauth-authorization-server", timeout=30).json()
        assert meta["issuer"] == public and meta["authorization_endpoint"] == \
            f"{public}/authorize"
        prm = httpx2.get(f"{s.base}/.well-known/oauth-protected-resource/mcp", timeout=30)
        assert prm.json()["resource"] == f"{public}/mcp"
        assert prm.json()["authorization_servers"] == [public]
        assert f'resource_metadata="{public}/.well-known/oauth-protected-resource/mcp"' in \
            challenge(s.base).headers["www-authenticate"]
        assert register(s.base, redirect="https://tools.example.org/oauth/done"
                        ).status_code == 201  # the owner added it
        assert register(s.base, redirect="https://tools.example.org/other").status_code == 400
        client = register(s.base).json()
        sent = authorize(s.base, client["client_id"], pkce()[1], resource=f"{public}/mcp")
        assert sent.status_code == 302
        assert sent.headers["location"].startswith(f"{public}/consent/")
        assert f"clients connect to {public}/mcp;" in s.log_text()
        # Its host is allowed: a tunnel forwards under the public name.
        secret = tokens.add(setup[1], "proxy-user")
        answer = httpx2.post(f"{s.base}/mcp", timeout=30, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}},
            headers={"Authorization": f"Bearer {secret}", "Host": "atlas.example.org",
                     "Accept": "application/json, text/event-stream"})
        assert answer.status_code == 200


def test_public_url_forms() -> None:
    assert public_origin("https://atlas.example.org") == "https://atlas.example.org"
    assert public_origin("https://atlas.example.org/") == "https://atlas.example.org"
    assert public_origin("https://a.example:8443") == "https://a.example:8443"
    assert public_origin("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"
    for bad in ("atlas.example.org", "http://atlas.example.org", "https://a.example/mcp",
                "https://a.example/?x=1", "https://user@a.example", "ftp://a.example",
                "https://a.example:99999"):
        with pytest.raises(BadInput):
            public_origin(bad)


def test_where_codes_may_be_sent() -> None:
    policy = RedirectPolicy(("https://tools.example.org/oauth/done",))
    for allowed in ("https://claude.ai/api/mcp/auth_callback",
                    "https://claude.com/api/mcp/auth_callback",
                    "https://chatgpt.com/connector_platform_oauth_redirect",
                    "https://chatgpt.com/connector/oauth/g-abc_123",
                    "http://127.0.0.1:52111/callback", "http://localhost:3000/cb",
                    "http://[::1]:8000/", "https://tools.example.org/oauth/done"):
        assert policy.allows(allowed), allowed
    for refused in ("https://claude.ai/api/mcp/auth_callback/../x",
                    "https://claude.ai/api/mcp/auth_callback?next=https://evil.example",
                    "https://chatgpt.com/connector/oauth/", "https://chatgpt.com/connector/oauth/a/b",
                    "https://chatgpt.com/connector/oauth/a?x=1",
                    "https://127.0.0.1:52111/callback.evil.example",
                    "http://127.0.0.1.evil.example/cb", "http://user@127.0.0.1:9/cb",
                    "https://tools.example.org/oauth/done2", "javascript:alert(1)",
                    "https://evil.example/callback"):
        assert not policy.allows(refused), refused
    written = RedirectPolicy.adding(("https://Tools.example.org/oauth/done", "cursor://x/cb"))
    assert written.allows("https://tools.example.org/oauth/done")
    assert written.allows("cursor://x/cb")
    for bad in ("not a uri", "https://x.example/cb#frag"):
        with pytest.raises(BadInput):
            RedirectPolicy.adding((bad,))


@pytest.mark.parametrize("problem", [
    "off loopback without a public URL", "plain http public URL", "public URL with a path",
    "public URL without --oauth", "oauth over stdio", "state file readable by others"])
def test_oauth_refuses_to_start_unsafely(tmp_path: Path, problem: str) -> None:
    rec = Record.init(tmp_path / "rec")
    tokens_file = tmp_path / "tokens.json"
    args = ["--record", str(rec.root), "--as", "alice", "mcp", "--http", "127.0.0.1:0",
            "--tokens", str(tokens_file), "--oauth"]
    if problem == "off loopback without a public URL":
        args[5] = "0.0.0.0:0"
    elif problem == "plain http public URL":
        args += ["--public-url", "http://atlas.example.org"]
    elif problem == "public URL with a path":
        args += ["--public-url", "https://atlas.example.org/atlas"]
    elif problem == "public URL without --oauth":
        args[-1] = "--public-url=https://atlas.example.org"
    elif problem == "oauth over stdio":
        args = [*args[:4], "--oauth"]
    else:
        tokens.ensure(tokens_file)
        state = tmp_path / "tokens.oauth.json"
        state.write_text('{"kind": "atlas-mcp-oauth", "clients": {}, "requests": [], '
                         '"codes": [], "grants": []}')
        state.chmod(0o644)
    result = run_atlas(*args, timeout=60)
    assert result.returncode == 2, (problem, result.stderr)
    assert result.stderr.startswith("atlas: error: ") and "Traceback" not in result.stderr
