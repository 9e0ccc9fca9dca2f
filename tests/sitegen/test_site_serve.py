"""`atlas site serve`: a live-reloading server whose pages follow the record."""

from __future__ import annotations

import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from support.cdp import free_port
from support.runner import atlas_command, child_env

from atlas_files.protocol import artifacts
from atlas_files.sitegen import ENGINES
from atlas_files.storage.record import Record


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def _wait_for(url: str, needle: str, proc: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        status, body = _get(url)
        if status == 200 and needle in body:
            return body
        time.sleep(0.5)
    raise AssertionError(f"{url} never showed {needle!r}")


@pytest.mark.parametrize("engine", ENGINES)
def test_serve_rebuilds_when_the_record_changes(tmp_path: Path, engine: str) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    artifacts.put(record, "first", "the first topic\n", author="alice")
    port = free_port()
    env = child_env()
    proc = subprocess.Popen(
        atlas_command("--record", str(record.root), "site", "serve", "--out", str(tmp_path / "out"),
                      "--dev-addr", f"127.0.0.1:{port}", "--engine", engine),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        home = _wait_for(f"{base}/index.html", "first", proc, 120)
        if engine == "mkdocs":
            assert "livereload" in home  # MkDocs injects its reload script when serving
        artifacts.put(record, "second", "a topic written while the server runs\n", author="bob")
        page = _wait_for(f"{base}/artifacts/web/second.html", "while the server runs", proc,
                         120)
        assert "bob" in page
        _wait_for(f"{base}/artifacts/index.html", "second", proc, 30)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    text = out.decode("utf-8", "replace")
    assert "Traceback" not in text, text[-3000:]
    assert "the record changed" in text
