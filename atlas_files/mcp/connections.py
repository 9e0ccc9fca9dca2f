"""Connections to `atlas mcp --http`: a client that is slow to say what it wants, or one
of very many at once, must not keep the others out.

uvicorn's HTTP/1.1 protocol (h11) bounds a request head to 16 KiB but waits for it, and
for a body, as long as the client likes, and takes every connection the listening socket
hands it until the process runs out of descriptors. :class:`Guarded` adds deadlines while
the server waits on its client: the head within :data:`HEAD_S` of its first byte (or of
the connection), no gap in the body longer than :data:`IDLE_S`, the whole request within
:data:`REQUEST_S`. And at most :func:`most_connections` are open at once: a new one
beyond that is refused (503 with ``Retry-After``, said once on the terminal), and every
open one is kept. Closing one to make room was tried: whichever it picks may be the one a
client is using at that moment (a connection kept alive between two calls, or one whose
request a busy server has not read yet, looks idle), and that client's call fails with a
read error. A client that holds a connection without finishing its request is closed by
the deadlines above instead.
"""

from __future__ import annotations

import asyncio
import resource
import time
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from atlas_files.mcp import limits
from atlas_files.mcp.notices import Notices

HEAD_S = 10.0
IDLE_S = 30.0
REQUEST_S = 300.0
MOST = 512
# Descriptors kept for all but the connections served: the tools' own (each of up to 40
# worker threads holds a few folders and files of the record open: about 100 at once were
# seen under 50 busy clients, where 64 kept made calls fail), refused connections until
# they are answered (MOST_REFUSED), the state file, logs.
SPARE_FDS = 384
# A refused connection is answered once its request is read: closed before, its client's
# request would be answered with a reset, which the client reads as a failed call, not a
# refusal. At most this many wait for their request at once (past that, a flood: the one
# that has waited longest is closed). Within SPARE_FDS.
MOST_REFUSED = 128


def most_connections() -> int:
    """At most :data:`MOST`, and fewer where the process may open few descriptors."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MOST
    return max(8, min(MOST, soft - SPARE_FDS))


class Guarded(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and the bound above."""

    limit = most_connections()
    notices: ClassVar[Notices | None] = None  # where a refusal is said (see reporting)
    said_full: ClassVar[bool] = False  # said since the server was last well below the limit

    @classmethod
    def reporting(cls, notices: Notices) -> type[Guarded]:
        """This protocol, saying on ``notices`` when it refuses connections."""
        return type(cls.__name__, (cls,), {"notices": notices})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._waiting_since: float | None = None  # waiting on the client since
        self._last_data = 0.0
        self._watch: asyncio.TimerHandle | None = None
        self.refused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        now = time.monotonic()
        self._waiting_since, self._last_data = now, now
        if len(self.connections) > self.limit and self._full():
            self._refuse()
        elif self.said_full and len(self.connections) < self.limit * 0.9:
            type(self).said_full = False  # well below the limit: the next refusal is said
        self._arm(HEAD_S)

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

    def _full(self) -> bool:
        """Whether this new connection finds the server at its limit (connections it
        refused and has not closed yet do not count)."""
        return sum(isinstance(c, Guarded) and not c.refused and c is not self
                   for c in self.connections) >= self.limit

    def _refuse(self) -> None:
        """Answer this connection's request with 503 and Retry-After, then close it; said
        on the terminal once while full."""
        self.refused = True
        if not self.said_full and self.notices is not None:
            type(self).said_full = True
            # Bounded per window too: a server hovering at its limit says it a few times.
            self.notices.say("refusals at the connection limit", (
                f"atlas mcp: {self.limit} connections are open, the most this server takes; "
                "new ones get 503 and Retry-After until some close, open ones are kept (a "
                "client holds about two: its calls and its event stream)"))
        waiting = [c for c in self.connections if isinstance(c, Guarded) and c.refused
                   and c is not self and c.conn.their_state is h11.IDLE]
        if len(waiting) >= MOST_REFUSED:
            # A flood: the refused connection that has waited longest for its request goes.
            min(waiting, key=lambda c: c._last_data).transport.close()
        self.app = limits.busy
