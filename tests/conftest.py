"""Shared fixtures: a fresh record in a temp folder, and the real `atlas` command run on it
(support.runner's run_atlas: in-process by default, a child process on request)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings
from support.runner import Result, run_atlas

from atlas_files.storage.record import Record

# CI runs every property test with the same seeds, so a submission is judged on the code,
# not on the draw; a developer's run (CI unset) keeps exploring new examples each time.
# The fixtures of the git tests (isolated_git, team), of the real harnesses and of the
# second local user (intruder, shared_tmp, open_tmp) live beside their helpers.
pytest_plugins = ["support.gitteam", "support.fixtures", "support.cmdserver", "support.local_user"]

hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")

# Some tests stop a child with SIGINT, as Ctrl-C in a terminal would. A suite started in the
# background (`cmd &` in a script) inherits SIGINT ignored, and children would inherit that
# too and never stop; a handled signal is reset to the default in a child, so handle it here.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The environment the suite was started in: where this person's own config and cache
# folders really are (test_support_user_folders.py holds the suite away from them).
STARTED_IN = dict(os.environ)
# What atlas keeps of a person's own, outside every record: the config folder
# (ownfiles.config_dir: accepted sync settings, approved probes, per-user probes) and the
# cache folder (usercache.py: parsed atlas.yaml and mkdocs.yml texts, path-lease indexes,
# rendered link-check pages). Both follow these variables before HOME.
USER_FOLDERS = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME")
_RUN_FOLDERS: dict[str, str] = {}


@pytest.fixture(autouse=True, scope="session")
def _private_user_folders(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Session-scoped fixtures, and the children they start, get folders of the run's own."""
    for variable in USER_FOLDERS:
        _RUN_FOLDERS[variable] = str(tmp_path_factory.mktemp(variable.lower()))
        os.environ[variable] = _RUN_FOLDERS[variable]


@pytest.fixture(autouse=True)
def _own_user_folders(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own config and cache folders, in the environment, so that every
    child it starts inherits them: a sync accepted or a probe approved by one test never
    reaches the person's real ~/.config/atlas, nor another test. A fixture of a wider
    scope that gave its tests folders of its own (a module's team that accepted its sync
    settings once) keeps them."""
    for variable in USER_FOLDERS:
        if os.environ.get(variable) == _RUN_FOLDERS.get(variable):
            monkeypatch.setenv(variable, str(tmp_path_factory.mktemp(variable.lower())))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent under -p no:xdist
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto`` (pyproject's addopts): two per core the suite may use, at
    most 8. Most of the suite's time is spent waiting on children, timers, git and browsers
    rather than computing, so one worker per core leaves the cores idle (measured on 2
    cores: 2 workers took a third longer than 4); the cap keeps the race tests, each of
    which starts a dozen or more processes, from all contending at once on a big machine.
    Each module runs on one worker, so a command line naming test files gets no more
    workers than files, and none for one file: starting workers would only add their
    start-up to it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = max(2, min(2 * (cores or 1), 8))
    files = _files_named(config)
    if files is not None:
        workers = min(workers, files) if files > 1 else 0
    return workers


def _files_named(config: pytest.Config) -> int | None:
    """How many test files the command line names, or None if it names a folder."""
    files = set()
    for arg in config.args:
        path = config.invocation_params.dir / arg.split("::")[0]
        if not path.is_file():
            return None
        files.add(path.resolve())
    return len(files)


# The modules that took longest in a serial run, longest first. Each module runs on one
# worker (pyproject's --dist loadscope), so these go out first: one of them handed out
# last would keep the run going long after the other workers ran out of work. A module
# missing here only costs time, never a result.
LONG_FIRST = ("test_sync_hostile", "test_mcp_inspector", "test_mcp_http_hostile",
              "test_site_browser", "test_precommit_hooks", "test_sync_race", "test_artifacts_race",
              "test_mcp_oauth_bounds", "test_mcp_limits", "test_local_users_fuzz",
              "test_site_build", "test_mcp_http", "test_record_hostile", "test_search_race",
              "test_mcp_oauth_browser", "test_site_hostile", "test_telemetry_probe",
              "test_sync", "test_sync_trust", "test_api_sync", "test_dfs", "test_leases_clock")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))


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
