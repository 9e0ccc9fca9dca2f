"""The MCP Inspector's CLI (the TypeScript SDK's client, which most harnesses embed),
installed once from npm at a pinned version, and what a test needs around it: its
environment, a record of what it sent (a tee over stdio, a TCP relay over HTTP), and a
stand-in browser for its OAuth flow."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.runner import child_env

PACKAGE = "@modelcontextprotocol/inspector"
VERSION = "2.12.0"
REQUIRE = "ATLAS_REQUIRE_INSPECTOR"  # set by .ci/run: a missing Inspector fails, not skips


def unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE):
        pytest.fail(f"{reason} ({REQUIRE} is set, so the Inspector tests must run)")
    pytest.skip(reason)


def install(cache: Path) -> Path:
    """The Inspector's CLI under ``cache`` (npm-installed there once; other test
    processes wait on the lock meanwhile)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        unavailable("node or npm is not installed: the MCP Inspector cannot run")
    folder = cache / f"inspector-{VERSION}"
    binary = folder / "node_modules" / ".bin" / "mcp-inspector"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            done = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder),
                 f"{PACKAGE}@{VERSION}"], capture_output=True, text=True, timeout=900)
            if done.returncode != 0 or not binary.exists():
                unavailable(f"npm could not install {PACKAGE}@{VERSION}: "
                            f"{done.stderr.strip()[-400:]}")
    return binary


@dataclass
class Inspector:
    binary: Path
    home: Path

    def run(self, *args: str, env: dict[str, str] | None = None,
            timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """``mcp-inspector --cli --format json ARGS``; the JSON document it printed is
        the last line of stdout."""
        environ = child_env()
        environ.update({"HOME": str(self.home), "MCP_INSPECTOR_SECRET_STORE": "memory",
                        "NO_COLOR": "1", **(env or {})})
        return subprocess.run([str(self.binary), "--cli", "--format", "json", *args],
                              capture_output=True, text=True, timeout=timeout, env=environ,
                              stdin=subprocess.DEVNULL)


    def against(self, server: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
        """``run(ARGS)`` against the server a config entry describes (the Inspector's
        `mcpServers` format: ``command``/``args``/``env``, or ``type``/``url``/``headers``),
        with generous timeouts: a loaded machine starts and answers slowly."""
        config = self.home / "servers.json"
        config.write_text(json.dumps({"mcpServers": {"atlas": {
            **server, "connectionTimeout": 120_000, "requestTimeout": 300_000}}}))
        return self.run("--config", str(config), "--server", "atlas", *args, timeout=420)


def document(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """What the Inspector printed as JSON: on stdout for a result, on stderr for an error
    envelope (its `--format json` contract); both read, the result first."""
    for stream in (done.stdout, done.stderr):
        for line in reversed(stream.strip().splitlines()):
            if line.startswith("{"):
                try:
                    found = json.loads(line)
                except ValueError:
                    continue
                if isinstance(found, dict):
                    return found
    raise AssertionError(f"no JSON from the Inspector: {done.stdout[-800:]} "
                         f"{done.stderr[-800:]}")


TEE = """import subprocess, sys
log = open(sys.argv[1], "ab", buffering=0)
child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE)
for line in sys.stdin.buffer:
    log.write(line)
    child.stdin.write(line)
    child.stdin.flush()
child.stdin.close()
sys.exit(child.wait())
"""


def teed(log: Path, *command: str) -> list[str]:
    """``command``, with every line the client sends it also written to ``log``."""
    return [sys.executable, "-c", TEE, str(log), *command]


@dataclass
class Relay:
    """A TCP relay on 127.0.0.1 in front of a server, keeping what clients sent."""

    target: tuple[str, int]
    sent: list[bytes] = field(default_factory=list)
    port: int = 0

    def text(self) -> str:
        return b"".join(self.sent).decode("utf-8", "replace")


@contextmanager
def relay(port: int) -> Iterator[Relay]:
    keeper = Relay(("127.0.0.1", port))
    listener = socket.create_server(("127.0.0.1", 0))
    keeper.port = listener.getsockname()[1]
    lock = threading.Lock()
    pumps: list[threading.Thread] = []
    sockets: list[socket.socket] = []

    def pump(src: socket.socket, dst: socket.socket, keep: bool) -> None:
        try:
            while data := src.recv(65536):
                if keep:
                    with lock:
                        keeper.sent.append(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def accept() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(keeper.target)
            sockets.extend((client, server))
            for args in ((client, server, True), (server, client, False)):
                thread = threading.Thread(target=pump, args=args, daemon=True)
                thread.start()
                pumps.append(thread)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield keeper
    finally:
        listener.close()
        for s in sockets:
            s.close()
        acceptor.join(timeout=10)
        for thread in pumps:
            thread.join(timeout=10)


def fake_browser(folder: Path) -> tuple[Path, Path]:
    """A program the Inspector opens URLs with (``BROWSER``): it writes each URL to a
    file, where the test, as the person at the browser, picks it up."""
    opened = folder / "opened.txt"
    program = folder / "browser"
    program.write_text(f"#!{sys.executable}\nimport sys\n"
                       f"with open({str(opened)!r}, 'a') as f:\n"
                       "    f.write(sys.argv[-1] + '\\n')\n")
    program.chmod(0o755)
    return program, opened


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
