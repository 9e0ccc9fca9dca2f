"""Machine telemetry: sample, probe, approve, ls.

A row is one live value per machine, written by an outside prober; age and staleness are
computed when read. The commands a prober runs are the prober's own trust decision
(its probes file, or an atlas.yaml probe string it approved), never the record's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files.api import Worker
from atlas_files.facts.names import check_name
from atlas_files.protocol import telemetry as telemetrymod
from atlas_files.protocol.telemetry import nvml
from atlas_files.protocol.telemetry import probe as probemod
from atlas_files.protocol.telemetry import trust as trustmod
from atlas_files.protocol.telemetry.probe import Outcome
from atlas_files.protocol.telemetry.rows import RowView

OnOutcome = Callable[[Outcome], None]


@dataclass(frozen=True)
class Sample:
    """This machine's GPUs as NVML reports them (``telemetry sample --json``)."""

    data: dict[str, Any]

    def lines(self) -> list[str]:
        return nvml.describe(self.data)

    def to_json(self) -> dict[str, Any]:
        return self.data


@dataclass(frozen=True)
class MachineRows:
    """Rows as read now (``telemetry ls`` and ``probe --json``)."""

    rows: tuple[RowView, ...]
    problems: tuple[str, ...] | None = None  # None: not looked at (a probe's own answer)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"limits": telemetrymod.LIMITS,
                               "machines": [r.to_json() for r in self.rows]}
        if self.problems is not None:
            out["problems"] = list(self.problems)
        return out


@dataclass(frozen=True)
class Approval:
    machine: str
    command: str
    kept_in: Path | None  # None: `local`, which needs no approval

    def to_json(self) -> dict[str, Any]:
        return {"machine": self.machine, "probe": self.command,
                "approved": self.kept_in is not None,
                "kept_in": str(self.kept_in) if self.kept_in else None}


def sample() -> Sample:
    return Sample(nvml.sample())


def rows(worker: Worker, machines: Sequence[str] | None = None) -> MachineRows:
    return MachineRows(tuple(telemetrymod.ls(worker.record, list(machines) if machines else None)))


def probe(worker: Worker, machines: Sequence[str] = (), *,
          probes_file: str | os.PathLike[str] | None = None,
          on_outcome: OnOutcome | None = None) -> MachineRows:
    """Probe ``machines`` (default: every one known) once and write their rows."""
    outcomes = probemod.probe_once(worker.record, worker.identity, machines,
                                   on_outcome or (lambda _o: None), probes_file=probes_file)
    return rows(worker, [o.machine for o in outcomes])


def machines_per_round(worker: Worker, machines: Sequence[str] = (), *,
                       probes_file: str | os.PathLike[str] | None = None) -> int:
    trust = trustmod.load(worker.record, probes_file)
    return len(probemod.select(worker.record, machines, trust))


def probe_every(worker: Worker, machines: Sequence[str], every: str,
                on_outcome: OnOutcome, on_warning: Callable[[str], None], *,
                probes_file: str | os.PathLike[str] | None = None) -> int:
    """Probe every ``every`` (seconds or a duration) until interrupted; returns the rounds."""
    interval = probemod.parse_every(every)
    return probemod.probe_every(worker.record, worker.identity, machines, interval,
                                on_outcome, on_warning, probes_file=probes_file)


def pending_probe(worker: Worker, machine: str) -> str:
    """The probe command atlas.yaml gives ``machine``, to be shown before approving it."""
    return trustmod.pending(worker.record, machine)


def approve(worker: Worker, machine: str, command: str) -> Approval:
    """Let this user's prober run exactly ``command`` for ``machine`` of this record."""
    if command == probemod.LOCAL:
        return Approval(machine, command, None)
    return Approval(machine, command, trustmod.approve(worker.record, machine, command))


def ls(worker: Worker, machines: Sequence[str] = ()) -> MachineRows:
    """Each machine's last row, age and staleness computed now."""
    record = worker.record
    wanted = [check_name(m, "machine name") for m in machines]
    known = set(record.config.machines)
    for name in wanted:
        if name not in known and not os.path.lexists(telemetrymod.row_path(record, name)):
            probemod.select(record, [name])  # raises the not-found error
    problem = telemetrymod.folder_problem(record)
    return MachineRows(tuple(telemetrymod.ls(record, wanted or None)),
                       (problem,) if problem else ())
