"""Connections to `atlas mcp --http`: a client that is slow to say what it wants, or one
of very many at once, must not keep the others out.

uvicorn's HTTP/1.1 protocol (h11) bounds a request head to 16 KiB but waits for it, and
for a body, as long as the client likes, and takes every connection the listening socket
hands it until the process runs out of descriptors. :class:`Guarded` adds deadlines while
the server waits on its client: the head within :data:`HEAD_S` of its first byte (or of
the connection), no gap in the body longer than :data:`IDLE_S`, the whole request within
:data:`REQUEST_S`. And at most :func:`most_connections` are open at once: a new one beyond
that closes the connection that has waited longest on its client (never one whose
request the server is working on), or itself if there is none.
"""

from __future__ import annotations

import asyncio
import resource
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_S = 10.0
IDLE_S = 30.0
REQUEST_S = 300.0
MOST = 512
SPARE_FDS = 64  # descriptors kept for the record's files, the state file, logs


def most_connections() -> int:
    """At most :data:`MOST`, and fewer where the process may open few descriptors."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MOST
    return max(8, min(MOST, soft - SPARE_FDS))


class Guarded(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and the bound above."""

    limit = most_connections()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._waiting_since: float | None = None  # waiting on the client since
        self._last_data = 0.0
        self._watch: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        now = time.monotonic()
        self._waiting_since, self._last_data = now, now
        self._arm(HEAD_S)
        if len(self.connections) > self.limit:
            self._make_room()

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        if self._waiting_since is None and self.conn.their_state is h11.IDLE:
            self._waiting_since = now  # the first byte of the next request
            self._arm(HEAD_S)
        self._last_data = now
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._waiting_since = None  # the request is whole: the server's turn

    def connection_lost(self, exc: Exception | None) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        super().connection_lost(exc)

    def waited(self, now: float) -> float | None:
        """How long this connection has waited on its client (for its request, or idle
        between two), or None while the server answers it."""
        if self.transport.is_closing():
            return None
        if self._waiting_since is not None:
            return now - self._waiting_since
        if self.conn.their_state is h11.IDLE and self.conn.our_state is h11.IDLE:
            return now - self._last_data
        return None

    def _arm(self, delay: float) -> None:
        if self._watch is not None:
            self._watch.cancel()
        self._watch = self.loop.call_later(max(delay, 0.05), self._check)

    def _check(self) -> None:
        self._watch = None
        now = time.monotonic()
        if self._waiting_since is None or self.transport.is_closing():
            return
        waited = now - self._waiting_since
        head = self.conn.their_state is h11.IDLE
        if self.flow.read_paused:  # the server is not reading: not the client's delay
            self._last_data = now
        if head:
            left = HEAD_S - waited
        else:
            left = min(REQUEST_S - waited, IDLE_S - (now - self._last_data))
        if left <= 0:
            self.transport.close()
            return
        self._arm(left)

    def _make_room(self) -> None:
        now = time.monotonic()
        waiting = [(waited, c) for c in self.connections
                   if isinstance(c, Guarded) and (waited := c.waited(now)) is not None]
        if not waiting:
            self.transport.close()
            return
        _, longest = max(waiting, key=lambda pair: pair[0])
        longest.transport.close()
