"""Machine telemetry: one live row per machine, written by an outside prober.

* ``nvml.sample()`` reads this machine's GPUs through NVML (it only returns; it never writes).
* ``probe.probe_once(record, observer, machines)`` runs each machine's probe command and writes its
  row, ``reachable: false`` with the reason when the machine did not answer, or
  ``reachable: true`` with an error when it answered something that is not a sample. It
  runs only commands the prober's user trusts (its own probes file, or an atlas.yaml
  probe it approved: see ``telemetry.trust``); for any other, the row says it was not run.
* ``ls(record)`` reads the rows, computing age and staleness at read time.
* ``resource_usage`` and ``busy_gpus`` put memory in use beside leases.

Importing this package is cheap (the rows alone): `lease ls` reads them. NVML and the
prober's subprocess machinery are in ``nvml`` and ``probe``, imported by what runs them.
"""

from __future__ import annotations

from atlas_files.protocol.telemetry.rows import (
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

__all__ = [
    "LIMITS", "RowView", "busy_gpus", "folder_problem", "ls", "parse_resource",
    "resource_usage", "row_path", "view",
]
