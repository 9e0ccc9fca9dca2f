"""Another local user, for the tests of what atlas trusts on a shared machine: a real
process running under a uid of its own, which acts on the file system as told and listens
on Unix sockets of its own, noting everything it is sent.

The suite runs as root (CI does); a test that needs the second user is skipped elsewhere,
unless ``ATLAS_REQUIRE_SECOND_USER`` is set, as .ci/run sets it, which makes the skip a
failure. The second user is an unused uid (no entry in /etc/passwd is made), which runs
the system's own Python (``-I -S``: nothing of this checkout, which it may not read).
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REQUIRE = "ATLAS_REQUIRE_SECOND_USER"

# Runs as the other user: one JSON request per line on stdin, one JSON answer per line.
INTRUDER = r'''
import base64, json, os, socket, sys, threading, time
heard = []          # one entry per connection: bytes received (base64) and fds passed
lock = threading.Lock()

def serve(listener, mode):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=talk, args=(conn, mode), daemon=True).start()

def talk(conn, mode):
    entry = {"data": "", "fds": 0}
    with lock:
        heard.append(entry)
    if mode == "fake":
        conn.sendall(b"pid 1\nexit 0\n")
    elif mode == "garbage":
        conn.sendall(os.urandom(4096) + b"\n" + b"\xff" * 65536)
    conn.settimeout(3)
    got = b""
    try:
        while len(got) < 1 << 22:
            data, anc, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(64))
            for level, kind, raw in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    entry["fds"] += len(raw) // 4
                    for i in range(0, len(raw) - len(raw) % 4, 4):
                        os.close(int.from_bytes(raw[i:i + 4], sys.byteorder))
            if not data:
                break
            got += data
            entry["data"] = base64.b64encode(got).decode()
    except OSError:
        pass
    if mode == "hang":
        time.sleep(3600)
    conn.close()

def act(req):
    op = req["op"]
    if op == "mkdir":
        os.mkdir(req["path"], req.get("mode", 0o755)); os.chmod(req["path"], req.get("mode", 0o755))
    elif op == "rename":
        os.rename(req["src"], req["dst"])
    elif op == "symlink":
        os.symlink(req["target"], req["path"])
    elif op == "mkfifo":
        os.mkfifo(req["path"], 0o666)
    elif op == "write":
        # Never waits: a named pipe planted at the same place earlier has no reader.
        fd = os.open(req["path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o644)
        with open(fd, "wb") as fh:
            fh.write(base64.b64decode(req.get("data", "")))
            if req.get("size"):
                fh.truncate(req["size"])
        os.chmod(req["path"], req.get("mode", 0o644))
    elif op == "chmod":
        os.chmod(req["path"], req["mode"])
    elif op == "listen":
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(req["path"])
        os.chmod(req["path"], 0o777)
        listener.listen(16)
        if req.get("mode") != "deaf":
            threading.Thread(target=serve, args=(listener, req.get("mode", "silent")),
                             daemon=True).start()
        else:
            held.append(listener)
    elif op == "heard":
        with lock:
            return [dict(e) for e in heard]
    else:
        raise ValueError(op)
    return True

held = []
for line in sys.stdin:
    try:
        answer = {"ok": act(json.loads(line))}
    except Exception as exc:
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
'''


def require(reason: str) -> None:
    """Skip, or fail where CI asks for every second-user test to run."""
    if os.environ.get(REQUIRE):
        pytest.fail(f"{reason} ({REQUIRE} is set)")
    pytest.skip(reason)


def _unused_id() -> int:
    for uid in range(61000, 62000):
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        try:
            grp.getgrgid(uid)
            continue
        except KeyError:
            return uid
    raise AssertionError("no unused uid between 61000 and 62000")


def _python_for(uid: int) -> str | None:
    """An interpreter the other user can run: the system's, or this one's own base."""
    for candidate in (getattr(sys, "_base_executable", ""), "/usr/bin/python3",
                      shutil.which("python3") or ""):
        if not candidate or not os.path.exists(candidate):
            continue
        try:
            done = subprocess.run([candidate, "-I", "-S", "-c", "print(1)"], user=uid,
                                  group=uid, extra_groups=[], cwd="/",
                                  capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return candidate
    return None


class Intruder:
    """The other user's process: ``do(op, ...)`` acts as that user and says what
    happened (True, or the error's text)."""

    def __init__(self, uid: int, python: str) -> None:
        self.uid = uid
        self.process = subprocess.Popen(
            [python, "-I", "-S", "-u", "-c", INTRUDER], user=uid, group=uid,
            extra_groups=[], cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env={"PATH": "/usr/bin:/bin"})

    def do(self, op: str, **args: Any) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        return answer.get("ok", answer.get("error"))

    def must(self, op: str, **args: Any) -> None:
        done = self.do(op, **args)
        assert done is True, (op, args, done)

    def heard(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.do("heard")
        return found

    def end(self) -> None:
        self.process.kill()
        self.process.wait(10)


@pytest.fixture(scope="module")
def other_uid() -> tuple[int, str]:
    """An unused uid and a Python it can run; skipped (failed in CI) where the suite
    cannot act as another user."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        require("acting as a second local user needs root (CI runs the suite as root)")
    uid = _unused_id()
    python = _python_for(uid)
    if python is None:
        require(f"no Python that uid {uid} may run (the system's /usr/bin/python3)")
    assert python is not None
    return uid, python


@pytest.fixture
def intruder(other_uid: tuple[int, str]) -> Iterator[Intruder]:
    found = Intruder(*other_uid)
    yield found
    found.end()


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder like /tmp: root's, sticky, everyone may write. Outside the test's own
    tmp_path, which the other user cannot reach."""
    folder = Path(tempfile.mkdtemp(prefix="atlas-lu-"))
    os.chmod(folder, 0o1777)
    yield folder
    end_servers_under(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A folder everyone may write, without the sticky bit: anyone may rename or remove
    what is in it."""
    folder = Path(tempfile.mkdtemp(prefix="atlas-lu-open-"))
    os.chmod(folder, 0o777)
    yield folder
    end_servers_under(folder)
    shutil.rmtree(folder, ignore_errors=True)


def servers_started_with(temp: Path) -> list[int]:
    """The pids of the command servers started with ``TMPDIR=temp`` in their environment
    (as the tests' clients start them, in the background), wherever their socket is."""
    found = []
    marker = b"TMPDIR=" + os.fsencode(temp)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"server" in argv and b"start" in argv and marker in environ:
            found.append(int(entry.name))
    return found


def end_servers_under(temp: Path) -> None:
    """End, by pid, every command server that a test's client started in the background
    with ``TMPDIR=temp``."""
    for pid in servers_started_with(temp):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def chown_tree(path: Path, uid: int) -> None:
    for root, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), uid, uid)
    os.lchown(path, uid, uid)


class Delayed:
    """A command run under strace, which holds one system call back for a while before
    it runs (``inject=...:delay_enter``), so that another user's move lands exactly in
    the gap between what atlas checked and what it then does."""

    def __init__(self, argv: list[str], syscall: str, trace: Path, *, path: str | None = None,
                 env: dict[str, str] | None = None, delay_s: float = 3.0) -> None:
        strace = shutil.which("strace")
        if strace is None:
            require("strace is needed to hold a system call back (apt-get install strace)")
        assert strace is not None
        self.trace = trace
        only = ["-P", path] if path else ["-e", f"trace={syscall}"]
        self.process = subprocess.Popen(
            [strace, "-qq", "-o", str(trace), *only,
             "-e", f"inject={syscall}:delay_enter={int(delay_s * 1_000_000)}", "--", *argv],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env)
        self.syscall = syscall

    def reached(self, timeout: float = 60) -> bool:
        """Wait until the command is held at the call (True) or has ended without making
        it (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.trace.exists() and f"{self.syscall}(" in self.trace.read_text(
                    errors="replace"):
                return True
            if self.process.poll() is not None:
                return False
            time.sleep(0.01)
        raise AssertionError(f"the command neither reached {self.syscall} nor ended")

    def result(self, timeout: float = 60) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out, err


def wait_for(condition: Callable[[], object], seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")
