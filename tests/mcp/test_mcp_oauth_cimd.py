"""Clients whose id is the URL of their metadata document (CIMD): the server fetches it
over HTTPS with limits on size, time, redirects and addresses. The tests cannot reach
the internet, so a real HTTPS server on 127.0.0.1 serves the documents under a
certificate made here (with the `openssl` command), which the fetcher under test is told
to trust; the same fetcher with the default trust store refuses that certificate, and
with its default address rule refuses 127.0.0.1."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.mcp_client import text
from support.oauth import approve_on_terminal, bounded, in_process, oauth_client
from support.runner import run_atlas
from support.tools import needs

from atlas_files.mcp import oauthstore, transports
from atlas_files.mcp.cimd import ClientDocuments, Fetcher, FetchRefused, client_info
from atlas_files.storage.record import Record

pytestmark = needs("openssl", "the openssl command makes the test certificate")

GOOD = {"client_name": "Doc Client", "redirect_uris": ["http://127.0.0.1:9/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"], "token_endpoint_auth_method": "none"}


@dataclass
class Docs:
    base: str
    trusting: ssl.SSLContext


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server: ThreadingHTTPServer  # the one that serves it, in docs() below

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, body: bytes, status: int = 200, **headers: str) -> None:
        self.send_response(status)
        for key, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        me = f"https://127.0.0.1:{self.server.server_address[1]}{self.path}"
        if self.path == "/client.json":
            self._send(json.dumps({**GOOD, "client_id": me}).encode())
        elif self.path == "/big.json":
            self._send(json.dumps({**GOOD, "client_id": me, "pad": "x" * 6000}).encode())
        elif self.path == "/endless.json":
            self.send_response(200)
            self.end_headers()
            for _ in range(10_000):  # 10 MB if nobody stops reading
                self.wfile.write(b"x" * 1000)
        elif self.path == "/slow.json":
            self.send_response(200)
            self.end_headers()
            for _ in range(40):  # a byte every quarter second: ten seconds in all
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.25)
        elif self.path == "/moved.json":
            self._send(b"", 302, Location="/client.json")
        elif self.path == "/liar.json":
            self._send(json.dumps({**GOOD, "client_id": "https://claude.ai/x"}).encode())
        elif self.path == "/secret.json":
            self._send(json.dumps({**GOOD, "client_id": me, "client_secret": "s"}).encode())
        else:
            self._send(b"<html>not json</html>")


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Docs]:
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(cert, key)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.socket = serving.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    trusting = ssl.create_default_context(cafile=str(cert))
    try:
        yield Docs(f"https://127.0.0.1:{httpd.server_address[1]}", trusting)
    finally:
        httpd.shutdown()
        httpd.server_close()


def fetch(fetcher: Fetcher, url: str) -> Any:
    async def go() -> Any:
        return await fetcher.fetch(url)

    return bounded(go)


def refused(fetcher: Fetcher, url: str) -> str:
    with pytest.raises(FetchRefused) as caught:
        fetch(fetcher, url)
    return str(caught.value)


def test_a_good_document_is_fetched_and_describes_a_public_client(docs: Docs) -> None:
    fetcher = Fetcher(ssl_context=docs.trusting, allow_private=True)
    url = f"{docs.base}/client.json"
    info = client_info(url, fetch(fetcher, url))
    assert info.client_id == url and info.client_name == "Doc Client"
    assert info.token_endpoint_auth_method == "none" and info.client_secret is None
    assert [str(u) for u in info.redirect_uris or []] == ["http://127.0.0.1:9/callback"]


def test_the_fetch_limits(docs: Docs) -> None:
    fetcher = Fetcher(ssl_context=docs.trusting, allow_private=True, timeout_s=1.5)
    assert "over 5120 bytes" in refused(fetcher, f"{docs.base}/big.json")
    assert "over 5120 bytes" in refused(fetcher, f"{docs.base}/endless.json")
    started = time.monotonic()
    assert "within 1.5s" in refused(fetcher, f"{docs.base}/slow.json")
    assert time.monotonic() - started < 3.5  # the whole exchange is bounded, not each read
    assert "not 200" in refused(fetcher, f"{docs.base}/moved.json")  # no redirect followed
    assert "not JSON" in refused(fetcher, f"{docs.base}/other")
    assert "must be https" in refused(fetcher, "http://127.0.0.1:1/client.json")
    # The defaults: the system's trust store, and no private address.
    assert "certificate" in refused(Fetcher(allow_private=True), f"{docs.base}/client.json")
    assert "not a public address" in refused(Fetcher(ssl_context=docs.trusting),
                                              f"{docs.base}/client.json")


def test_a_document_must_describe_itself_honestly(docs: Docs) -> None:
    fetcher = Fetcher(ssl_context=docs.trusting, allow_private=True)
    for path, why in (("/liar.json", "not its own URL"), ("/secret.json", "public client")):
        url = f"{docs.base}{path}"
        with pytest.raises(FetchRefused, match=why):
            client_info(url, fetch(fetcher, url))


def test_a_client_id_metadata_document_client_connects(docs: Docs, tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec")
    (tmp_path / "private").mkdir()
    tokens_file = tmp_path / "private" / "tokens.json"
    documents = ClientDocuments(Fetcher(ssl_context=docs.trusting, allow_private=True))
    with in_process(record.root, tokens_file, tmp_path / "server.log",
                    transports.OAuth(documents=documents)) as server:
        async def go() -> Any:
            client, _, storage = oauth_client(server, approve_on_terminal(server, "alice"),
                                              metadata_url=f"{docs.base}/client.json")
            with anyio.fail_after(60):
                async with client as c:
                    return await c.call_tool("put", {"name": "by-doc", "body": "x\n"}), storage

        wrote, storage = bounded(go)
        assert not wrote.is_error, text(wrote)
        assert storage.client is not None and storage.client.client_id.endswith("/client.json")
        assert 'from "Doc Client"' in server.log_text()
    assert oauthstore.Store(oauthstore.state_path(tokens_file)).read().clients == {}
    code, out, _ = run_atlas("--record", str(record.root), "get", "by-doc", "--json")
    assert code == 0 and json.loads(out)["author"] == "alice"
