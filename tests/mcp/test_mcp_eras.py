"""Both protocol revisions the SDK speaks, through its own client: the initialize
handshake (2025-11-25, mode "legacy") and 2026-07-28 (stateless: server/discover, no
session; what mode "auto" settles on with this server), over stdio, Streamable HTTP with
a token, and Streamable HTTP with OAuth (the authorization response's `iss` checked by
the SDK's client against the issuer it discovered)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support.mcp_client import seed, stdio, text
from support.oauth import Server, approve_on_terminal, bounded, oauth_client, process

from atlas_files.mcp import tokens
from atlas_files.storage.record import Record

REVISION = {"legacy": "2025-11-25", "auto": "2026-07-28"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Record, Server, str]]:
    root = tmp_path_factory.mktemp("eras")
    record = seed(root / "rec")
    (root / "private").mkdir()
    secret = tokens.add(root / "private" / "tokens.json", "alice")
    with process(record.root, root / "private" / "tokens.json", root / "server.log") as server:
        yield record, server, secret


async def session(client: Client, mode: str, topic: str) -> list[Any]:
    """What a session does: begin, a stale write (the stop sign), a read, a good write."""
    async with client:
        assert client.protocol_version == REVISION[mode]
        return [await client.call_tool("begin", {}),
                await client.call_tool("put", {"name": "plan", "body": "x\n", "expect": 1}),
                await client.call_tool("get", {"name": "plan"}),
                await client.call_tool("put", {"name": topic, "body": f"{mode}\n",
                                               "expect": 0})]


def check(results: list[Any], record: Record, topic: str, author: str) -> None:
    begun, stale, read, wrote = results
    assert not begun.is_error and begun.structured_content["identity"] == author
    assert stale.is_error and text(stale).startswith("stop: you read v1 of plan, but it is at")
    assert stale.structured_content is None
    assert read.structured_content["name"] == "plan"
    assert not wrote.is_error and wrote.structured_content["version"] == 1
    written = record.root / f"projects/web/artifacts/{topic}/{topic}.v0001.md"
    assert f'author: "{author}"' in written.read_text()


@pytest.mark.parametrize("mode", list(REVISION))
def test_stdio_in_both_revisions(served: tuple[Record, Server, str], mode: str) -> None:
    record, _, _ = served
    topic = f"stdio-{mode}"
    check(bounded(lambda: session(Client(stdio(record.root, "alice"), mode=mode), mode, topic)),
          record, topic, "alice")


@pytest.mark.parametrize("mode", list(REVISION))
def test_http_with_a_token_in_both_revisions(served: tuple[Record, Server, str],
                                             mode: str) -> None:
    record, server, secret = served
    topic = f"token-{mode}"
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"},
                              timeout=httpx2.Timeout(30, read=60))
    client = Client(streamable_http_client(server.url, http_client=http), mode=mode)
    check(bounded(lambda: session(client, mode, topic)), record, topic, "alice")


@pytest.mark.parametrize("mode", list(REVISION))
def test_http_with_oauth_in_both_revisions(served: tuple[Record, Server, str],
                                           mode: str) -> None:
    record, server, _ = served
    topic = f"oauth-{mode}"
    client, _, storage = oauth_client(server, approve_on_terminal(server, f"web-{mode}"),
                                      mode=mode)
    check(bounded(lambda: session(client, mode, topic)), record, topic, f"web-{mode}")
    assert storage.tokens is not None and storage.tokens.access_token.startswith("atlas_oa_")
