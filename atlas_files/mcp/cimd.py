"""Client ID Metadata Documents: a client whose id is an https URL describes itself in the
JSON document at that URL, which the server fetches instead of a registration.

The fetch is the server reaching out on a stranger's word, so it is bounded every way:
https only, on port 443 unless the URL says otherwise, no redirect followed, no address
that is not public (a URL naming 127.0.0.1 or a host on the owner's network is refused:
the server must not be a probe into it), at most ``max_bytes`` of body and
``timeout_s`` seconds for the whole exchange. It speaks one HTTP/1.0 GET on a TLS
socket it opens to the address it checked, so a name resolved twice cannot point
elsewhere the second time.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
from anyio.abc import ByteStream
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

MAX_BYTES = 5 * 1024
MAX_HEAD = 8 * 1024
TIMEOUT_S = 5.0
CACHE_S = 300.0
REFUSED_S = 60.0
CACHE_ENTRIES = 64
FETCHES = 4

log = logging.getLogger("atlas.mcp")


class FetchRefused(Exception):
    pass


def is_document_url(client_id: str) -> bool:
    parts = urlsplit(client_id)
    return parts.scheme == "https" and parts.path not in ("", "/")


@dataclass(frozen=True)
class Fetcher:
    """The bounded GET. ``ssl_context`` and ``allow_private`` are there for tests, which
    serve documents from 127.0.0.1 under a certificate of their own."""

    ssl_context: ssl.SSLContext = field(default_factory=ssl.create_default_context)
    allow_private: bool = False
    timeout_s: float = TIMEOUT_S
    max_bytes: int = MAX_BYTES

    async def fetch(self, url: str) -> Any:
        """The JSON document at ``url``; FetchRefused saying why not."""
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname or parts.username or parts.fragment:
            raise FetchRefused("a client id URL must be https, with no user or fragment")
        host, port = parts.hostname, parts.port or 443
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            with anyio.fail_after(self.timeout_s):
                address = await self._address(host, port)
                stream = await anyio.connect_tcp(address, port, ssl_context=self.ssl_context,
                                                 tls_hostname=host,
                                                 tls_standard_compatible=False)
                async with stream:
                    head = (f"GET {target} HTTP/1.0\r\nHost: {parts.netloc}\r\n"
                            "Accept: application/json\r\nUser-Agent: atlas-mcp\r\n\r\n")
                    await stream.send(head.encode("ascii"))
                    raw = await self._read(stream)
        except TimeoutError:
            raise FetchRefused(f"no whole answer within {self.timeout_s:g}s") from None
        except (OSError, ssl.SSLError, anyio.BrokenResourceError, UnicodeError) as exc:
            raise FetchRefused(f"cannot fetch it: {exc}") from None
        return self._parse(raw)

    async def _address(self, host: str, port: int) -> str:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = [str(info[4][0]) for info in infos]
        if not addresses:
            raise FetchRefused(f"{host} has no address")
        for address in addresses:
            ip = ipaddress.ip_address(address.split("%")[0])
            if not ip.is_global and not self.allow_private:
                raise FetchRefused(f"{host} is at {address}, not a public address")
        return addresses[0]

    async def _read(self, stream: ByteStream) -> bytes:
        raw = b""
        limit = MAX_HEAD + self.max_bytes
        while len(raw) <= limit:
            try:
                raw += await stream.receive(65536)
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return raw
        raise FetchRefused(f"the document is over {self.max_bytes} bytes")

    def _parse(self, raw: bytes) -> Any:
        head, sep, body = raw.partition(b"\r\n\r\n")
        if not sep or len(head) > MAX_HEAD:
            raise FetchRefused("the answer is not HTTP")
        lines = head.decode("latin-1").split("\r\n")
        status = lines[0].split(" ", 2)
        if len(status) < 2 or not status[0].startswith("HTTP/1.") or status[1] != "200":
            raise FetchRefused(f"the answer is {lines[0][:60]!r}, not 200 (redirects are "
                               "not followed)")
        if len(body) > self.max_bytes:
            raise FetchRefused(f"the document is over {self.max_bytes} bytes")
        try:
            return json.loads(body)
        except ValueError:
            raise FetchRefused("the document is not JSON") from None


def client_info(url: str, doc: Any) -> OAuthClientInformationFull:
    """The client a document describes, if it describes itself honestly: its own URL as
    client_id, no secret (such a client is public; PKCE protects its codes)."""
    if not isinstance(doc, dict):
        raise FetchRefused("the document is not a JSON object")
    if doc.get("client_id") != url:
        raise FetchRefused("the document's client_id is not its own URL")
    if "client_secret" in doc or doc.get("token_endpoint_auth_method", "none") != "none":
        raise FetchRefused("a client id metadata document names a public client (auth "
                           "method none, no secret)")
    if not isinstance(doc.get("redirect_uris"), list) or not doc["redirect_uris"]:
        raise FetchRefused("the document lists no redirect_uris")
    fields = set(OAuthClientInformationFull.model_fields) - {"client_secret", "issuer"}
    kept = {k: v for k, v in doc.items() if k in fields}
    kept.setdefault("scope", "atlas")
    try:
        return OAuthClientInformationFull.model_validate(
            {**kept, "client_id": url, "token_endpoint_auth_method": "none"})
    except ValidationError as exc:
        raise FetchRefused(f"the document is not client metadata: {exc.error_count()} "
                           "fields are wrong") from None


class ClientDocuments:
    """Clients by document URL, each fetched at most once per ``CACHE_S`` (a refusal is
    remembered for ``REFUSED_S``), at most ``FETCHES`` at once: anyone may name a URL at
    /authorize, and each would otherwise be a connection out and seconds of waiting."""

    def __init__(self, fetcher: Fetcher | None = None) -> None:
        self.fetcher = fetcher or Fetcher()
        self._cache: dict[str, tuple[float, OAuthClientInformationFull | None]] = {}
        self._fetching = 0

    async def client(self, url: str) -> OAuthClientInformationFull | None:
        now = time.monotonic()
        cached = self._cache.get(url)
        if cached is not None and cached[0] > now:
            return cached[1]
        if self._fetching >= FETCHES:
            log.warning("atlas mcp: client %s refused: %d client documents are being "
                        "fetched already", url[:200], self._fetching)
            return None
        self._fetching += 1
        try:
            info: OAuthClientInformationFull | None = client_info(
                url, await self.fetcher.fetch(url))
            keep = CACHE_S
        except FetchRefused as exc:
            log.warning("atlas mcp: client %s refused: %s", url[:200], exc)
            info, keep = None, REFUSED_S
        finally:
            self._fetching -= 1
        if len(self._cache) >= CACHE_ENTRIES:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            if len(self._cache) >= CACHE_ENTRIES:
                self._cache.clear()
        self._cache[url] = (now + keep, info)
        return info
