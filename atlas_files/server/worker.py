"""The worker: a process forked from the command server that becomes the client's process
for one command (its streams, folder, umask, environment and command line), runs the
command through the same entry point `atlas` uses, and exits with its status.

A worker whose client dies (SIGKILL included) kills itself at once, so killing `atlas`
still kills the command. What differs from a fresh process, and why that does not matter
to a command, is said in serve.py.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import gc
import io
import os
import select
import signal
import socket
import sys
import traceback
from typing import Any, NoReturn

from atlas_files import launch
from atlas_files.facts import frames
from atlas_files.server import preload, spare, watching, wire
from atlas_files.storage import watched


def work(conn: socket.socket, request: dict[str, Any], fds: list[int],
          inherited: list[socket.socket]) -> NoReturn:
    """The forked worker: become the client's process, run its command, exit. Never
    returns."""
    code = 1
    try:
        for other in inherited:
            other.close()
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.set_wakeup_fd(-1)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, spare.BLOCKED_ACROSS_FORK)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        fds.clear()
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        told = request.get("watched")
        if isinstance(told, dict):
            watched.handed_over(told["changed"], told["seq"])
        _streams(request["streams"])
        _die_with_client(conn)
        try:
            os.chdir(request["cwd"])
        except OSError as exc:
            print(f"atlas: error: the folder atlas was run in cannot be entered: "
                  f"{exc.strerror}: {request['cwd']}", file=sys.stderr)
            print("atlas: hint: run it again from a folder that exists", file=sys.stderr)
            code = 2
        else:
            code = _run(sys.argv[1:])
    except BaseException:  # noqa: BLE001 - the worker must end here, whatever happened
        traceback.print_exc()
    finally:
        _flush()
        preload.tell()
        watching.tell()
        _report(conn, code)
        os._exit(code)


def _report(conn: socket.socket, code: int) -> None:
    """The command is over: let go of the client's streams (their readers see their end)
    and send the client its exit status, before this process is torn down. A worker owns
    a copy of the server's pages (spare.py), and the kernel takes milliseconds to free
    them: the server, which reports a worker that died of a signal, learns of it only
    then. The client's end closing after this kills the worker (``_die_with_client``),
    which is exiting anyway, and the server's own report then finds no client."""
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            os.close(fd)
    with contextlib.suppress(OSError):
        frames.send(conn, (wire.EXIT, code))


def _streams(shapes: list[Any]) -> None:
    """Standard streams on the client's descriptors, with the client's encodings."""
    made = []
    for fd, shape in enumerate(shapes):
        encoding, errors, line_buffering = shape or ("utf-8", "strict", False)
        made.append(io.TextIOWrapper(
            open(fd, "rb" if fd == 0 else "wb", closefd=False),  # noqa: SIM115
            encoding=encoding, errors=errors, line_buffering=line_buffering,
            write_through=fd == 2))
    # The originals (sys.__stdout__...) stay: they are the server's, on its own
    # descriptors 0-2, which the worker has just pointed at the client's.
    sys.stdin, sys.stdout, sys.stderr = made


# The signal the kernel sends the owner of a descriptor with O_ASYNC set, in place of
# SIGIO (Linux's F_SETSIG; 10 where a Python does not name it).
F_SETSIG = getattr(fcntl, "F_SETSIG", 10)


def _die_with_client(conn: socket.socket) -> None:
    """The client sends nothing after its request: its end closing means it is gone
    (killed, even with SIGKILL), and the command it ran must go with it, before it does
    one more thing. So the kernel itself kills the worker, from within the client's own
    exit: the connection is set to signal its owner (this process) with SIGKILL when the
    other end closes. A client gone already, before that was set, is seen by the look
    that follows, before the command starts."""
    fd = conn.fileno()
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(fd, F_SETSIG, signal.SIGKILL)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
    if select.select([conn], [], [], 0)[0]:
        os.kill(os.getpid(), signal.SIGKILL)


def _run(args: list[str]) -> int:
    gc.enable()
    try:
        launch.run(args)
        code = 0
    except SystemExit as exc:
        code = _exit_status(exc.code)
    except KeyboardInterrupt:
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    except BaseException:  # noqa: BLE001 - what the interpreter would print, then exit 1
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        _flush()
    return code


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
