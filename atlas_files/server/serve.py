"""The command server: a loop that hands each command to a worker of its own.

The server imports the CLI, every command and the Markdown renderer once, then waits on
its socket. For each request it checks the caller (same user, same Python setup, its own
code unchanged on disk), hands the command to the worker it forked ahead (spare.py), or
forks one, and reports the worker's pid and, once it is reaped, its exit status. The
worker (worker.py) takes the caller's standard streams, folder, umask, environment and
command line, and runs the command exactly as `atlas` would, then exits. While idle, the
server imports what its commands imported (preload.py).

What differs from a fresh process, and why it does not matter to a command: the worker's
parent is the server (atlas never asks for its parent), and interpreter flags given to the
client's Python (-X, -W) do not reach it. A worker whose client dies (SIGKILL included)
kills itself at once, so killing `atlas` still kills the command.
"""

from __future__ import annotations

import fcntl
import importlib
import os
import select
import selectors
import signal
import socket
import stat
import sys
import time
from collections.abc import Iterable
from typing import Any

from inotify_simple import INotify

from atlas_files import __version__
from atlas_files.facts import frames, timeutil
from atlas_files.facts.errors import BadInput
from atlas_files.server import client, preload, spare, watching, wire, worker

IDLE = 900  # seconds with no command before a server exits
# Loaded once in the server, so no command pays for them: the CLI, every command but
# `mcp` (a long-running server of its own, with a heavy SDK), and the link checker's
# Markdown renderer (the pre-commit hook's cost).
LEFT_OUT = {"mcp"}
ALSO = ("atlas_files.linkcheck.sitepages",)
MAX_REQUEST = 16 << 20
FDS = 3


def start(path: str | None, idle: int = IDLE, foreground: bool = False) -> dict[str, Any]:
    """Start a server on ``path`` (default: this install's socket); what `atlas server
    status` says of it. In the foreground, serve until stopped or idle."""
    path = _path(path, create=True)
    running = _ask(path, "status")
    if running is not None:
        return {**running, "started": False}
    if foreground:
        Server(path, idle).serve()
        return {"socket": path, "running": False, "started": True}
    child = client.spawn(path, idle)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        answer = _ask(path, "status")
        if answer is not None:
            return {**answer, "started": True}
        if child is None or child.poll() is not None:
            break
        time.sleep(0.02)
    raise BadInput(f"the command server did not start on {path}",
                   hint=f"see its log, {path}.log, or run `atlas server start --foreground`")


def stop(path: str | None) -> dict[str, Any]:
    """Ask the server on ``path`` to stop: it stops listening at once and exits when the
    commands it is running have ended."""
    path = _path(path)
    answer = _ask(path, "stop")
    return {"socket": path, "running": False, "stopped": answer is not None,
            "pid": (answer or {}).get("pid")}


def status(path: str | None) -> dict[str, Any]:
    """Whether a server answers on ``path``, and what it says of itself."""
    path = _path(path)
    return _ask(path, "status") or {"socket": path, "running": False}


def _path(path: str | None, create: bool = False) -> str:
    """The socket ``path`` names (default: ATLAS_SERVER's, else this install's), once
    ``wire.prepare`` found it private; ``create``: make the default folder if missing."""
    if not wire.supported():
        raise BadInput("the command server needs Linux (process file descriptors and peer "
                       "credentials on Unix sockets)", hint="run atlas without ATLAS_SERVER")
    try:
        chosen = wire.socket_path(path or os.environ.get("ATLAS_SERVER") or "1") or \
            wire.socket_path("1")
        assert chosen is not None
        wire.prepare(chosen, create=create)
    except wire.Unusable as exc:
        raise BadInput(str(exc), hint="see `atlas server --help`") from None
    return chosen


MAX_ANSWER = 1 << 20  # a status is a few hundred bytes


def _ask(path: str, op: str) -> dict[str, Any] | None:
    """Send ``op`` (status, stop) to the server on ``path``; its answer, or None if none
    answers. BadInput if another user's process listens there."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        try:
            conn.connect(path)
        except OSError:
            return None
        try:
            wire.check_peer(conn, path)
        except wire.Unusable as exc:
            raise BadInput(str(exc), hint="see `atlas server --help`") from None
        try:
            frames.send(conn, {"protocol": wire.PROTOCOL, "op": op})
            (word, data), _ = frames.receive(conn, MAX_ANSWER, 0)
        except (OSError, EOFError, ValueError, TypeError):
            return None
    return data if word == wire.STATUS and isinstance(data, dict) else None


class CodeStamp:
    """The files of every loaded module as they were when the server started: an upgrade
    (pip install) changes them, and then the server must not run its old code.

    Each folder of loaded modules on a local file system is watched by the kernel
    (inotify, as watching.py watches record folders): any change in one (a file written,
    replaced, removed, its attributes changed) makes the code changed, so the look before
    each command reads a queue instead of stat-ing some four hundred files. A folder that
    cannot be watched is looked at file by file, as before."""

    def __init__(self) -> None:
        # Folder -> {file name: (mtime, size)}: each folder is opened once per look and
        # its files stat'd by name, which spares the kernel a walk of every file's whole
        # path.
        self.folders: dict[str, dict[str, tuple[int, int] | None]] = {}
        self.watched: set[str] = set()
        self.queue: INotify | None
        try:
            self.queue = INotify(nonblocking=True)
        except OSError:
            self.queue = None
        self.seen = False
        self.add(self._loaded())

    @staticmethod
    def _loaded() -> set[str]:
        return {f for m in list(sys.modules.values())
                if isinstance(f := getattr(m, "__file__", None), str)}

    def add(self, files: Iterable[str]) -> None:
        for path in files:
            folder, name = os.path.split(path)
            if self.queue is not None and folder not in self.watched \
                    and folder not in self.folders and watching.local(folder):
                # Watched before its files are stamped: a change after the stamp is seen.
                try:
                    self.queue.add_watch(folder, watching.EVENTS)
                    self.watched.add(folder)
                except OSError:
                    pass
            self.folders.setdefault(folder, {})[name] = self._stat(path)

    @staticmethod
    def _stat(path: str, folder: int | None = None) -> tuple[int, int] | None:
        try:
            info = os.stat(path, dir_fd=folder)
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    def changed(self) -> bool:
        if self.queue is not None and not self.seen and self.queue.read(timeout=0):
            self.seen = True
        if self.seen:
            return True
        for folder, files in self.folders.items():
            if folder in self.watched:
                continue
            try:
                fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                if any(stamp is not None for stamp in files.values()):
                    return True
                continue
            try:
                if any(self._stat(name, fd) != stamp for name, stamp in files.items()):
                    return True
            finally:
                os.close(fd)
        return False


class Server:
    def __init__(self, path: str, idle: int) -> None:
        self.path, self.idle = path, idle
        self.children: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> pid, client
        self.served = 0
        self.stopping = False
        self.spare: spare.Spare | None = None
        self.spare_deaths = 0
        self.watching: watching.Watching | None = None
        self.started_at = timeutil.format_time(timeutil.now())
        self.last = time.monotonic()

    def serve(self) -> None:
        if not sys.flags.safe_path and sys.path:
            del sys.path[0]  # the folder it was started from is no place to import from
        self.sys_path = list(sys.path)
        self.environment = wire.environment_key(os.environ)
        listener = self._bind()
        try:
            _preload()
            self.learner = preload.Learner()
            self.watching = watching.start()
            if self.watching is not None:
                self.watching.stop_for(lambda: bool(select.select([listener], [], [], 0)[0]))
            self.stamp = CodeStamp()
            spare.take_stock()
            self._loop(listener)
        finally:
            self._dismiss_spare()
            self._unlink(listener)
            listener.close()

    def _bind(self) -> socket.socket:
        """Listen on the socket, unless a server already does (then exit quietly): the
        lock makes several clients that each start one agree on a single server."""
        try:
            wire.prepare(self.path)
            lock = _own_file(self.path + ".lock")
        except wire.Unusable as exc:
            raise BadInput(str(exc), hint="see `atlas server --help`") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _ask(self.path, "status") is not None:
                raise SystemExit(0)
            try:
                # A dead server's socket, the only thing prepare() lets be there.
                if stat.S_ISSOCK(os.lstat(self.path).st_mode):
                    os.unlink(self.path)
            except FileNotFoundError:
                pass
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(self.path)
            listener.listen(128)
        finally:
            os.close(lock)
        self.inode = os.stat(self.path).st_ino
        return listener

    def _unlink(self, listener: socket.socket) -> None:
        try:
            if os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        except OSError:
            pass

    def _loop(self, listener: socket.socket) -> None:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._stop_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ, "listen")
        self.selector.register(wake_r, selectors.EVENT_READ, "wake")
        if self.watching is not None:
            # A change to a kept folder wakes the server, which reads it again while no
            # command waits, rather than when the next command comes (watching.py).
            self.selector.register(self.watching.queue.fileno(), selectors.EVENT_READ,
                                   "watch")
        self.listener = listener
        self._new_spare()
        while not (self.stopping and not self.children):
            timeout = None if self.children or self.stopping else self.idle
            events = self.selector.select(timeout)
            if not events and not self.children and \
                    time.monotonic() - self.last >= self.idle:
                break
            for key, _ in events:
                if key.data == "listen":
                    self._accept(listener)
                elif key.data == "wake":
                    os.read(wake_r, 512)
                elif key.data == "watch":
                    assert self.watching is not None
                    self.watching.drain()
                elif key.data == "spare":
                    self._spare_died()
                elif isinstance(key.data, spare.Spare):  # a retired spare has exited
                    self.selector.unregister(key.fd)
                    key.data.dismiss()
                else:
                    self._reap(key.fd)
            if not self.children and not self.stopping:  # idle: learn (preload.py)
                def busy() -> bool:  # a command, a signal, a spare's death: not a change
                    return any(k.data != "watch" and not isinstance(k.data, spare.Spare)
                               for k, _ in self.selector.select(0))

                learned = self.learner.learn(busy)
                self.stamp.add(learned)
                read = self.watching is not None and self.watching.read_ahead(busy)
                if learned or read:  # the spare was forked before: it lacks what came in
                    spare.take_stock()
                    self._retire_spare()
                    self._new_spare()

    def _stop_signal(self, signum: int, frame: object) -> None:
        self._stop_listening()

    def _stop_listening(self) -> None:
        if not self.stopping:
            self.stopping = True
            self.selector.unregister(self.listener)
            self._unlink(self.listener)
            self.listener.close()
            self._dismiss_spare()

    # -- the spare worker (spare.py) ------------------------------------------------------

    def _new_spare(self) -> None:
        if self.stopping or self.spare_deaths >= spare.MAX_DEATHS:
            return
        if self.watching is not None:
            self.watching.drain()  # the spare is forked with what is kept now
        with spare.signals_blocked():
            self.spare = spare.fork(self._inherited(), worker.work)
        if self.watching is not None:
            self.watching.spare_forked()
        self.selector.register(self.spare.pidfd, selectors.EVENT_READ, "spare")
        if not self.children:
            self.spare.settle()

    def _inherited(self) -> list[socket.socket]:
        """What a forked child must close: the listener, the running commands' sockets."""
        return [self.listener, *(c for _, c in self.children.values())]

    def _take_spare(self) -> spare.Spare | None:
        taken, self.spare = self.spare, None
        if taken is not None:
            self.selector.unregister(taken.pidfd)
        return taken

    def _retire_spare(self) -> None:
        """Let the spare go without waiting for it to exit (freeing its copy of the
        server's pages takes the kernel milliseconds, which a command arriving meanwhile
        would wait): it is reaped once its pidfd says it has exited."""
        taken = self._take_spare()
        if taken is not None:
            taken.channel.close()
            self.selector.register(taken.pidfd, selectors.EVENT_READ, taken)

    def _dismiss_spare(self) -> None:
        taken = self._take_spare()
        if taken is not None:
            taken.dismiss()

    def _spare_died(self) -> None:
        self.spare_deaths += 1
        self._dismiss_spare()
        self._new_spare()

    def _accept(self, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        self.last = time.monotonic()
        fds: list[int] = []
        try:
            request, fds = self._receive(conn)
            self._answer(conn, request, fds)
        except (OSError, ValueError, EOFError, TypeError, KeyError):
            _send(conn, wire.REFUSED)
            conn.close()
        finally:
            for fd in fds:
                os.close(fd)
        # Only now, with the command's streams closed here: a spare forked earlier would
        # hold them open, and the command's reader would never see their end.
        if self.spare is None:
            self._new_spare()

    def _receive(self, conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
        if wire.peer_uid(conn) != os.geteuid():
            raise ValueError("another user")
        conn.settimeout(5)  # a client that connects and says nothing holds up no one long
        request, fds = frames.receive(conn, MAX_REQUEST, FDS)
        conn.settimeout(None)
        if not isinstance(request, dict) or request.get("protocol") != wire.PROTOCOL:
            for fd in fds:
                os.close(fd)
            raise ValueError("protocol")
        return request, fds

    def _answer(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        op = request.get("op")
        if op == "status":
            _send(conn, wire.STATUS, self._status())
            conn.close()
        elif op == "stop":
            _send(conn, wire.STATUS, self._status())
            conn.close()
            self._stop_listening()
        elif op != "run" or len(fds) != FDS or not _well_formed(request):
            raise ValueError("request")
        elif request["path"] != self.sys_path or \
                wire.environment_key(request["env"]) != self.environment:
            _send(conn, wire.FOREIGN)
            conn.close()
        elif self.stamp.changed():
            _send(conn, wire.STALE)
            conn.close()
            self._stop_listening()
        else:
            self._fork(conn, request, fds)

    def _status(self) -> dict[str, Any]:
        return {"socket": self.path, "running": not self.stopping, "pid": os.getpid(),
                "started_at": self.started_at, "served": self.served,
                "in_progress": len(self.children), "idle_exit_s": self.idle,
                "spare": self.spare.pid if self.spare else None,
                "atlas": __version__, "python": sys.executable,
                "learned": len(self.learner.learned),
                **(self.watching.status() if self.watching is not None
                   else {"kept": [], "read_ahead": 0, "read_ahead_stopped": 0})}

    def _fork(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        ready = self._take_spare()
        # Set here, whatever the client sent: what the worker may take as read.
        request["watched"] = self.watching.hand_over(ready is not None) \
            if self.watching is not None else None
        if ready is not None and ready.hand_over(conn, request, fds):
            ready.channel.close()
            pid, pidfd = ready.pid, ready.pidfd
        else:
            if ready is not None:
                ready.dismiss()
            if self.watching is not None:
                request["watched"] = self.watching.hand_over(False)
            with spare.signals_blocked():
                pid = os.fork()
                if pid == 0:
                    worker.work(conn, request, fds, self._inherited())
            pidfd = os.pidfd_open(pid)
        self.served += 1
        self.children[pidfd] = (pid, conn)
        self.selector.register(pidfd, selectors.EVENT_READ, "child")
        _send(conn, wire.PID, pid)

    def _reap(self, pidfd: int) -> None:
        pid, conn = self.children.pop(pidfd)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        _send(conn, wire.EXIT, os.waitstatus_to_exitcode(status))
        conn.close()
        self.last = time.monotonic()
        if not self.children and self.spare is not None:
            self.spare.settle()


def _own_file(path: str) -> int:
    """``path`` opened read-write (made mode 600 if missing), never through a link, and
    only if it is a regular file of this user's."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                     | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise wire.Unusable(f"{path} cannot be opened ({exc.strerror}): remove whatever "
                            "is there") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise wire.Unusable(f"{path} is not a regular file of yours: remove whatever is "
                            "there")
    return fd


def _send(conn: socket.socket, word: str, value: object = None) -> None:
    try:
        frames.send(conn, (word, value))
    except OSError:
        pass  # the client left; its worker notices on its own


def _well_formed(request: dict[str, Any]) -> bool:
    def strings(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(s, str) for s in value)

    env = request.get("env")
    return (strings(request.get("argv")) and len(request["argv"]) >= 1
            and isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in env.items())
            and isinstance(request.get("cwd"), str) and isinstance(request.get("umask"), int)
            and strings(request.get("path"))
            and isinstance(request.get("streams"), list) and len(request["streams"]) == FDS)


def _preload() -> None:
    app = importlib.import_module("atlas_files.cli.app")
    importlib.import_module("atlas_files.cli")
    for name in app.COMMANDS:
        if name not in LEFT_OUT:
            app.load_command(name)
    for module in ALSO:
        importlib.import_module(module)
