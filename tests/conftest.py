"""Shared fixtures: a fresh record in a temp folder, and the real `atlas` command (in-process
by default, a child process on request)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click.formatting
import pytest
from click.testing import CliRunner
from hypothesis import settings as hypothesis_settings

from atlas_files.record import Record

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


@pytest.fixture(autouse=True, scope="session")
def _private_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """atlas keeps parsed atlas.yaml texts in the user's cache folder (yamlcache.py): the
    suite's records, and the children it starts, get a folder of the run's own."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


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
LONG_FIRST = ("test_sync_adversarial", "test_mcp_inspector", "test_mcp_http_hostile",
              "test_site_browser", "test_hooks", "test_sync_race", "test_race",
              "test_mcp_oauth_bounds", "test_mcp_limits", "test_local_users_fuzz",
              "test_site_build", "test_mcp_http", "test_hostile_record", "test_search_race",
              "test_mcp_oauth_browser", "test_hardening_site", "test_telemetry_probe",
              "test_sync", "test_sync_trust", "test_api_sync", "test_dfs", "test_lease_clock")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))


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
    process: bool = False,
) -> Result:
    """Run the CLI's real top-level handler, ``atlas_files.cli.main``, as the user would.

    In-process by default: each child interpreter costs far more than the command it runs.
    ``process=True`` starts ``python -m atlas_files`` instead, for tests whose subject is the
    process boundary (exit codes seen by a shell, signals, races, a closed pipe).
    A command running past ``timeout`` seconds raises ``subprocess.TimeoutExpired`` either
    way.
    """
    argv: list[str] = []
    if record is not None:
        argv += ["--record", str(record)]
    if identity is not None:
        argv += ["--as", identity]
    argv += list(args)
    if process:
        return _run_process(argv, input, cwd, env, timeout)
    return _run_in_process(argv, input, cwd, env, timeout)


def _child_env(env: dict[str, str] | None) -> dict[str, str]:
    """The test's environment less every ATLAS_* variable, plus those the test passes."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
    if env:
        full_env.update(env)
    return full_env


def _run_process(argv: list[str], input: str | bytes | None, cwd: Path | None,
                 env: dict[str, str] | None, timeout: float) -> Result:
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(
        [sys.executable, "-m", "atlas_files", *argv], input=data, capture_output=True,
        cwd=cwd, env=_child_env(env), timeout=timeout,
        stdin=None if data is not None else subprocess.DEVNULL,
    )
    return Result(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


class _TimedOut(BaseException):
    """Raised by the alarm into a command that ran past its timeout; a BaseException so
    that no ``except Exception`` of the command takes it for an error of its own."""


def _run_in_process(argv: list[str], input: str | bytes | None, cwd: Path | None,
                    env: dict[str, str] | None, timeout: float) -> Result:
    """``main(argv)`` with its own stdin/stdout/stderr, environment and working folder, as
    in a fresh process, and everything it changes globally put back afterwards."""
    from atlas_files.cli import main

    _forget_per_process_caches()
    wanted = _child_env(env)
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_sigterm = signal.getsignal(signal.SIGTERM)
    timed_out = False

    def on_alarm(_signum: int, _frame: object) -> None:
        raise _TimedOut

    # stdin is empty and not a terminal when no input is given, like /dev/null.
    runner = CliRunner()
    with warnings.catch_warnings(), runner.isolation(input=input or b"") as (out, err, _):
        os.environ.clear()
        os.environ.update(wanted)
        # Help is wrapped to the width a child writing to a pipe gets, not CliRunner's 80.
        click.formatting.FORCED_WIDTH = _help_width(wanted)
        # A command that never ends (a loop that should have been refused) fails the test
        # as a child past its timeout would, instead of hanging the suite.
        saved_sigalrm = signal.signal(signal.SIGALRM, on_alarm)
        try:
            if cwd is not None:
                os.chdir(cwd)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                main(argv)
                code = 0  # main always exits; reaching here would be a bug of main's
            except SystemExit as exc:
                code = _exit_status(exc.code)
            except _TimedOut:
                timed_out, code = True, -signal.SIGKILL
            except Exception:  # noqa: BLE001 - as the interpreter does with an uncaught one
                traceback.print_exc(file=sys.stderr)
                code = 1
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, saved_sigalrm)
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            signal.signal(signal.SIGTERM, saved_sigterm)
        stdout, stderr = out.getvalue(), err.getvalue()
    if timed_out:
        raise subprocess.TimeoutExpired(["atlas", *argv], timeout, stdout, stderr)
    return Result(code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))


def _forget_per_process_caches() -> None:
    """Empty what the library keeps per process about a record, so each call starts as a
    new process would. (Caches of the package's own data, such as compiled schemas, hold
    the same in every process and are kept.) Reuse within one process is tested on the
    library itself, e.g. test_corrections.py's test_marks_follow_new_entries_within_one_process.
    """
    from atlas_files import corrections

    corrections._CACHE.clear()


def _help_width(env: dict[str, str]) -> int:
    """click's help width in a process whose stdout is not a terminal: $COLUMNS, else 80."""
    try:
        columns = int(env.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    return max(min(columns if columns > 0 else 80, 80) - 2, 50)


def _exit_status(code: object) -> int:
    """The status a process would exit with for ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


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
