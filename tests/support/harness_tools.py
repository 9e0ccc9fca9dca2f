"""The agent harnesses' real binaries, pinned, installed from npm once into a cache folder
that every run (and every xdist worker of one run) shares.

``binary("claude")`` is the path of the installed executable. Where npm is missing, or
the install fails (no registry reachable), the test is skipped with the reason, except
where ``ATLAS_REQUIRE_HARNESSES`` is set (``.ci/run`` sets it and installs node and npm
first): there a missing harness fails the test, as a missing Chromium does.

The cache is ``$ATLAS_HARNESS_CACHE``, else ``~/.cache/atlas-files-tests/harnesses``;
each pin gets its own folder (``claude-code-2.1.332``), filled under an exclusive lock
and published by a rename, so a worker never sees half an install and two workers never
install the same pin at once. Deleting the folder is always safe.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRE_ENV = "ATLAS_REQUIRE_HARNESSES"
INSTALL_TIMEOUT = 900  # seconds: Claude Code's native binary alone is 400 MB


@dataclass(frozen=True)
class Pin:
    package: str
    version: str
    command: str  # the name of the executable the package installs

    @property
    def folder(self) -> str:
        return f"{self.package.rsplit('/', 1)[-1]}-{self.version}"


# The versions the suite was written against; docs/sessions.md names the same.
PINS = {
    "claude": Pin("@anthropic-ai/claude-code", "2.1.332", "claude"),
    "codex": Pin("@openai/codex", "0.171.0", "codex"),
    "gemini": Pin("@google/gemini-cli", "0.61.0", "gemini"),
}


def cache_root() -> Path:
    configured = os.environ.get("ATLAS_HARNESS_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "atlas-files-tests" / "harnesses"


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{reason} ({REQUIRE_ENV} is set, so this is a failure, not a skip)")
    pytest.skip(reason)


def binary(name: str) -> Path:
    """The executable of harness ``name`` at its pinned version, installed if need be."""
    pin = PINS[name]
    npm = shutil.which("npm")
    if npm is None:
        _unavailable(f"npm is not installed: the real {pin.package} cannot be installed "
                     "(install node and npm; .ci/run does)")
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / pin.folder
    executable = final / "node_modules" / ".bin" / pin.command
    with open(root / f".lock-{pin.folder}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (final / ".complete").exists():
            problem = _install(str(npm), pin, root)
            if problem:
                _unavailable(problem)
    return executable


def _install(npm: str, pin: Pin, root: Path) -> str | None:
    """Install ``pin`` under ``root``; None on success, else what went wrong."""
    final = root / pin.folder
    staging = root / f".staging-{pin.folder}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(final, ignore_errors=True)  # a folder without .complete is a crash's
    staging.mkdir()
    (staging / "package.json").write_text('{"private": true}\n')
    try:
        proc = subprocess.run(
            # Bounded fetches: offline, the install fails in minutes, not npm's own hour.
            [npm, "install", "--no-audit", "--no-fund", "--no-save", "--fetch-retries=2",
             "--fetch-timeout=120000", "--prefix", str(staging), f"{pin.package}@{pin.version}"],
            capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
            stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        shutil.rmtree(staging, ignore_errors=True)
        return f"npm install {pin.package}@{pin.version} took over {INSTALL_TIMEOUT} s"
    if proc.returncode != 0 or not (staging / "node_modules" / ".bin" / pin.command).exists():
        shutil.rmtree(staging, ignore_errors=True)
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return f"npm install {pin.package}@{pin.version} failed: {' / '.join(tail)}"
    (staging / ".complete").write_text(f"{pin.package}@{pin.version}\n")
    os.rename(staging, final)
    return None
