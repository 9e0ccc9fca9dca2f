"""A team on one git remote for the sync tests: a bare remote (or one served by `git
daemon` on 127.0.0.1), clones of it in temp folders, and `atlas` run in this process."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from atlas_files.storage.record import Record
from support.git import git, isolate_git
from support.runner import Result, run_atlas


def cli(root: Path, *args: str, identity: str | None = None) -> Result:
    """`atlas ARGS` in this process against the record at ``root``."""
    return run_atlas(*args, record=root, identity=identity)


class Team:
    """A remote at ``url`` and the clones made of it under ``root``."""

    def __init__(self, root: Path, url: str) -> None:
        self.root = root
        self.url = url

    def clone(self, name: str, *, accept: bool = True) -> Path:
        """A clone of the remote; ``accept``: its person accepts the record's sync
        settings, as each member of a team does once (`atlas sync accept`)."""
        path = self.root / name
        git(self.root, "clone", "-q", self.url, str(path))
        if accept:
            accept_sync(path)
        return path

    def remote_head(self) -> str:
        line = git(self.root, "ls-remote", self.url, "refs/heads/main")
        return line.split()[0] if line else ""

    def inspect(self) -> Path:
        """A fresh clone of the remote as it is now, for reading what landed."""
        path = self.root / f"inspect-{time.monotonic_ns()}"
        git(self.root, "clone", "-q", self.url, str(path))
        return path


def accept_sync(root: Path) -> None:
    """`atlas sync accept --yes` in the record at ``root``."""
    code, _, err = cli(root, "sync", "accept", "--yes")
    assert code == 0, err


def bare_remote(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    git(where, "init", "-q", "--bare", "-b", "main", "remote.git")
    return where / "remote.git"


def start_team(root: Path, url: str, *, auto: bool = True, fetch_every: str = "0s",
               projects: tuple[str, ...] = ("main",)) -> tuple[Team, Path]:
    """A team whose first clone made the record and pushed it; returns (team, that clone)."""
    team = Team(root, url)
    first = team.clone("first", accept=False)
    record = Record.init(first, list(projects))
    sync_cfg: dict[str, Any] = {"remote": "origin", "branch": "main", "auto": auto,
                                "fetch_every": fetch_every}
    record.update_config(lambda data: {**data, "sync": sync_cfg})
    accept_sync(first)
    code, out, err = cli(first, "sync")
    assert code == 0, err
    return team, first


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """Serve the bare repositories under ``base`` (push enabled) on 127.0.0.1 at a free
    port; yields the URL prefix ``git://127.0.0.1:PORT/``."""
    port = free_port()
    proc = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
         "--enable=receive-pack", "--listen=127.0.0.1", f"--port={port}",
         "--informative-errors", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise AssertionError(f"git daemon did not start: {err}")
            time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def racer_command(*args: str) -> list[str]:
    """The racer script (tests/support/sync_racer.py) in a child process."""
    return [sys.executable, str(Path(__file__).with_name("sync_racer.py")), *args]


@pytest.fixture
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git reads no user or system config, and no ATLAS_* variable of the caller leaks in
    (a module asks for it with ``pytestmark = pytest.mark.usefixtures("isolated_git")``)."""
    for key, value in isolate_git(tmp_path / "home").items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith("ATLAS_")]:
        monkeypatch.delenv(key)


@pytest.fixture
def team(tmp_path: Path, isolated_git: None) -> tuple[Team, Path]:
    """A bare remote and alice's clone of it, syncing by itself."""
    return start_team(tmp_path, str(bare_remote(tmp_path / "served")))
