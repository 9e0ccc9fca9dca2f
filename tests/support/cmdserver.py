"""A command server for a test: a socket path of its own (``sock``), a server started on
it (``server``), and what a test asks of it. Fixtures, registered for every test module
by conftest's ``pytest_plugins``."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.runner import Result, run_atlas


@pytest.fixture
def sock() -> Iterator[Path]:
    """A socket path in a private folder of its own, short enough for AF_UNIX (a test's
    tmp_path can be longer than the 107 bytes a socket path may have)."""
    folder = Path(tempfile.mkdtemp(prefix="atlas-srv-"))
    os.chmod(folder, 0o700)
    path = folder / "s.sock"
    yield path
    run_atlas("server", "stop", "--socket", str(path), process=True)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def server(sock: Path) -> Path:
    started = run_atlas("server", "start", "--socket", str(sock), process=True)
    assert started.returncode == 0, started.stderr
    return sock


def served(sock: Path) -> int:
    return int(str(server_status(sock).get("served", -1)))


def through(sock: Path, *args: str, **kwargs: object) -> Result:
    env = dict(kwargs.pop("env", None) or {})  # type: ignore[call-overload]
    env["ATLAS_SERVER"] = str(sock)
    return run_atlas(*args, env=env, process=True, **kwargs)  # type: ignore[arg-type]


def server_status(sock: Path) -> dict[str, object]:
    answer = run_atlas("server", "status", "--json", "--socket", str(sock), process=True)
    assert answer.returncode == 0, answer.stderr
    data: dict[str, object] = answer.json()
    return data


def wait_for(condition: object, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")
