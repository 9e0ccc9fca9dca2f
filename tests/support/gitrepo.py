"""A throwaway git repository for tests, with commits by named authors at chosen times
(GIT_AUTHOR_DATE / GIT_COMMITTER_DATE), on any branch."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import time
from pathlib import Path

import pytest

from atlas_files.cli import main


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without the caller's atlas and git settings, and a git config that
    cannot come from this machine's home folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATLAS_", "GIT_"))}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_NAME="test", GIT_AUTHOR_EMAIL="test@example.invalid",
               GIT_COMMITTER_NAME="test", GIT_COMMITTER_EMAIL="test@example.invalid")
    env.update(extra or {})
    return env


class GitRepo:
    def __init__(self, path: Path, env: dict[str, str] | None = None) -> None:
        self.path = path
        self.env = env or git_env()
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, env: dict[str, str] | None = None) -> str:
        proc = subprocess.run(["git", *args], cwd=self.path, env={**self.env, **(env or {})},
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise AssertionError(f"git {args} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc.stdout

    def write(self, rel: str, text: str = "x\n") -> Path:
        path = self.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def commit(self, message: str, *files: str, author: str = "test",
               ago_s: float = 0.0) -> str:
        """Write and commit ``files`` as ``author``, dated ``ago_s`` seconds ago."""
        for rel in files:
            self.write(rel, f"{message}\n")
        self.git("add", "-A")
        when = f"@{int(time.time() - ago_s)} +0000"
        self.git("commit", "-q", "--no-verify", "--allow-empty", "-m", message, env={
            "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": f"{author}@example.invalid",
            "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
        return self.git("rev-parse", "HEAD").strip()


def cli(*args: str, record: Path | None = None, identity: str | None = None
        ) -> tuple[int, str, str]:
    """Run `atlas` in this process: (exit code, stdout, stderr)."""
    argv = (["--record", str(record)] if record else []) + (
        ["--as", identity] if identity else [])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        with pytest.raises(SystemExit) as exit_:
            main([*argv, *args])
    code = exit_.value.code
    return (code if isinstance(code, int) else 1), out.getvalue(), err.getvalue()
