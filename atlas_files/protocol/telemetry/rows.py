"""Telemetry rows: ``telemetry/<machine>.json``, one live row per machine.

A row is state, not a document: a machine probed every five minutes would otherwise make
288 versions a day. The prober replaces the row atomically (temp file, fsync, rename), so
a reader sees the old row or the new one, never part of either. Whether a row is stale is
computed when it is read, from the machine's probe interval; nothing ever sweeps rows.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from atlas_files.facts import timeutil
from atlas_files.facts.names import is_name
from atlas_files.storage import config as configmod
from atlas_files.storage import fsio, jsonfile

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

DEFAULT_STALE_AFTER_INTERVALS = 3.0
# A GPU counts as busy when a process is listed on it or this much memory is in use: an
# idle card holds a few hundred MiB for the driver's contexts, and processes of other
# containers are invisible to NVML, so memory alone must also be able to say "busy".
BUSY_MIB = 1024
LIMITS = (
    "each row is what an outside prober saw at observed_at, not the present; a row older "
    "than stale_after_s is stale. Telemetry shows load, never intent: a lease says who "
    "means to use a machine next."
)
_RESOURCE_RE = re.compile(r"(?P<machine>.+)\.gpu(?P<index>\d{1,4})")


class RowView(NamedTuple):
    """A machine's row as read now: the stored facts plus age and staleness."""

    machine: str
    reachable: bool | None  # None: no readable row (never probed, or damaged)
    observed_at: str | None
    observer: str | None
    age_s: float | None
    stale: bool
    stale_after_s: float
    gpus: list[dict[str, Any]] = []  # noqa: RUF012 - never changed in place
    error: str | None = None
    nvml: dict[str, Any] | None = None
    host: str | None = None
    probe: str | None = None
    duration_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine, "reachable": self.reachable,
            "observed_at": self.observed_at, "observer": self.observer, "age_s": self.age_s,
            "stale": self.stale, "gpus": self.gpus, "error": self.error,
            "stale_after_s": self.stale_after_s, "nvml": self.nvml, "host": self.host,
            "probe": self.probe, "duration_s": self.duration_s,
        }


def row_path(record: Record, machine: str) -> Path:
    return record.telemetry_dir / f"{machine}.json"


def encode(row: dict[str, Any]) -> bytes:
    return json.dumps(row, indent=1, ensure_ascii=False).encode() + b"\n"


def write_row(record: Record, row: dict[str, Any]) -> Path:
    """Replace the live row of ``row["machine"]``; a reader never sees a partial file."""
    path = row_path(record, row["machine"])
    with fsio.open_folder(path.parent, within=record.opened, create=True) as folder:
        return folder.replace_atomic(path.name, encode(row))


def load_row(path: Path) -> dict[str, Any]:
    """The stored row at ``path``; ValueError (``jsonfile.JSONDamage``) if it is not a
    readable JSON object (nested too deeply, a number out of range, not UTF-8), or is a
    symlink (never followed: it may lead outside the record) or a folder."""
    return jsonfile.need_object(jsonfile.read(path), "a telemetry row")


def folder_problem(record: Record) -> str | None:
    """What is wrong with telemetry/ itself (a file in its place), or None."""
    folder = record.root / "telemetry"
    if os.path.lexists(folder) and not os.path.isdir(folder):
        return (f"{folder} should be the folder of telemetry rows, but something else is in "
                "its place: no row can be read or written until it is a folder again")
    try:
        os.listdir(folder)
    except FileNotFoundError:
        pass
    except OSError as exc:  # no permission: rows of machines not in atlas.yaml are unseen
        return f"{folder} cannot be listed ({exc.strerror or exc}): rows may be missing"
    return None


def _stale_after(record: Record, machine: str) -> float:
    spec = record.config.machines.get(machine)
    if spec is None:  # a row of a machine since removed from atlas.yaml
        interval = timeutil.parse_duration(configmod.DEFAULT_PROBE_INTERVAL)
        return interval * DEFAULT_STALE_AFTER_INTERVALS
    return spec.interval_s * spec.stale_after_intervals


def view(record: Record, machine: str, at: datetime | None = None) -> RowView:
    """The row of ``machine`` as read at ``at`` (default now), with age and staleness."""
    stale_after = _stale_after(record, machine)
    path = row_path(record, machine)
    try:
        row = load_row(path)
    except FileNotFoundError:
        return RowView(machine, None, None, None, None, True, stale_after,
                       error="never probed: no row yet (run `atlas telemetry probe`)")
    except NotADirectoryError:
        return RowView(machine, None, None, None, None, True, stale_after,
                       error=folder_problem(record) or f"no row: {path.parent} is no folder")
    except OSError as exc:
        return RowView(machine, None, None, None, None, True, stale_after,
                       error=f"unreadable row {path.name}: {exc.strerror or exc}")
    except (ValueError, UnicodeDecodeError) as exc:
        return RowView(machine, None, None, None, None, True, stale_after,
                       error=f"damaged row {path.name}: {exc}")
    observed = row.get("observed_at")
    age: float | None = None
    try:
        then = timeutil.parse_time(str(observed))
        age = round(((at or timeutil.now()) - then).total_seconds(), 1)
    except (TypeError, ValueError):
        pass
    reachable = row.get("reachable")
    gpus = row.get("gpus")
    nvml = row.get("nvml")
    duration = row.get("duration_s")
    return RowView(
        machine=machine,
        reachable=reachable if isinstance(reachable, bool) else None,
        observed_at=str(observed) if observed is not None else None,
        observer=row.get("observer") if isinstance(row.get("observer"), str) else None,
        age_s=age,
        # A row whose time cannot be read cannot vouch for the present either.
        stale=age is None or age > stale_after,
        stale_after_s=stale_after,
        gpus=gpus if isinstance(gpus, list) else [],
        error=row.get("error") if isinstance(row.get("error"), str) else None,
        nvml=nvml if isinstance(nvml, dict) else None,
        host=row.get("host") if isinstance(row.get("host"), str) else None,
        probe=row.get("probe") if isinstance(row.get("probe"), str) else None,
        duration_s=float(duration) if isinstance(duration, int | float)
        and not isinstance(duration, bool) else None,
    )


def machine_names(record: Record) -> list[str]:
    """Machines in atlas.yaml, then machines with a row but no longer in atlas.yaml."""
    names = list(record.config.machines)
    try:
        files = sorted(os.listdir(record.telemetry_dir))
    except OSError:  # folder_problem reports a file in its place, or no permission
        files = []
    for name in files:
        # Temp files (writes in flight, crash debris) never end in .json.
        stem = name[:-5] if name.endswith(".json") else ""
        if stem and is_name(stem) and stem not in names:
            names.append(stem)
    return names


def ls(record: Record, machines: list[str] | None = None,
       at: datetime | None = None) -> list[RowView]:
    when = at or timeutil.now()
    return [view(record, m, when) for m in (machines or machine_names(record))]


def parse_resource(resource: str) -> tuple[str, int] | None:
    """``gpubox.gpu3`` -> ("gpubox", 3); None for a resource that names no GPU."""
    m = _RESOURCE_RE.fullmatch(resource)
    if not m or not is_name(m.group("machine")):
        return None
    return m.group("machine"), int(m.group("index"))


def resource_usage(record: Record, resource: str) -> dict[str, Any] | None:
    """Memory in use on the GPU a lease resource ``<machine>.gpu<N>`` names, from the
    machine's last row. None if the name is not of that shape or the machine has no row.
    If the last probe did not reach the machine, memory is None and reachable is False;
    if the machine answered but not with a sample, memory is None, reachable is True and
    ``error`` says what it answered; if that GPU does not exist, None.
    """
    parsed = parse_resource(resource)
    if parsed is None:
        return None
    machine, index = parsed
    row = view(record, machine)
    if row.reachable is None:  # no row, or none that can be read
        return None
    base = {
        "machine": machine, "gpu_index": index, "memory_used_mib": None,
        "memory_total_mib": None, "observed_at": row.observed_at, "age_s": row.age_s,
        "stale": row.stale, "reachable": row.reachable, "error": row.error,
    }
    if not row.reachable or (row.error and not row.gpus):
        return base
    for gpu in row.gpus:
        if isinstance(gpu, dict) and gpu.get("index") == index:
            base["memory_used_mib"] = gpu.get("memory_used_mib")
            base["memory_total_mib"] = gpu.get("memory_total_mib")
            return base
    return None


def busy_gpus(record: Record, min_used_mib: int = BUSY_MIB) -> list[dict[str, Any]]:
    """GPUs whose machine's last row shows them in use (a process listed, or at least
    ``min_used_mib`` of memory used), machine by machine. Stale rows are included with
    ``stale: true``: the caller decides whether an old reading still counts.
    """
    out: list[dict[str, Any]] = []
    for row in ls(record):
        if not row.reachable:
            continue
        for gpu in row.gpus:
            if not isinstance(gpu, dict) or not isinstance(gpu.get("index"), int):
                continue
            used = gpu.get("memory_used_mib")
            procs = gpu.get("processes") or []
            in_use = bool(procs) or (isinstance(used, (int, float)) and used >= min_used_mib)
            if not in_use:
                continue
            out.append({
                "resource": f"{row.machine}.gpu{gpu['index']}", "machine": row.machine,
                "gpu_index": gpu["index"], "memory_used_mib": used,
                "memory_total_mib": gpu.get("memory_total_mib"),
                "processes": len(procs) if isinstance(procs, list) else 0,
                "observed_at": row.observed_at, "age_s": row.age_s, "stale": row.stale,
            })
    return out
