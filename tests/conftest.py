"""Shared fixtures: a fresh record in a temp folder, and the real `atlas` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from atlas_files.record import Record


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_atlas(
    *args: str,
    record: Path | None = None,
    identity: str | None = None,
    input: str | bytes | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> Result:
    """Run the real CLI in a child process (``python -m atlas_files``)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
    if env:
        full_env.update(env)
    cmd = [sys.executable, "-m", "atlas_files"]
    if record is not None:
        cmd += ["--record", str(record)]
    if identity is not None:
        cmd += ["--as", identity]
    cmd += list(args)
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(
        cmd, input=data, capture_output=True, cwd=cwd, env=full_env, timeout=timeout,
        stdin=None if data is not None else subprocess.DEVNULL,
    )
    return Result(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


@pytest.fixture
def record(tmp_path: Path) -> Record:
    return Record.init(tmp_path / "rec", ["web", "ml"])


@pytest.fixture
def atlas(record: Record) -> Callable[..., Result]:
    """``atlas(*args, identity=..., input=...)`` against the fixture record."""

    def run(*args: str, **kwargs: Any) -> Result:
        kwargs.setdefault("record", record.root)
        return run_atlas(*args, **kwargs)

    return run


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes: compare before and after to prove
    that nothing was written."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(root))] = p.read_bytes()
    return out
