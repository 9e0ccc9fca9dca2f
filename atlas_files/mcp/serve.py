"""Running the server: over stdio (one client, one identity) or Streamable HTTP at /mcp
(many clients, each identified by its bearer token)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path

import anyio
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from atlas_files.errors import BadInput
from atlas_files.mcp.server import Served, build
from atlas_files.mcp.tokens import TokenVerifier, check_place

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


def http(served: Served, address: str, tokens: Path, say: Callable[[str], None]) -> None:
    """Serve Streamable HTTP until interrupted. Every request needs a bearer token from
    ``tokens``; without one, or with a wrong or revoked one, the answer is 401."""
    host, port = parse_address(address)
    check_place(tokens, Path(served.root))
    verifier = TokenVerifier(tokens)
    if not verifier.grants():
        raise BadInput(f"{tokens} holds no token: nobody could connect",
                       hint=f"add one with `atlas mcp token add NAME --tokens {tokens}`")
    sock = _bind(host, port)
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    server = build(served, token_verifier=verifier, issuer_url=f"http://{shown}:{port}")
    # No Host/Origin allow-list (the SDK sets one for a loopback bind): every request needs
    # a bearer token, which a page rebinding its name to this address does not have, and
    # a reverse proxy in front passes its own public name as the Host.
    app = server.streamable_http_app(
        host=host, streamable_http_path=PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=5)
    mode = "read-only, " if served.read_only else ""
    say(f"atlas mcp: serving http://{shown}:{port}{PATH} ({mode}identities from {tokens})")
    if not is_loopback(host):
        say("atlas mcp: not on loopback: tokens cross the network; put TLS in front "
            "(a reverse proxy) before anyone connects from another machine")
    uvicorn.Server(config).run(sockets=[sock])
