"""Where a command server's socket lies, who may use it, and what a request holds.

Imported by the client on every `atlas` call with ``ATLAS_SERVER`` set, before anything
else: only modules Python has already loaded at start, or that cost nothing to load.
"""

from __future__ import annotations

import os
import stat
import sys
import zlib

PROTOCOL = 1
# The server answers a request with lines: "pid N" (the worker running the command),
# then "exit N" (its exit status; -N for a signal), or one of these instead of both.
STALE = "stale"  # its code changed on disk since it started: start a new one
FOREIGN = "foreign"  # another Python setup (sys.path): run the command in-process
REFUSED = "refused"  # a request it cannot take (malformed, another user)
OFF_VALUES = ("", "0", "off", "no", "false")
ON_VALUES = ("1", "on", "yes", "true", "auto")
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Unusable(Exception):
    """``ATLAS_SERVER`` names a socket that must not be used; the message says why."""


def folder() -> str:
    """The private folder that holds this user's sockets (not made here)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "atlas-files")
    return f"/tmp/atlas-files-{os.getuid()}"


def socket_path(value: str | None = None) -> str | None:
    """The socket ``ATLAS_SERVER`` (or ``value``) asks for; None when it is off.

    "1" (or on, yes, true, auto) is this install's default socket: one per Python and
    atlas install, so two virtual environments never run each other's code. A value with
    a "/" is a socket path of the user's choosing.
    """
    value = (os.environ.get("ATLAS_SERVER", "") if value is None else value).strip()
    if value.lower() in OFF_VALUES:
        return None
    if "/" in value:
        return os.path.abspath(value)
    if value.lower() not in ON_VALUES:
        raise Unusable(f"ATLAS_SERVER={value!r} is neither on (1), off (0) nor a socket "
                       "path; set ATLAS_SERVER=1 to use the command server")
    tag = zlib.crc32(f"{sys.executable}\0{HERE}".encode())
    return os.path.join(folder(), f"server-{tag:08x}.sock")


def check_private(path: str) -> None:
    """Refuse a socket whose folder another user could have made or could write into:
    whoever controls it could answer as the server and run commands as this user."""
    if len(os.fsencode(path)) > 107:  # sun_path's size on Linux, less its final NUL
        raise Unusable(f"the socket path {path} is longer than a Unix socket allows (107 "
                       "bytes); set ATLAS_SERVER to a shorter path")
    parent = os.path.dirname(path)
    try:
        info = os.lstat(parent)
    except FileNotFoundError:
        return  # nothing there yet: the server makes it, private
    except OSError as exc:
        raise Unusable(f"{parent} cannot be read ({exc.strerror})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise Unusable(f"{parent} is not a folder (a link or a file), so the command "
                       "server's socket cannot live there; remove it or set ATLAS_SERVER "
                       "to a socket path in a folder of your own")
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise Unusable(f"{parent} belongs to another user or others may write to it "
                       f"(mode {stat.S_IMODE(info.st_mode):o}); the command server needs "
                       "a folder only you can use (chmod 700 it, or set ATLAS_SERVER to a "
                       "socket path in one)")


def supported() -> bool:
    """Whether this system has what the server needs: fd passing, peer credentials and
    process file descriptors (Linux)."""
    import socket  # noqa: PLC0415 - the client never asks

    return hasattr(os, "pidfd_open") and hasattr(socket, "SO_PEERCRED") and hasattr(
        socket.socket, "sendmsg")
