"""Machine telemetry: one live row per machine, written by an outside prober.

* ``sample()`` reads this machine's GPUs through NVML (it only returns; it never writes).
* ``probe_once(record, observer, machines)`` runs each machine's probe command and writes its
  row, ``reachable: false`` with the reason when the machine did not answer, or
  ``reachable: true`` with an error when it answered something that is not a sample. It
  runs only commands the prober's user trusts (its own probes file, or an atlas.yaml
  probe it approved: see ``telemetry.trust``); for any other, the row says it was not run.
* ``ls(record)`` reads the rows, computing age and staleness at read time.
* ``resource_usage`` and ``busy_gpus`` put memory in use beside leases.

Importing this package is cheap: NVML and subprocess machinery load only when used.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from atlas_files.telemetry.rows import (
    LIMITS,
    RowView,
    busy_gpus,
    folder_problem,
    ls,
    parse_resource,
    resource_usage,
    row_path,
    view,
)

if TYPE_CHECKING:
    from atlas_files.record import Record
    from atlas_files.telemetry.probe import Outcome
    from atlas_files.telemetry.trust import Trust

__all__ = [
    "LIMITS", "RowView", "add_machine", "busy_gpus", "folder_problem", "ls", "parse_resource",
    "probe_once", "resource_usage", "row_path", "sample", "view",
]


def sample() -> dict[str, Any]:
    """This machine's GPUs as NVML reports them (see ``telemetry.nvml.sample``)."""
    from atlas_files.telemetry import nvml

    return nvml.sample()


def probe_once(record: Record, observer: str | None, machines: list[str] | None = None, *,
               probes_file: str | os.PathLike[str] | None = None,
               trust: Trust | None = None) -> list[Outcome]:
    """Probe ``machines`` (default: all in atlas.yaml and the probes file) once and write
    their rows. ``trust`` (default: read from ``probes_file`` or the per-user files) says
    which commands may run."""
    from atlas_files.telemetry import probe as probemod

    return probemod.probe_once(record, observer, machines or (), probes_file=probes_file,
                               trust=trust)


def add_machine(record: Record, name: str, probe: str, *, timeout: str = "10s",
                interval: str = "5m") -> Record:
    """Add (or replace) a machine in atlas.yaml; returns the record re-read."""
    from atlas_files.telemetry import probe as probemod

    return probemod.add_machine(record, name, probe, timeout=timeout, interval=interval)
