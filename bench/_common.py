"""Helpers shared by the benchmark scripts: timing runs side by side."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager


def time_command_cpu(argv: Sequence[str], env: dict[str, str] | None = None
                     ) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run of ``argv``: the CPU time moves
    less than the wall time when other work shares the machine."""
    with open(os.devnull, "wb") as devnull:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=devnull, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, list(argv))
    return wall, usage.ru_utime + usage.ru_stime


def interleaved_cpu(commands: dict[str, Sequence[str]], rounds: int,
                    env: dict[str, str] | None = None) -> dict[str, tuple[float, float]]:
    """Median wall and median CPU time of each command, run in turns."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for argv in commands.values():  # warm the page cache once
        time_command_cpu(argv, env)
    for _ in range(rounds):
        for name, argv in commands.items():
            samples[name].append(time_command_cpu(argv, env))
    return {name: (statistics.median(w for w, _ in values),
                   statistics.median(c for _, c in values))
            for name, values in samples.items()}


def interleaved(commands: dict[str, Sequence[str]], rounds: int,
                env: dict[str, str] | None = None) -> dict[str, float]:
    """Median wall time of each command, run in turns so drift hits all alike."""
    return {name: wall for name, (wall, _) in interleaved_cpu(commands, rounds, env).items()}


def atlas_argv() -> list[str]:
    """The installed console script, as an agent would call it."""
    script = shutil.which("atlas")
    return [script] if script else [sys.executable, "-m", "atlas_files"]


def best_of(fn: Callable[[], float], runs: int = 3) -> float:
    return min(fn() for _ in range(runs))


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}


@contextmanager
def command_server(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """A command server (atlas_files/server/) of the installed atlas on a socket of its
    own, for the length of the block: ``env`` with ATLAS_SERVER naming it."""
    folder = tempfile.mkdtemp(prefix="atlas-bench-srv-")
    os.chmod(folder, 0o700)
    sock = os.path.join(folder, "s.sock")
    subprocess.run([*atlas_argv(), "server", "start", "--socket", sock], check=True,
                   env=env, stdout=subprocess.DEVNULL)
    try:
        yield {**env, "ATLAS_SERVER": sock}
    finally:
        subprocess.run([*atlas_argv(), "server", "stop", "--socket", sock], env=env,
                       stdout=subprocess.DEVNULL)
        shutil.rmtree(folder, ignore_errors=True)
