"""The outside prober: run each machine's probe command, write each machine's row.

A machine never writes its own row: a machine that is down cannot say so, and a row it
stopped writing would read as a silence. The prober writes ``reachable: false`` with the
reason instead, a fact with a time and an observer.

The prober runs only commands its own user trusts (see ``trust``): those of its own probes
file, and those of atlas.yaml that the user approved string for string. Any other probe
string in atlas.yaml is not run; its row says so, with the command that approves it.

Each probe command runs in its own session (process group). When it outlives its
timeout the whole group is killed, not just the shell, so an ``ssh`` under ``sh -c`` dies
too; its output goes to temp files rather than pipes, so a grandchild that escapes the
group and keeps a pipe open cannot hold the prober past the timeout either.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files.facts import timeutil
from atlas_files.facts.errors import AtlasError, BadInput, DamagedFile, NotFound
from atlas_files.facts.names import check_name
from atlas_files.protocol.telemetry import rows
from atlas_files.protocol.telemetry import trust as trustmod
from atlas_files.storage import fsio, jsonfile, schemas
from atlas_files.storage.record import require_identity

if TYPE_CHECKING:
    from atlas_files.storage.config import Machine
    from atlas_files.storage.record import Record

LOCAL = trustmod.LOCAL
MAX_ANSWER_BYTES = 4 * 1024 * 1024
_GPU_KEYS = (
    "index", "uuid", "name", "memory_used_mib", "memory_total_mib", "utilization_gpu_pct",
    "utilization_memory_pct", "temperature_c", "power_w", "power_limit_w", "processes",
    "unread",
)
_PROCESS_KEYS = ("pid", "name", "kinds", "memory_used_mib")


@dataclass(frozen=True)
class Outcome:
    """What one probe of one machine found, and where its row was written."""

    machine: str
    reachable: bool
    error: str | None
    duration_s: float
    path: Path
    row: dict[str, Any]
    not_run: bool = False  # the probe command was not run: the prober does not trust it


class RowNotWritten(AtlasError):
    """The probe ran but its row could not be written (a full disk, a read-only folder)."""

    kind = "environment"


class _Round:
    """The probe commands in flight in one round, so an interrupt can kill them all."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.procs: set[Any] = set()
        self.cancelled = threading.Event()

    def kill_all(self) -> None:
        self.cancelled.set()
        with self.lock:
            for proc in self.procs:
                _kill_group(proc.pid)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def local_command() -> list[str]:
    """`local`: this machine's sampler in a child process, so a hung driver is timed out
    like any remote machine."""
    return [sys.executable, "-m", "atlas_files", "telemetry", "sample", "--json"]


def _tail(data: bytes, limit: int = 300) -> str:
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    text = " | ".join(lines[-3:])
    return text if len(text) <= limit else "..." + text[-limit:]


def run_command(machine: Machine, rnd: _Round | None = None) -> tuple[bytes | None, str | None]:
    """Run the probe command of ``machine``: (its stdout, None) or (None, why it failed)."""
    rnd = rnd or _Round()
    argv: list[str] | str = local_command() if machine.probe == LOCAL else machine.probe
    timeout = machine.timeout_s
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                argv, shell=isinstance(argv, str), stdin=subprocess.DEVNULL, stdout=out,
                stderr=err, start_new_session=True,
            )
        except OSError as exc:
            return None, f"cannot start the probe command: {exc.strerror or exc}"
        with rnd.lock:
            rnd.procs.add(proc)
            if rnd.cancelled.is_set():  # interrupted between our start and the kill
                _kill_group(proc.pid)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait()
            return None, (f"no answer within {timeutil.format_duration(timeout)}; "
                          "the probe command was killed")
        finally:
            with rnd.lock:
                rnd.procs.discard(proc)
        if rnd.cancelled.is_set():
            return None, "the prober was interrupted"
        err.seek(0)
        stderr = err.read(64 * 1024)
        if proc.returncode != 0:
            how = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
                   else f"exited {proc.returncode}")
            detail = _tail(stderr)
            return None, f"the probe command {how}" + (f": {detail}" if detail else "")
        out.seek(0)
        # One byte past the limit is enough for ``readings`` to refuse an oversized answer.
        return out.read(MAX_ANSWER_BYTES + 1), None


def _pick(obj: Any, keys: Iterable[str]) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ValueError(f"expected an object, found {type(obj).__name__}")
    return {k: obj[k] for k in keys if k in obj}


def readings(answer: bytes) -> dict[str, Any]:
    """The parts of a sampler's answer a row keeps; ValueError if it is not a sample.

    Unknown keys are dropped, so a newer sampler on the far side still fits the row.
    """
    if len(answer) > MAX_ANSWER_BYTES:
        raise ValueError(f"more than {MAX_ANSWER_BYTES // (1024 * 1024)} MiB of output")
    try:
        data = jsonfile.loads(answer)  # a deep or out-of-range answer is damage, no crash
    except (ValueError, UnicodeDecodeError):
        first = answer.decode("utf-8", "replace").strip().splitlines()[:1]
        raise ValueError(f"not JSON: {first[0][:120] if first else '(empty output)'}") from None
    if not isinstance(data, dict) or not isinstance(data.get("gpus"), list):
        raise ValueError("a JSON document without a `gpus` list")
    gpus = []
    for gpu in data["gpus"]:
        entry = _pick(gpu, _GPU_KEYS)
        if isinstance(entry.get("processes"), list):
            entry["processes"] = [_pick(p, _PROCESS_KEYS) for p in entry["processes"]]
        gpus.append(entry)
    nvml = data.get("nvml")
    return {
        "host": data.get("host"), "sampled_at": data.get("sampled_at"),
        "nvml": _pick(nvml, ("available", "reason", "driver_version")) if nvml else nvml,
        "gpus": gpus,
    }


def probe_machine(record: Record, machine: Machine, observer: str,
                  rnd: _Round | None = None, refusal: str | None = None) -> Outcome | None:
    """Probe one machine and write its row; None if the round was interrupted.

    Three outcomes: the command answered with a sample (``reachable: true``, readings, no
    error); it answered, but with something else (``reachable: true``, no GPUs, ``error``
    saying what came back: the machine is up, its sampler is not); or it failed or did not
    answer in time (``reachable: false`` and why). With ``refusal`` the command is not run
    at all, and the row says ``reachable: false`` with the refusal as its error: the
    prober learned nothing of the machine, and says why rather than keeping silent.
    """
    rnd = rnd or _Round()
    started = time.monotonic()
    answer, error = (None, refusal) if refusal else run_command(machine, rnd)
    row: dict[str, Any] = {
        "machine": machine.name, "observed_at": timeutil.format_time(timeutil.now()),
        "observer": observer, "reachable": answer is not None, "probe": machine.probe,
        "duration_s": round(time.monotonic() - started, 3), "gpus": [], "error": error,
    }
    if answer is not None:
        try:
            found = readings(answer)
            candidate = {**row, **found, "error": None}
            problems = schemas.errors("telemetry", candidate)
            if problems:
                where, message = problems[0]
                raise ValueError(f"{where}: {message}")
            row = candidate
        except ValueError as exc:
            row["error"] = f"answered, but not with a telemetry sample: {exc}"
    if rnd.cancelled.is_set():
        return None  # an interrupted probe says nothing about the machine
    try:
        path = rows.write_row(record, row)
    except OSError as exc:
        raise RowNotWritten(
            f"the row of {machine.name} was not written: {exc.strerror or exc}",
            hint=f"check that {record.telemetry_dir} is writable and has space",
        ) from None
    return Outcome(machine.name, row["reachable"], row["error"], row["duration_s"], path, row,
                   not_run=refusal is not None)


def select(record: Record, names: Iterable[str],
           trust: trustmod.Trust | None = None) -> list[trustmod.Target]:
    """The machines to probe: those named, else all of atlas.yaml and of the prober's own
    probes file, each with the command this prober will run (or why it will run none).
    Unknown names: exit 2."""
    trust = trust or trustmod.Trust(os.path.realpath(record.root))
    listed = record.config.machines
    known = list(listed) + [n for n in trust.probes if n not in listed]
    wanted = list(dict.fromkeys(names))
    if not known:
        raise BadInput(
            "atlas.yaml lists no machines to probe, and neither does a probes file of yours",
            hint="add one under `machines:`, e.g. `gpubox: {probe: \"ssh gpubox atlas "
            "telemetry sample --json\", timeout: 10s, interval: 5m}` (or probe: local)",
        )
    for name in wanted:
        check_name(name, "machine name")
        if name not in known:
            raise NotFound(
                f"no machine {name!r} in atlas.yaml (machines: {', '.join(known)})",
                hint="add it under `machines:` in atlas.yaml, or name one of those",
            )
    return [trust.target(listed.get(n), n) for n in (wanted or known)]


def probe_once(record: Record, observer: str | None, names: Iterable[str] = (),
               on_outcome: Callable[[Outcome], None] | None = None, *,
               probes_file: str | os.PathLike[str] | None = None,
               trust: trustmod.Trust | None = None) -> list[Outcome]:
    """Probe the machines side by side (so one hanging machine delays no other's row).

    The commands come from ``trust`` (default: loaded now from ``probes_file`` or the
    per-user files, see ``trust.load``); an atlas.yaml probe it does not cover is not run,
    and its row says so. Every machine is probed even when a row cannot be written; the
    first such failure is raised (RowNotWritten) once the round is over.
    """

    who = require_identity(observer)
    trust = trust or trustmod.load(record, probes_file)
    targets = select(record, names or (), trust)
    folder = record.telemetry_dir
    problem = rows.folder_problem(record)
    if problem:
        raise DamagedFile(problem, hint="move it aside; `atlas telemetry probe` makes the "
                          "folder again")
    with fsio.open_folder(folder, within=record.opened, create=True) as made:
        made.clean_debris()
    rnd = _Round()
    outcomes: list[Outcome] = []
    failures: list[RowNotWritten] = []
    pool = ThreadPoolExecutor(max_workers=min(16, len(targets)))
    try:
        futures = [pool.submit(probe_machine, record, t.machine, who, rnd, t.refusal)
                   for t in targets]
        for future in futures:
            try:
                outcome = future.result()
            except RowNotWritten as exc:
                failures.append(exc)
                continue
            if outcome is not None:
                outcomes.append(outcome)
                if on_outcome:
                    on_outcome(outcome)
    except BaseException:
        rnd.kill_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if failures:
        raise failures[0]
    return outcomes


def probe_every(record: Record, observer: str | None, names: Iterable[str], every_s: float,
                on_outcome: Callable[[Outcome], None] | None = None,
                on_error: Callable[[str], None] | None = None,
                rounds: int | None = None, *,
                probes_file: str | os.PathLike[str] | None = None) -> int:
    """Probe every ``every_s`` seconds until interrupted (KeyboardInterrupt) or ``rounds``
    are done; returns the rounds completed. A failing machine never stops the loop; a row
    that cannot be written (disk full) is reported and the loop goes on. The probes and
    approvals are read again each round, so an approval given meanwhile takes effect.
    """
    if not every_s > 0:
        raise BadInput(f"--every must be more than 0 seconds, not {every_s}")
    wanted = list(names)
    select(record, wanted, trustmod.load(record, probes_file))  # bad names fail now
    done = 0
    start = time.monotonic()
    try:
        while rounds is None or done < rounds:
            try:
                probe_once(record, observer, wanted, on_outcome, probes_file=probes_file)
            except (RowNotWritten, OSError) as exc:
                if on_error:
                    on_error(f"round {done + 1}: {exc}")
            done += 1
            # Rounds start on the ticks of one schedule; a round that overran skips the
            # ticks it missed rather than piling rounds up behind it.
            elapsed = time.monotonic() - start
            wake = start + every_s * (elapsed // every_s + 1)
            while (rounds is None or done < rounds) and (delay := wake - time.monotonic()) > 0:
                time.sleep(min(delay, 3600.0))  # sleep() refuses very long waits
    except KeyboardInterrupt:
        pass
    return done


def parse_every(text: str) -> float:
    """``--every`` in seconds: a number (``300``, ``0.5``) or a duration (``5m``)."""
    bad = BadInput(f"bad --every {text[:40]!r}: it must be a positive number of seconds",
                   hint="e.g. --every 300 or --every 5m")
    if len(text) > 40:  # a pasted blob: refuse it without echoing it whole
        raise bad
    try:
        value = float(text)
    except ValueError:
        try:
            value = timeutil.parse_duration(text)
        except (BadInput, OverflowError):  # OverflowError: more digits than a float holds
            raise bad from None
    if not value > 0 or value != value or value == float("inf"):
        raise bad
    return value


def add_machine(record: Record, name: str, probe: str, *, timeout: str = "10s",
                interval: str = "5m") -> Record:
    """Add or replace ``name`` under ``machines:`` in atlas.yaml (atomically, under a lock
    so two local writers do not lose each other's machine)."""
    check_name(name, "machine name")
    if not probe.strip():
        raise BadInput("the probe command is empty", hint="give a command, or `local`")
    for text in (timeout, interval):
        try:
            timeutil.parse_duration(text)
        except OverflowError:
            raise BadInput(f"the duration {text[:40]!r} is too long",
                           hint="write it like 10s or 5m") from None
    def change(raw: dict[str, Any]) -> dict[str, Any]:
        machines = dict(raw.get("machines") or {})
        machines[name] = {"probe": probe, "timeout": timeout, "interval": interval}
        raw["machines"] = machines
        return raw

    # The one lock every atlas.yaml rewriter takes (`atlas init --project` too).
    record.update_config(change)
    return record
