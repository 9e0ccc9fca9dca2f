"""A minimal Chrome DevTools Protocol client over the standard library (no tests here).

Neither ``websockets`` nor ``websocket-client`` is a dependency, and the tests need only a
few calls (navigate, evaluate, screenshot, dialog events), so this speaks RFC 6455 frames
directly: masked text frames out, unmasked frames in, pings answered.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1280,900",
]


class CDPError(RuntimeError):
    pass


class WebSocket:
    def __init__(self, url: str, timeout: float = 30) -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise CDPError("the DevTools socket closed during the handshake")
            head += chunk
        status, _, self.buffer = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n", 1)[0]:
            raise CDPError(f"websocket handshake refused: {status[:200]!r}")

    def _exact(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                raise CDPError("the DevTools socket closed")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text: str, opcode: int = 0x1) -> None:
        payload = text.encode()
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def recv(self) -> str:
        message = b""
        while True:
            b1, b2 = self._exact(2)
            fin, opcode = b1 & 0x80, b1 & 0x0F
            n = b2 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            mask = self._exact(4) if b2 & 0x80 else None
            data = self._exact(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if opcode == 0x9:  # ping
                self.send(data.decode("latin-1"), 0xA)
                continue
            if opcode == 0x8:
                raise CDPError("the DevTools socket was closed by the browser")
            message += data
            if fin:
                return message.decode("utf-8")

    def close(self) -> None:
        self.sock.close()


class Browser:
    """A headless Chromium and one page of it, driven over DevTools."""

    def __init__(self, user_data_dir: Path) -> None:
        assert CHROMIUM is not None
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={user_data_dir}",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        )
        port_file = user_data_dir / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise CDPError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets: list[dict[str, Any]] = []
        while not any(t.get("type") == "page" for t in targets):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                targets = json.loads(r.read())
            if time.monotonic() > deadline:
                raise CDPError("chromium opened no page")
            time.sleep(0.1)
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime"):
            self.call(f"{domain}.enable")
        # Lifecycle events name the navigation (loaderId) they belong to; open() needs that.
        self.call("Page.setLifecycleEventsEnabled", enabled=True)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message: dict[str, Any] = json.loads(self.ws.recv())
            if message.get("id") == mine:
                if "error" in message:
                    raise CDPError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self._event(message)

    def _event(self, message: dict[str, Any]) -> None:
        self.events.append(message)
        if message["method"] == "Page.javascriptDialogOpening":
            # A dialog blocks the page; note it (the test fails on it) and dismiss it.
            self.ws.send(json.dumps({"id": 0, "method": "Page.handleJavaScriptDialog",
                                     "params": {"accept": False}}))

    def wait_event(self, name: str, timeout: float = 30,
                   where: Callable[[dict[str, Any]], bool] = lambda _params: True
                   ) -> dict[str, Any]:
        """The first event ``name`` whose params satisfy ``where`` (taken off the list)."""
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event["method"] == name and where(event.get("params", {})):
                self.events.remove(event)
                return event
        self.ws.sock.settimeout(1)
        try:
            while time.monotonic() < deadline:
                try:
                    message: dict[str, Any] = json.loads(self.ws.recv())
                except TimeoutError:
                    continue
                if "method" in message:
                    self._event(message)
                    if message["method"] == name and where(message.get("params", {})):
                        self.events.remove(message)
                        return message
        finally:
            self.ws.sock.settimeout(30)
        raise CDPError(f"no {name} within {timeout}s")

    def open(self, url: str) -> None:
        """Navigate to ``url`` and wait until that navigation's page has loaded. A load
        event alone is not enough: one of the page before (a page that navigated by itself,
        like the consent page moving on) can arrive after the navigation starts."""
        self.events = [e for e in self.events if e["method"] != "Page.lifecycleEvent"]
        loader = self.call("Page.navigate", url=url).get("loaderId")
        if loader is None:  # the same document, only the #fragment changed: nothing loads
            return
        self.wait_event("Page.lifecycleEvent",
                        where=lambda p: p.get("name") == "load" and p.get("loaderId") == loader)

    def eval(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise CDPError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def pump(self, seconds: float) -> None:
        """Let the page run for ``seconds`` while collecting its events."""
        deadline = time.monotonic() + seconds
        self.ws.sock.settimeout(0.2)
        try:
            while time.monotonic() < deadline:
                try:
                    message = json.loads(self.ws.recv())
                except TimeoutError:
                    continue
                if "method" in message:
                    self._event(message)
        finally:
            self.ws.sock.settimeout(30)

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_server(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A real `python -m http.server` on 127.0.0.1 serving ``directory``.

    It binds port 0 and says which port it got: a port picked free beforehand could be
    taken by another test worker before the server binds it, and the test would then talk
    to that worker's server."""
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
         "--directory", str(directory)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    said = proc.stdout.readline().decode()  # "Serving HTTP on 127.0.0.1 port N (...) ..."
    proc.stdout.close()  # it logs requests to stderr; nothing more comes here
    found = re.search(r" port (\d+) ", said)
    if found is None:
        proc.kill()
        proc.wait()
        raise CDPError(f"http.server did not say its port: {said!r}")
    base = f"http://127.0.0.1:{found.group(1)}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(base + "/", timeout=2):
                return proc, base
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.1)
