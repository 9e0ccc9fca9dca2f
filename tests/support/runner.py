"""The one way a test runs the `atlas` command: ``run_atlas`` (in this process by default,
as a child on request) and its ``Result``. A test that must start the child itself (in
the background, under limits, behind a wrapper) takes the command line (``atlas_command``)
and the environment (``child_env``) that ``run_atlas`` gives its child. ``snapshot`` of a
folder shows that a command wrote nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import click.formatting
from click.testing import CliRunner


def atlas_command(*args: str) -> list[str]:
    """The command line of `atlas ARGS` in a child process: this interpreter, ``-m
    atlas_files``."""
    return [sys.executable, "-m", "atlas_files", *args]


class Result(NamedTuple):
    """What a run of `atlas` did; it unpacks as ``(returncode, stdout, stderr)``."""

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


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment less every ATLAS_* variable, plus those the test passes."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
    if env:
        full_env.update(env)
    return full_env


def _run_process(argv: list[str], input: str | bytes | None, cwd: Path | None,
                 env: dict[str, str] | None, timeout: float) -> Result:
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(
        atlas_command(*argv), input=data, capture_output=True,
        cwd=cwd, env=child_env(env), timeout=timeout,
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
    wanted = child_env(env)
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_sigterm = signal.getsignal(signal.SIGTERM)
    timed_out = False

    def on_alarm(_signum: int, _frame: object) -> None:
        raise _TimedOut

    # stdin is empty and not a terminal when no input is given, like /dev/null.
    runner = CliRunner()
    with warnings.catch_warnings(), runner.isolation(input=input or b"") as (out, err, _):
        _set_environ(wanted)
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
            _set_environ(saved_env)
            signal.signal(signal.SIGTERM, saved_sigterm)
        stdout, stderr = out.getvalue(), err.getvalue()
    if timed_out:
        raise subprocess.TimeoutExpired(["atlas", *argv], timeout, stdout, stderr)
    return Result(code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))


def _set_environ(wanted: dict[str, str]) -> None:
    """Make os.environ ``wanted``, changing only the variables that differ: another thread
    of the test (a server it runs in this process) may read the environment meanwhile."""
    for key in [k for k in os.environ if k not in wanted]:
        del os.environ[key]
    for key, value in wanted.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def _forget_per_process_caches() -> None:
    """Empty what the library keeps per process about a record, so each call starts as a
    new process would. (Caches of the package's own data, such as compiled schemas, hold
    the same in every process and are kept.) Reuse within one process is tested on the
    library itself, e.g. test_corrections.py's test_marks_follow_new_entries_within_one_process.
    """
    from atlas_files.protocol import corrections

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


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes: compare before and after to prove
    that nothing was written."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(root))] = p.read_bytes()
    return out
