"""What `atlas` does with ``ATLAS_SERVER`` set: hand the command to a warm server.

Everything here runs before click, YAML or atlas's own modules are imported, so it uses
the interpreter's built-in modules only (``_socket`` is ``socket`` without the 10 ms of
``enum`` and friends). Whenever the server cannot take the command (none running, another
Python setup, its code changed, a folder that is not private), ``forward`` returns None
and `atlas` runs the command itself: the server is a speed-up, never a requirement.
"""

from __future__ import annotations

import _signal
import _socket
import os
import sys

from atlas_files.facts import frames
from atlas_files.server import wire

# Not typing's: importing typing (and contextlib with it) is 3 ms of every served command.
# Type checkers read any TYPE_CHECKING name as true.
TYPE_CHECKING = False

if TYPE_CHECKING:
    import subprocess

# What a Ctrl-C, a kill or a closed terminal sends the client goes to the worker, which
# is running the command in the client's place.
FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)


def forward(args: list[str]) -> int | None:
    """Run ``args`` in the server; its exit status (negative: the signal that ended it),
    or None when the caller should run the command itself."""
    try:
        path = wire.socket_path()
        if path is None:
            return None
        if not hasattr(os, "pidfd_open"):
            raise wire.Unusable("it needs Linux (process file descriptors); unset "
                                "ATLAS_SERVER on this system")
        # Before anything is sent, or a server started: the folder is made private if it
        # is the default one, and nothing on the way to it is another user's to change.
        wire.prepare(path)
        return _hand_over(args, path)
    except wire.Unusable as exc:
        sys.stderr.write(f"atlas: warning: command server not used: {exc}\n")
        return None


def _hand_over(args: list[str], path: str) -> int | None:
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
        request = _request(args)
    except OSError:
        return None  # a closed standard stream or a vanished folder: no way to hand over
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            conn.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            spawn(path)  # for the next command; this one runs here
            return None
        wire.check_peer(conn, path)
        frames.send(conn, request, (0, 1, 2))
        return _outcome(conn, path)
    except (OSError, ValueError, TypeError):
        return None
    finally:
        conn.close()


def _request(args: list[str]) -> dict[str, object]:
    mask = os.umask(0o022)
    os.umask(mask)
    streams = [(s.encoding, s.errors, s.line_buffering) if s is not None else None
               for s in (sys.stdin, sys.stdout, sys.stderr)]
    return {
        "protocol": wire.PROTOCOL, "op": "run", "argv": [sys.argv[0], *args],
        "env": dict(os.environ), "cwd": os.getcwd(), "umask": mask, "streams": streams,
        # Less the script's own folder, which the server's Python (run with -P) lacks.
        "path": sys.path if sys.flags.safe_path else sys.path[1:],
    }


def _outcome(conn: _socket.socket, path: str) -> int | None:
    """Follow the server's answer to its end: the worker's exit status."""
    worker = 0
    while True:
        try:
            (word, value), _ = frames.receive(conn, max_fds=0)
        except EOFError:
            # The server went away before saying how the command ended. If the worker
            # was started, its effects are unknown: say so rather than run it twice.
            if worker:
                sys.stderr.write("atlas: error: the command server ended while running "
                                 "this command; check what it did before running it again "
                                 f"(`atlas server stop`, socket {path})\n")
                return 1
            return None
        if word == wire.PID:
            worker = int(value)
            _forward_signals(worker)
        elif word == wire.EXIT:
            return int(value)
        elif word == wire.STALE:
            spawn(path)
            return None
        else:  # FOREIGN, REFUSED, or a word of a newer protocol
            return None


def _forward_signals(worker: int) -> None:
    def send(signum: int, frame: object) -> None:
        try:
            os.kill(worker, signum)
        except ProcessLookupError:
            pass

    for signum in FORWARDED:
        _signal.signal(signum, send)


def spawn(path: str, idle: int | None = None) -> subprocess.Popen[bytes] | None:
    """Start a server for ``path`` in the background (its own session, no terminal, its
    output in PATH.log); several clients racing to do so start one server. None if it
    could not be started. ``path`` has passed ``wire.prepare``."""
    import subprocess  # noqa: PLC0415 - 15 ms, paid only when no server answered

    argv = [sys.executable, "-P", "-m", "atlas_files", "server", "start", "--foreground",
            "--socket", path]
    try:
        log = wire.open_log(path)  # in the folder prepare() made private
    except wire.Unusable as exc:
        sys.stderr.write(f"atlas: warning: command server not started: {exc}\n")
        return None
    try:
        return subprocess.Popen(
            argv + (["--idle", str(idle)] if idle is not None else []),
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    except OSError:
        return None
    finally:
        os.close(log)


def exit_like(status: int) -> None:
    """Exit as the worker did: with its status, or killed by the same signal."""
    sys.stdout.flush()
    if status < 0:
        _signal.signal(-status, _signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status if status >= 0 else 128 - status)
