"""The sampler: this machine's GPUs, read through NVML (package ``nvidia-ml-py``).

Every NVML call is wrapped. A reading the card or driver does not give (NotSupported,
NoPermission, a struct the driver does not know, an odd value) becomes null, and the
reason is kept in the GPU's ``unread`` map; a missing library or driver makes the whole
sample "nvml unavailable (<reason>)" with no GPUs. Sampling never raises for the state
of the machine, because "no GPU here" is an answer, not a failure.

``load_library`` is the one seam through which NVML is reached: tests replace it (or put
a fake ``pynvml`` module first on the path of a child process).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from atlas_files.facts import timeutil

MIB = 1024 * 1024


def load_library() -> Any:
    """Import NVML's Python binding. Imported here only: it costs at import time, and the
    deprecated ``pynvml`` distribution warns on import (depend on ``nvidia-ml-py``)."""
    import pynvml  # noqa: PLC0415 - the one seam to NVML: tests replace it, `ls` never pays

    return pynvml


class _Reader:
    """Calls into NVML; a failed or odd reading becomes None, its reason kept."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.unread: dict[str, str] = {}

    def call(self, field: str, fn_name: str, *args: Any) -> Any:
        fn = getattr(self.lib, fn_name, None)
        if fn is None:
            self.unread[field] = f"{fn_name} is missing from this NVML binding"
            return None
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - any failure of one reading is a null
            self.unread[field] = _reason(exc)
            return None

    def take(self) -> dict[str, str]:
        unread, self.unread = self.unread, {}
        return unread


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):  # older bindings return bytes
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value.strip("\x00").strip()[:200] or None
    return None


def _count(value: Any, upper: float | None = None) -> int | None:
    # bool is an int in Python, and NVML never means True by a count.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    if upper is not None and value > upper:
        return None
    return value


def _mib(value: Any) -> int | None:
    n = _count(value)
    return None if n is None else n // MIB


def _watts(milliwatts: Any) -> float | None:
    n = _count(milliwatts, upper=100_000_000)  # 100 kW: no card draws that; it is garbage
    return None if n is None else round(n / 1000.0, 1)


def _field(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name)
    except Exception:  # noqa: BLE001 - a struct of a mismatched layout may raise anything
        return None


def _processes(r: _Reader, handle: Any) -> list[dict[str, Any]] | None:
    found: dict[int, dict[str, Any]] = {}
    answered = False
    for kind, fn_name in (("compute", "nvmlDeviceGetComputeRunningProcesses"),
                          ("graphics", "nvmlDeviceGetGraphicsRunningProcesses")):
        procs = r.call(f"processes.{kind}", fn_name, handle)
        if procs is None:
            continue
        try:
            items = list(procs)
        except TypeError:
            r.unread[f"processes.{kind}"] = "not a list"
            continue
        answered = True
        for p in items:
            pid = _count(_field(p, "pid"))
            if pid is None:
                continue
            entry = found.setdefault(pid, {"pid": pid, "name": None, "kinds": [],
                                           "memory_used_mib": None})
            entry["kinds"].append(kind)
            used = _mib(_field(p, "usedGpuMemory"))
            if used is not None:
                entry["memory_used_mib"] = max(used, entry["memory_used_mib"] or 0)
    for pid, entry in found.items():
        entry["name"] = _text(r.call(f"process.{pid}.name", "nvmlSystemGetProcessName", pid))
    # None: NVML could not say; []: it said there are none.
    return [found[pid] for pid in sorted(found)] if answered else None


def _gpu(r: _Reader, index: int) -> dict[str, Any]:
    gpu: dict[str, Any] = {
        "index": index, "uuid": None, "name": None, "memory_used_mib": None,
        "memory_total_mib": None, "utilization_gpu_pct": None,
        "utilization_memory_pct": None, "temperature_c": None, "power_w": None,
        "power_limit_w": None, "processes": None, "unread": {},
    }
    handle = r.call("handle", "nvmlDeviceGetHandleByIndex", index)
    if handle is None:
        gpu["unread"] = r.take()
        return gpu
    gpu["uuid"] = _text(r.call("uuid", "nvmlDeviceGetUUID", handle))
    gpu["name"] = _text(r.call("name", "nvmlDeviceGetName", handle))
    mem = r.call("memory", "nvmlDeviceGetMemoryInfo", handle)
    if mem is not None:
        gpu["memory_used_mib"] = _mib(_field(mem, "used"))
        gpu["memory_total_mib"] = _mib(_field(mem, "total"))
    util = r.call("utilization", "nvmlDeviceGetUtilizationRates", handle)
    if util is not None:
        gpu["utilization_gpu_pct"] = _count(_field(util, "gpu"), upper=100)
        gpu["utilization_memory_pct"] = _count(_field(util, "memory"), upper=100)
    sensor = getattr(r.lib, "NVML_TEMPERATURE_GPU", 0)
    gpu["temperature_c"] = _count(
        r.call("temperature_c", "nvmlDeviceGetTemperature", handle, sensor), upper=300
    )
    gpu["power_w"] = _watts(r.call("power_w", "nvmlDeviceGetPowerUsage", handle))
    gpu["power_limit_w"] = _watts(
        r.call("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", handle)
    )
    gpu["processes"] = _processes(r, handle)
    gpu["unread"] = r.take()
    return gpu


def _unavailable(reason: str) -> dict[str, Any]:
    return {
        "host": socket.gethostname(), "sampled_at": timeutil.format_time(timeutil.now()),
        "nvml": {"available": False, "reason": reason, "driver_version": None}, "gpus": [],
    }


def sample(load: Callable[[], Any] | None = None) -> dict[str, Any]:
    """Read every GPU of this machine once: ``{host, sampled_at, nvml, gpus}``."""
    try:
        lib = (load or load_library)()
    except ImportError as exc:
        return _unavailable(f"nvidia-ml-py is not installed: {_reason(exc)}")
    try:
        lib.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no library, no driver, no permission
        return _unavailable(_reason(exc))
    try:
        r = _Reader(lib)
        driver = _text(r.call("driver_version", "nvmlSystemGetDriverVersion"))
        count = _count(r.call("count", "nvmlDeviceGetCount"), upper=4096)
        if count is None:
            why = r.take().get("count", "the GPU count is not a number")
            return _unavailable(f"cannot count GPUs: {why}")
        r.take()
        gpus = [_gpu(r, i) for i in range(count)]
    finally:
        try:
            lib.nvmlShutdown()
        except Exception:  # noqa: BLE001, S110 - shutting down a broken library is moot
            pass
    return {
        "host": socket.gethostname(), "sampled_at": timeutil.format_time(timeutil.now()),
        "nvml": {"available": True, "reason": None, "driver_version": driver}, "gpus": gpus,
    }


def describe(data: dict[str, Any]) -> list[str]:
    """Lines a person reads: the NVML state, then one line per GPU."""
    nvml = data.get("nvml") or {}
    if not nvml.get("available"):
        return [f"nvml: unavailable ({nvml.get('reason') or 'no reason given'})"]
    gpus = data.get("gpus") or []
    lines = [f"nvml: driver {nvml.get('driver_version') or 'unknown'}, "
             f"{len(gpus)} GPU{'' if len(gpus) == 1 else 's'}"]
    lines += [gpu_line(g) for g in gpus if isinstance(g, dict)]
    return lines


def gpu_line(g: dict[str, Any]) -> str:
    def show(value: Any, unit: str = "") -> str:
        return "n/a" if value is None else f"{value}{unit}"

    procs = g.get("processes")
    nprocs = "processes n/a" if procs is None else f"{len(procs)} process" + (
        "" if len(procs) == 1 else "es")
    return (
        f"gpu{g.get('index')}  {g.get('name') or 'unknown'}  "
        f"mem {show(g.get('memory_used_mib'))}/{show(g.get('memory_total_mib'))} MiB  "
        f"util {show(g.get('utilization_gpu_pct'), '%')}  "
        f"{show(g.get('temperature_c'), 'C')}  {show(g.get('power_w'), 'W')}  {nprocs}"
    )
