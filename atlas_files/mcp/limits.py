"""How much of a client's request the server reads: a call whose text passes what the
record's ``body_limit`` allows is refused at that size plus one byte, over HTTP and over
stdio, without being read whole.

A call carries a body of at most ``body_limit`` bytes; JSON writes a byte of text as at
most six (a control character becomes ``\\u00XX``), and the call around it (the method,
the other arguments) is small. So the most a request within the record's limits can take
is six times the limit plus :data:`ENVELOPE`; past that, nothing any tool accepts can be
in it. The limit is the record's at each request (HTTP) or when the server starts (stdio).
Over HTTP the bodies held at once are bounded too (:data:`BUDGET`): many large requests
at once get 503 and ``Retry-After``, not the server's memory.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from atlas_files.facts.errors import AtlasError
from atlas_files.facts.layout import CONFIG_NAME
from atlas_files.storage import config as configmod

ENVELOPE = 64 << 10
BUDGET = 64 << 20  # request bodies held at once, over all HTTP requests
INVALID_REQUEST = -32600
RETRY_AFTER_S = 1  # what a 503 asks a client to wait before it tries again


def request_limit(body_limit: int) -> int:
    """The most bytes a request within the record's ``body_limit`` can take."""
    return 6 * body_limit + ENVELOPE


def record_limit(root: str | os.PathLike[str]) -> tuple[int, int]:
    """(the record's body_limit now, the request limit that follows); the default where
    atlas.yaml cannot be read (the call itself will then say why)."""
    try:
        body_limit = configmod.load(Path(root) / CONFIG_NAME).body_limit
    except (AtlasError, OSError):
        body_limit = configmod.DEFAULT_BODY_LIMIT
    return body_limit, request_limit(body_limit)


def too_large(limit: int, body_limit: int) -> str:
    return (f"bad input: the request is larger than the {limit} bytes this server reads "
            f"(the record's body_limit of {body_limit} bytes, as JSON, and the call around "
            "it); nothing was written. hint: split the text into several topics, or raise "
            "body_limit in atlas.yaml")


def error_message(message: str, request_id: Any = None) -> bytes:
    """A JSON-RPC error answer (``id`` null where the request's could not be read)."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id,
                       "error": {"code": INVALID_REQUEST, "message": message}}).encode()


class BodyLimit:
    """ASGI middleware in front of /mcp: a body past the record's request limit gets 413
    (a JSON-RPC error saying the limit) as soon as its Content-Length, or its bytes so far,
    pass it; the connection is then closed, so the rest is never read."""

    def __init__(self, app: ASGIApp, root: str, path: str, budget: int = BUDGET) -> None:
        self.app = app
        self.root = root
        self.path = path
        self.budget = budget
        self.held = 0  # bytes of bodies being read now (one event loop: no lock needed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self.path \
                or scope.get("method") in ("GET", "DELETE", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        body_limit, limit = await anyio.to_thread.run_sync(record_limit, self.root)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _answer(send, 413, error_message(too_large(limit, body_limit)))
            return
        messages: list[Message] = []
        size = 0
        try:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    messages.append(message)
                    break
                chunk = len(message.get("body", b""))
                size += chunk
                if size > limit:
                    await _answer(send, 413, error_message(too_large(limit, body_limit)))
                    return
                if self.held + chunk > self.budget:
                    await _answer(send, 503, error_message(
                        "busy: too many large requests at once; nothing was written. "
                        "hint: send it again in a moment"), retry=True)
                    return
                self.held += chunk
                messages.append(message)
                if not message.get("more_body", False):
                    break
            await self.app(scope, _replay(messages, receive), send)
        finally:
            self.held -= sum(len(m.get("body", b"")) for m in messages
                             if m["type"] == "http.request")


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _answer(send: Send, status: int, body: bytes, retry: bool = False) -> None:
    headers = [(b"content-type", b"application/json"), (b"connection", b"close"),
               (b"content-length", str(len(body)).encode())]
    if retry:
        headers.append((b"retry-after", str(RETRY_AFTER_S).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def busy(scope: Scope, receive: Receive, send: Send) -> None:
    """The ASGI answer to a request on a connection over the server's limit: 503 and
    Retry-After once its request is read (a small body drained, so that closing after the
    answer does not reset it unread), the connection then closed; nothing is acted on."""
    drained = 0
    while drained <= ENVELOPE:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
        drained += len(message.get("body", b""))
    await _answer(send, 503, error_message(
        "busy: the server has as many connections open as it takes; nothing was read or "
        f"written. hint: send it again in {RETRY_AFTER_S} s (Retry-After)"), retry=True)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    queue = list(messages)

    async def replay() -> Message:
        if queue:
            return queue.pop(0)
        return await receive()

    return replay


# -- stdio ---------------------------------------------------------------------------------

# Where a request's id is when the line is too long to parse: the Python SDK writes it
# near the start (`{"jsonrpc":"2.0","id":3,...`), the TypeScript SDK last (`...,"id":3}`).
_ID = r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")'
_HEAD_ID = re.compile(r'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?' + _ID)
_TAIL_ID = re.compile(_ID + r"\s*\}\s*$")
KEEP = 512  # bytes kept of each end of a line too long to read


def request_id(head: bytes, tail: bytes) -> Any:
    """The id of a request from the two ends of its line, or None."""
    for pattern, text in ((_HEAD_ID, head), (_TAIL_ID, tail)):
        found = pattern.match(text.decode("utf-8", "replace")) if pattern is _HEAD_ID \
            else pattern.search(text.decode("utf-8", "replace"))
        if found:
            try:
                return json.loads(found.group(1))
            except ValueError:
                return None
    return None


class Lines:
    """The lines of a file descriptor, as the SDK's stdio transport reads them, each at
    most ``limit`` bytes: a longer one is skipped to its end without being kept (only
    its first and last :data:`KEEP` bytes, for its id) and ``refuse`` is called with the
    id, so the client gets an answer."""

    def __init__(self, fd: int, limit: int, refuse: Callable[[Any], Any]) -> None:
        self.fd = fd
        self.limit = limit
        self.refuse = refuse
        self._buffer = b""
        self._eof = False

    def __aiter__(self) -> Lines:
        return self

    async def _read(self) -> bytes:
        return await anyio.to_thread.run_sync(os.read, self.fd, 1 << 16)

    async def __anext__(self) -> str:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end + 1], self._buffer[end + 1:]
                return line.decode("utf-8", "replace")
            if len(self._buffer) > self.limit:
                await self._skip()
                continue
            if self._eof:
                if self._buffer:
                    line, self._buffer = self._buffer, b""
                    return line.decode("utf-8", "replace")
                raise StopAsyncIteration
            chunk = await self._read()
            if not chunk:
                self._eof = True
            self._buffer += chunk

    async def _skip(self) -> None:
        """Skip the rest of a line past the limit; answer it."""
        head, tail = self._buffer[:KEEP], self._buffer[-KEEP:]
        self._buffer = b""
        while True:
            chunk = await self._read()
            if not chunk:
                self._eof = True
                break
            end = chunk.find(b"\n")
            if end >= 0:
                tail = (tail + chunk[:end])[-KEEP:]
                self._buffer = chunk[end + 1:]
                break
            tail = (tail + chunk)[-KEEP:]
        await self.refuse(request_id(head, tail))


class Out:
    """The wire to the client over stdio: whole lines, one writer at a time, so the
    answer to a line too long to read never lands inside another message."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lock = threading.Lock()

    def _write(self, data: bytes) -> None:
        with self._lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]

    async def write(self, text: str) -> None:
        await anyio.to_thread.run_sync(self._write, text.encode("utf-8"))

    async def flush(self) -> None:
        return None


def claim_stdio() -> tuple[int, int]:
    """The client's stdin and stdout as private descriptors; fd 0 then reads the null
    device and fd 1 writes to stderr (as the SDK's own stdio transport arranges), so
    nothing a tool runs can read the client's messages or write into the wire."""
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out
