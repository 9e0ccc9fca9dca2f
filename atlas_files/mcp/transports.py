"""Running the server: over stdio (one client, one identity) or Streamable HTTP at /mcp
(many clients, each identified by its bearer token, static or issued through OAuth)."""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import uvicorn
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route
from starlette.types import ASGIApp

from atlas_files.facts.errors import BadInput
from atlas_files.mcp import limits
from atlas_files.mcp.app import Served, build
from atlas_files.mcp.cimd import ClientDocuments
from atlas_files.mcp.connections import Guarded
from atlas_files.mcp.consent import Consent
from atlas_files.mcp.notices import Bounded, Notices
from atlas_files.mcp.oauth import Provider, RedirectPolicy, check_setup, public_origin, state_line
from atlas_files.mcp.oauth import routes as oauth_routes
from atlas_files.mcp.oauthstore import Store, Unreadable, state_path
from atlas_files.mcp.tokens import TokenVerifier, check_place, ensure

PATH = "/mcp"
UNBOUNDED = 1 << 62  # the SDK's own body limit: BodyLimit, in front, has the record's


def stdio(served: Served) -> None:
    """Serve until the client closes stdin. A line longer than the record's limits allow
    is skipped unread and answered with an error (:mod:`atlas_files.mcp.limits`)."""
    server = build(served)
    body_limit, limit = limits.record_limit(served.root)
    wire_in, wire_out = limits.claim_stdio()
    out = limits.Out(wire_out)

    async def refuse(request_id: object) -> None:
        await out.write(limits.error_message(limits.too_large(limit, body_limit),
                                             request_id).decode() + "\n")

    async def run() -> None:
        lines = limits.Lines(wire_in, limit, refuse)
        async with stdio_server(stdin=lines, stdout=out) as (read, write):  # type: ignore[arg-type]
            # The SDK's run_stdio_async, with these streams: it takes none of its own.
            low = server._lowlevel_server
            await low.run(read, write, low.create_initialization_options())

    anyio.run(run)


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6); port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise BadInput(f"bad address {text[:80]!r} for --http",
                       hint="write HOST:PORT, e.g. 127.0.0.1:8765 or [::1]:8765")
    return host, int(port)


def bound_logs(notices: Notices) -> None:
    """Every log line of the server (uvicorn's, the SDK's, atlas's own) bounded as the
    notices are: a malformed request must not print a line each time."""
    bounded = Bounded(notices)
    # The root's too: the SDK's server installs one of its own (logging.basicConfig), and
    # asyncio's lines reach it (an accept failing for want of descriptors is logged up to
    # the listen backlog's length each time the loop looks).
    for name in ("uvicorn", "uvicorn.error", None):
        for handler in logging.getLogger(name).handlers:
            handler.addFilter(bounded)
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.addFilter(bounded)
    logging.getLogger().addHandler(handler)


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


def app(served: Served, tokens: Path, host: str, port: int, notices: Notices,
        oauth: OAuth | None = None) -> tuple[ASGIApp, str]:
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
        try:  # refuse one others can read; a damaged one is said, and OAuth refused
            store.read()
        except Unreadable as exc:
            notices.lasting("oauth-state", state_line(exc))
        provider = Provider(store, issuer, resource, policy,
                            oauth.documents or ClientDocuments(), notices, str(tokens))
        verifier = TokenVerifier(tokens, resource=resource, issued=provider)
        server = build(served, token_verifier=verifier, issuer_url=issuer,
                       resource_url=resource)
        routes = oauth_routes(provider, Consent(provider, served.read_only).routes())
        url = resource
    # No Host/Origin allow-list (the SDK sets one for a loopback bind): every request to
    # /mcp needs a bearer token, which a page rebinding its name to this address does not
    # have, and a reverse proxy or tunnel in front passes its own public name as the Host.
    starlette = server.streamable_http_app(
        host=host, streamable_http_path=PATH, max_request_body_size=UNBOUNDED,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    # Ahead of the SDK's routes: the first match wins, and these replace its metadata.
    starlette.router.routes[0:0] = routes
    # The record's limits, not the SDK's fixed 4 MiB, decide how much of a call is read.
    return limits.BodyLimit(starlette, served.root, PATH), url


def http(served: Served, address: str, tokens: Path, say: Callable[[str], None],
         oauth: OAuth | None = None) -> None:
    """Serve Streamable HTTP until interrupted. Every request needs a bearer token from
    ``tokens`` (or, with ``oauth``, one the server issued after a person approved the
    connection); without one, or with a wrong or revoked one, the answer is 401."""
    host, port = parse_address(address)
    if oauth is not None:
        check_setup(oauth.public_url, host)
    sock = _bind(host, port)
    notices = Notices(say)
    try:
        asgi, url = app(served, tokens, host, sock.getsockname()[1], notices, oauth)
    except BaseException:
        sock.close()
        raise
    config = uvicorn.Config(asgi, log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=5, http=Guarded.reporting(notices))
    bound_logs(notices)
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
