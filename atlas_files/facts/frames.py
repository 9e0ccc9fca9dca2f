"""Messages between atlas's own processes: one value each, marshalled, after its length.

The command server's client and server, the server and its spare worker, and the links
check and the children that render for it all speak this: four bytes of length (big
endian), then ``marshal.dumps(value)``. Over a Unix socket a message may carry file
descriptors, passed with its first bytes (SCM_RIGHTS). marshal, not JSON or pickle: it
is built in, fast, and makes no object but the plain values it holds; it is only ever
read from a process of the same user (the server checks its peer first), never from a
file or another user.

Imported by the command server's client before anything else, so it uses only modules
the interpreter has loaded at start (``_socket``, not ``socket``).
"""

from __future__ import annotations

import _socket
import marshal
import os
import sys

HEADER = 4
MAX_SIZE = 16 << 20  # a request holds a command line and an environment; an answer less
MAX_FDS = 16
_FD_SIZE = 4  # a C int

# Not typing's (see server/client.py); type checkers read any TYPE_CHECKING name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def pack(value: Any) -> bytes:
    data = marshal.dumps(value)
    return len(data).to_bytes(HEADER, "big") + data


def send(conn: Any, value: Any, fds: Sequence[int] = ()) -> None:
    """Send ``value`` on the socket ``conn``, with ``fds`` passed along its first bytes."""
    frame = pack(value)
    ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                  b"".join(fd.to_bytes(_FD_SIZE, sys.byteorder) for fd in fds))] if fds else []
    sent = conn.sendmsg([frame], ancillary)
    if sent < len(frame):
        conn.sendall(frame[sent:])


def receive(conn: Any, max_size: int = MAX_SIZE, max_fds: int = MAX_FDS,
            ) -> tuple[Any, list[int]]:
    """The next value on the socket ``conn`` and the descriptors that came with it.
    EOFError if the socket closes first, ValueError (or marshal's own errors) if what
    came is not a message of ``max_size`` bytes or less; either way no descriptor that
    came is left open."""
    data = b""
    fds: list[int] = []
    try:
        want = HEADER
        while len(data) < want:
            # Never past this message: the next one (an answer after the first) stays
            # in the socket for the next call.
            chunk, ancillary, _, _ = conn.recvmsg(
                min(want - len(data), 1 << 16), _socket.CMSG_SPACE(max_fds * _FD_SIZE))
            for level, kind, raw in ancillary:
                if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                    fds += [int.from_bytes(raw[i:i + _FD_SIZE], sys.byteorder)
                            for i in range(0, len(raw) - len(raw) % _FD_SIZE, _FD_SIZE)]
            if not chunk:
                raise EOFError("closed before the whole message came")
            data += chunk
            if want == HEADER and len(data) == HEADER:
                size = int.from_bytes(data, "big")
                if size > max_size:
                    raise ValueError("message too long")
                want += size
        return marshal.loads(data[HEADER:]), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def write(fd: int, value: Any) -> None:
    """Write ``value`` to the pipe ``fd`` (blocking until it is all written)."""
    data = pack(value)
    while data:
        data = data[os.write(fd, data):]


def read(fd: int) -> Any:
    """The next value from the pipe ``fd``; EOFError if it ends first."""
    size = int.from_bytes(_exactly(fd, HEADER), "big")
    return marshal.loads(_exactly(fd, size))


def _exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError("the pipe ended before the whole message came")
        data += chunk
    return data
