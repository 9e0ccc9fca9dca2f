"""Git for the tests: the one way a test runs git (``git``), the environments that keep it
away from this machine's own config (``git_env``, ``isolate_git``), and a throwaway
repository with commits by named authors at chosen times (``GitRepo``)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

# The git config of a team's clones (``isolate_git``): an identity, main as the first
# branch, no automatic gc, no advice on a detached head.
GITCONFIG = """\
[user]
\tname = Test Team
\temail = team@example.invalid
[init]
\tdefaultBranch = main
[gc]
\tauto = 0
[advice]
\tdetachedHead = false
"""


def git(cwd: Path, *args: str, env: Mapping[str, str] | None = None,
        input: str | bytes | None = None, check: bool = True) -> str:
    """``git ARGS`` in ``cwd``; its output, without the white space around it.

    ``env`` is git's whole environment: ``git_env()`` for a clean one, by default this
    process's (as a fixture such as ``isolated_git`` or ``clean_git_env`` set it). Its
    stdin is ``input``, or empty. A failure raises AssertionError with what git said,
    unless ``check`` is false."""
    data = input.encode() if isinstance(input, str) else input
    done = subprocess.run(["git", *args], cwd=cwd, env=env, input=data or b"",
                          capture_output=True, check=False)
    out = done.stdout.decode("utf-8", "replace")
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}):\n{out}"
                             f"{done.stderr.decode('utf-8', 'replace')}")
    return out.strip()


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without the caller's atlas and git settings, and a git config that
    cannot come from this machine's home folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATLAS_", "GIT_"))}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_NAME="test", GIT_AUTHOR_EMAIL="test@example.invalid",
               GIT_COMMITTER_NAME="test", GIT_COMMITTER_EMAIL="test@example.invalid")
    env.update(extra or {})
    return env


def isolate_git(home: Path) -> dict[str, str]:
    """Environment that keeps git away from this machine's own config, with ``GITCONFIG``
    in ``home`` (set it in os.environ: atlas's git children inherit it)."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "gitconfig"
    config.write_text(GITCONFIG)
    return {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


class GitRepo:
    def __init__(self, path: Path, env: dict[str, str] | None = None) -> None:
        self.path = path
        self.env = env or git_env()
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, env: dict[str, str] | None = None) -> str:
        return git(self.path, *args, env={**self.env, **(env or {})})

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
        return self.git("rev-parse", "HEAD")
