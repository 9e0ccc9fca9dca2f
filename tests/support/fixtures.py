"""pytest fixtures of the real-harness tests (registered in conftest.py's pytest_plugins):
each harness binary, installed once per run (``harness_tools``), and a HOME of the test's
own for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support import harness_tools
from support.git import git_env


@pytest.fixture(scope="session")
def claude_binary() -> Path:
    """The pinned Claude Code (skipped, or failed under ATLAS_REQUIRE_HARNESSES, where it
    cannot be installed)."""
    return harness_tools.binary("claude")


@pytest.fixture(scope="session")
def codex_binary() -> Path:
    return harness_tools.binary("codex")


@pytest.fixture(scope="session")
def gemini_binary() -> Path:
    return harness_tools.binary("gemini")


@pytest.fixture
def harness_home(tmp_path: Path) -> Path:
    """The harness's HOME: empty, the test's own."""
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def clean_git_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No identity, record or project from the caller's environment (``ATLAS_AS``,
    ``ATLAS_RECORD``, ``ATLAS_PROJECT``), and git with the suite's own identity and no
    config of the machine's (support.git.git_env)."""
    for key in ("ATLAS_AS", "ATLAS_RECORD", "ATLAS_PROJECT"):
        monkeypatch.delenv(key, raising=False)
    for key, value in git_env().items():
        if key.startswith("GIT_"):
            monkeypatch.setenv(key, value)
    yield
