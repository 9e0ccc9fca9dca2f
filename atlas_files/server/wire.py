"""Where a command server's socket lies, who may use it, and what a request holds.

Imported by the client on every `atlas` call with ``ATLAS_SERVER`` set, before anything
else: only modules Python has already loaded at start, or that cost nothing to load.
"""

from __future__ import annotations

import _socket
import os
import stat
import sys
import zlib

from atlas_files.facts import environment, privatepath

# Not typing's (see client.py); type checkers read any TYPE_CHECKING name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

PROTOCOL = 2
# Requests and answers are messages (frames.py). The server answers a request to run a
# command with ("pid", N) (the worker running it), then ("exit", N) (its exit status; -N
# for a signal), or with one of these, (word, None), instead of both; a request for its
# status with ("status", {...}).
PID, EXIT, STATUS = "pid", "exit", "status"
STALE = "stale"  # its code changed on disk since it started: start a new one
FOREIGN = "foreign"  # another Python setup (sys.path, environment_key): run it in-process
REFUSED = "refused"  # a request it cannot take (malformed, another user)
OFF_VALUES = ("", "0", "off", "no", "false")
ON_VALUES = ("1", "on", "yes", "true", "auto")
FIX = "set ATLAS_SERVER=1, or to a socket path in a folder only you can use (mode 700)"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Unusable(Exception):
    """``ATLAS_SERVER`` names a socket that must not be used; the message says why."""


def folder() -> str:
    """The private folder that holds this user's sockets: in ``$XDG_RUNTIME_DIR``, which
    is the user's own, else in the shared temp folder (``$TMPDIR``, else /tmp), where
    the client makes it before it connects (``prepare``)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "atlas-files")
    temp = os.environ.get("TMPDIR", "")
    return os.path.join(temp if os.path.isabs(temp) else "/tmp", f"atlas-files-{os.getuid()}")


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
    tag = zlib.crc32("\0".join([sys.executable, HERE, *(
        f"{k}={v}" for k, v in environment_key(os.environ))]).encode())
    return os.path.join(folder(), f"server-{tag:08x}.sock")


# The variables that can make a process the server made before a command arrived behave
# otherwise than one started for it: the interpreter reads PYTHON* as it starts (hash
# seed, warnings, UTF-8 mode, paths), the C library the locale and the timezone, and an
# ATLAS_* variable may be read as a module is imported. As Mercurial's chg does, the
# default socket's name holds them, so another value has a server of its own, and a
# server on a socket of the user's choosing runs no command whose values differ.
KEYED_NAMES = ("LANG", "LANGUAGE", "TZ")
KEYED_PREFIXES = ("PYTHON", "ATLAS_", "LC_")
# ATLAS_* variables that atlas reads only as a command runs, in the worker, from the
# client's environment: keyed, they would give every identity and record its own server.
PER_COMMAND = frozenset({"ATLAS_SERVER", environment.AS, environment.RECORD, environment.PROJECT,
                         "ATLAS_CHECK_JOBS", "ATLAS_MCP_TOKENS"})


def environment_key(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """The variables of ``environ`` that a server and its commands must agree on."""
    return sorted((k, v) for k, v in environ.items()
                  if (k in KEYED_NAMES or k.startswith(KEYED_PREFIXES))
                  and k not in PER_COMMAND)


def prepare(path: str, create: bool = True) -> bool:
    """Make sure that ``path`` leads where only this user decides, before anything is
    sent to it or started there: every folder on the way is this user's or root's and
    closed to others (privatepath.py), the socket's own folder is this user's alone
    (mode 700, not a link), and whatever is at ``path`` is a socket of this user's.
    ``create``: make the default folder (``folder()``) if it is missing, never any other
    folder, nor a folder's parents. Whether the folder exists; Unusable says what is wrong
    and what to do."""
    if len(os.fsencode(path)) > 107:  # sun_path's size on Linux, less its final NUL
        raise Unusable(f"the socket path {path} is longer than a Unix socket allows (107 "
                       "bytes); set ATLAS_SERVER to a shorter path")
    parent = os.path.dirname(path)
    why = privatepath.unsafe_way(parent)
    if why is not None:
        raise Unusable(f"{why}; the command server's socket {path} must be reached only "
                       f"through folders of yours or root's; {FIX}")
    if create and parent == folder():
        try:
            os.mkdir(parent, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise Unusable(f"the folder {parent} cannot be made ({exc.strerror}); {FIX}"
                           ) from None
    try:
        info = os.lstat(parent)
    except FileNotFoundError:
        if not create:
            return False
        raise Unusable(f"the socket's folder {parent} does not exist, and atlas makes no "
                       f"folder but its default one; run `mkdir -m 700 {parent}`, or set "
                       "ATLAS_SERVER=1") from None
    except OSError as exc:
        raise Unusable(f"{parent} cannot be looked at ({exc.strerror}); {FIX}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise Unusable(f"{parent} is {_kind(info)}, not a folder, so the command server's "
                       f"socket cannot live there; {FIX}")
    try:
        found: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise Unusable(f"{path} cannot be looked at ({exc.strerror}); {FIX}") from None
    if found is not None and not stat.S_ISSOCK(found.st_mode):
        raise Unusable(f"the socket path {path} is {_kind(found)}, not a command server's "
                       "socket, and atlas leaves it alone; set ATLAS_SERVER=1, or to a path "
                       "where nothing is yet, in a folder only you can use")
    if info.st_uid != os.geteuid():
        raise Unusable(f"{parent} belongs to another user (uid {info.st_uid}), who made it "
                       "first; have it removed (by that user or root), or set "
                       "ATLAS_SERVER to a socket path in a folder of your own")
    if info.st_mode & 0o077:
        what = "write to" if info.st_mode & 0o022 else "open"
        raise Unusable(f"others may {what} {parent} (mode {stat.S_IMODE(info.st_mode):o}); "
                       f"the command server needs a folder only you can use: run `chmod 700 "
                       f"{parent}`, or set ATLAS_SERVER=1")
    if found is None:
        return True
    if found.st_uid != os.geteuid():
        raise Unusable(f"the socket {path} belongs to another user (uid {found.st_uid}); "
                       f"{FIX}")
    return True


def _kind(info: os.stat_result) -> str:
    mode = info.st_mode
    for test, word in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISREG, "a regular file"),
                       (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return "a device or other special file"


def peer_uid(conn: Any) -> int:
    """The user of the process that listens on (or connected to) the other end of
    ``conn``, as the kernel saw it (SO_PEERCRED: pid, uid, gid)."""
    credentials = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(credentials[4:8], sys.byteorder)


def check_peer(conn: Any, path: str) -> None:
    """Refuse a socket that another user's process answers: it would be given the command
    line, the environment and the terminal."""
    uid = peer_uid(conn)
    if uid != os.geteuid():
        raise Unusable(f"the socket {path} is answered by another user's process (uid "
                       f"{uid}), so nothing was sent to it; remove the socket (as that user "
                       "or root), or set ATLAS_SERVER to a socket path of your own")


LOG_LIMIT = 1 << 20  # a log past this is started afresh: it only ever holds start-up errors


def open_log(path: str) -> int:
    """The server's log, ``path``.log, opened to append: created mode 600 if missing,
    never through a link, and only if it is a regular file of this user's (a named pipe
    is not waited on). Unusable otherwise."""
    log = path + ".log"
    try:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                     | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise Unusable(f"the command server's log {log} cannot be opened ({exc.strerror}): "
                       "remove whatever is there") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise Unusable(f"the command server's log {log} is not a regular file of yours: "
                       "remove whatever is there")
    if info.st_size > LOG_LIMIT:
        os.ftruncate(fd, 0)
    return fd


def supported() -> bool:
    """Whether this system has what the server needs: fd passing, peer credentials and
    process file descriptors (Linux)."""
    import socket  # noqa: PLC0415 - the client never asks

    return hasattr(os, "pidfd_open") and hasattr(socket, "SO_PEERCRED") and hasattr(
        socket.socket, "sendmsg")
