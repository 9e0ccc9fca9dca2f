"""Running the server: over stdio (one client, one identity) or Streamable HTTP at /mcp
(many clients, each identified by its bearer token, static or issued through OAuth)."""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route

from atlas_files.errors import BadInput
from atlas_files.mcp.cimd import ClientDocuments
from atlas_files.mcp.consent import Consent
from atlas_files.mcp.oauth import Provider, RedirectPolicy, check_setup, public_origin
from atlas_files.mcp.oauth import routes as oauth_routes
from atlas_files.mcp.oauthstore import Store, state_path
from atlas_files.mcp.server import Served, build
from atlas_files.mcp.tokens import TokenVerifier, check_place, ensure

PATH = "/mcp"


def stdio(served: Served) -> None:
    """Serve until the client closes stdin."""
    anyio.run(build(served).run_stdio_async)


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6); port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise BadInput(f"bad address {text[:80]!r} for --http",
                       hint="write HOST:PORT, e.g. 127.0.0.1:8765 or [::1]:8765")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        # Listening before the server says where it is: a client that reads the address
        # and connects at once is queued, not refused, while the server starts.
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise BadInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                       hint="choose another port (0 picks a free one) or address") from None
    return sock


@dataclass(frozen=True)
class OAuth:
    """`--oauth`: the server is its own authorization server. ``public_url`` is the address
    clients see (issuer and, with /mcp, resource); ``redirect_uris`` are the owner's
    additions to where codes may be sent. ``documents`` and ``clock`` are for tests."""

    public_url: str | None = None
    redirect_uris: tuple[str, ...] = ()
    documents: ClientDocuments | None = None
    clock: Callable[[], float] = time.time


def app(served: Served, tokens: Path, host: str, port: int, say: Callable[[str], None],
        oauth: OAuth | None = None) -> tuple[Starlette, str]:
    """The ASGI app of ``atlas mcp --http``, and the URL it serves /mcp at."""
    check_place(tokens, Path(served.root))
    shown = f"[{host}]" if ":" in host else host
    local = f"http://{shown}:{port}"
    if oauth is None:
        verifier = TokenVerifier(tokens)
        if not verifier.grants():
            raise BadInput(f"{tokens} holds no token: nobody could connect",
                           hint=f"add one with `atlas mcp token add NAME --tokens {tokens}`")
        server = build(served, token_verifier=verifier, issuer_url=local)
        routes: list[Route] = []
        url = local + PATH
    else:
        check_setup(oauth.public_url, host)
        policy = RedirectPolicy.adding(oauth.redirect_uris)
        issuer = public_origin(oauth.public_url) if oauth.public_url else local
        resource = issuer + PATH
        ensure(tokens, Path(served.root))
        store = Store(state_path(tokens), oauth.clock)
        store.read()  # refuse a damaged state file, or one others can read, at start
        provider = Provider(store, issuer, resource, policy,
                            oauth.documents or ClientDocuments(), say, str(tokens))
        verifier = TokenVerifier(tokens, resource=resource, issued=provider)
        server = build(served, token_verifier=verifier, issuer_url=issuer,
                       resource_url=resource)
        routes = oauth_routes(provider, Consent(provider, served.read_only).routes())
        url = resource
    # No Host/Origin allow-list (the SDK sets one for a loopback bind): every request to
    # /mcp needs a bearer token, which a page rebinding its name to this address does not
    # have, and a reverse proxy or tunnel in front passes its own public name as the Host.
    starlette = server.streamable_http_app(
        host=host, streamable_http_path=PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    # Ahead of the SDK's routes: the first match wins, and these replace its metadata.
    starlette.router.routes[0:0] = routes
    return starlette, url


def http(served: Served, address: str, tokens: Path, say: Callable[[str], None],
         oauth: OAuth | None = None) -> None:
    """Serve Streamable HTTP until interrupted. Every request needs a bearer token from
    ``tokens`` (or, with ``oauth``, one the server issued after a person approved the
    connection); without one, or with a wrong or revoked one, the answer is 401."""
    host, port = parse_address(address)
    if oauth is not None:
        check_setup(oauth.public_url, host)
    sock = _bind(host, port)
    try:
        starlette, url = app(served, tokens, host, sock.getsockname()[1], say, oauth)
    except BaseException:
        sock.close()
        raise
    config = uvicorn.Config(starlette, log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=5)
    mode = "read-only, " if served.read_only else ""
    shown = f"[{host}]" if ":" in host else host
    say(f"atlas mcp: serving http://{shown}:{sock.getsockname()[1]}{PATH} ({mode}"
        f"identities from {tokens}{', and OAuth' if oauth else ''})")
    if oauth is not None:
        say(f"atlas mcp: OAuth: clients connect to {url}; each connection waits for a "
            f"person (`atlas mcp pending --tokens {tokens}`)")
    if not is_loopback(host):
        say("atlas mcp: not on loopback: tokens cross the network; put TLS in front "
            "(a reverse proxy) before anyone connects from another machine")
    uvicorn.Server(config).run(sockets=[sock])
