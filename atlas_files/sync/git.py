"""The `git` command line, run through subprocess.

No Python git library: they cost 135-255 ms to import and bypass the user's credential
helpers, ssh config and `insteadOf` rules, which the command line honours. Every call is
non-interactive (a prompt would hang an agent forever), reads nothing from stdin unless
given, and speaks C locale so that the few messages parsed here read the same everywhere.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from atlas_files.errors import AtlasError, BadInput

# merge-tree --write-tree (a merge computed without touching the work tree) came in 2.38.
MIN_VERSION = (2, 38)
# Network steps (fetch, push) get this long before they are called failed; local steps
# are quick, but a huge record's status may take a while on a cold disk.
NETWORK_TIMEOUT_S = 120.0
LOCAL_TIMEOUT_S = 300.0

_ENV_OVERRIDES = {
    "GIT_TERMINAL_PROMPT": "0",  # fail instead of asking for a password on a terminal
    "LC_ALL": "C",
    "LANGUAGE": "C",
    "GIT_OPTIONAL_LOCKS": "0",  # `git status` must not take the index lock to refresh it
}
_VERSION_RE = re.compile(r"git version (\d+)\.(\d+)")
_checked: dict[str, tuple[int, int]] = {}


class GitFailed(AtlasError):
    """git refused or could not reach the remote (network, credentials, a damaged
    repository): an environment problem, not a bug and not a lost race."""

    exit_code = 2


@dataclass(frozen=True)
class Done:
    code: int
    out: bytes
    err: str

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", "surrogateescape").strip()


def executable() -> str:
    found = shutil.which("git")
    if found is None:
        raise BadInput("`git` is not installed (or not on PATH); atlas sync runs it",
                       hint="install git 2.38 or newer")
    return found


def check_version() -> tuple[int, int]:
    """The installed git's (major, minor); BadInput if older than 2.38. Asked once per
    process and git binary."""
    exe = executable()
    if exe in _checked:
        return _checked[exe]
    done = subprocess.run([exe, "--version"], capture_output=True, stdin=subprocess.DEVNULL,
                          timeout=LOCAL_TIMEOUT_S, check=False)
    match = _VERSION_RE.search(done.stdout.decode("ascii", "replace"))
    if done.returncode != 0 or match is None:
        raise BadInput(f"could not tell the version of {exe} (`git --version` said "
                       f"{done.stdout[:80]!r})", hint="install git 2.38 or newer")
    found = (int(match.group(1)), int(match.group(2)))
    if found < MIN_VERSION:
        raise BadInput(
            f"atlas sync needs git {MIN_VERSION[0]}.{MIN_VERSION[1]} or newer (for "
            f"`git merge-tree --write-tree`); {exe} is {found[0]}.{found[1]}",
            hint="upgrade git, or put a newer git first on PATH",
        )
    _checked[exe] = found
    return found


class Git:
    """Runs git in one work tree."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.cwd = cwd
        self.exe = executable()
        self.env = {**os.environ, **_ENV_OVERRIDES, **(env or {})}

    def run(self, *args: str, input: bytes | None = None, ok: Sequence[int] = (0,),
            timeout: float = LOCAL_TIMEOUT_S, env: dict[str, str] | None = None) -> Done:
        """Run ``git ARGS``; GitFailed unless it exits with a code in ``ok``."""
        try:
            proc = subprocess.run(
                [self.exe, *args], cwd=self.cwd, input=input, capture_output=True,
                stdin=None if input is not None else subprocess.DEVNULL,
                env={**self.env, **env} if env else self.env, timeout=timeout, check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitFailed(f"`git {args[0]}` took over {timeout:.0f} s and was stopped",
                            hint="check the network and the remote, then run `atlas sync`"
                            ) from None
        done = Done(proc.returncode, proc.stdout,
                    proc.stderr.decode("utf-8", "replace").strip())
        if done.code not in ok:
            raise failed(args, done)
        return done

    def out(self, *args: str, input: bytes | None = None,
            env: dict[str, str] | None = None) -> str:
        return self.run(*args, input=input, env=env).text


def failed(args: Sequence[str], done: Done) -> GitFailed:
    """git's own words as a GitFailed: its fatal and error lines (the cause), else its
    last lines."""
    lines = [line.strip() for line in done.err.splitlines() if line.strip()]
    causes = [line for line in lines if line.startswith(("fatal:", "error:"))]
    said = " / ".join(causes[:2] or lines[-3:])
    return GitFailed(f"`git {' '.join(args[:2])}` failed (exit {done.code}): "
                     f"{said or 'no message'}",
                     hint="fix what git says, then run `atlas sync` again")


def split_z(data: bytes) -> list[str]:
    """NUL-separated output as paths (git quotes nothing with -z)."""
    return [p.decode("utf-8", "surrogateescape") for p in data.split(b"\0") if p]
