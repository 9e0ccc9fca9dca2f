"""Demo scene: an outside prober visits this machine and one it cannot reach."""

from __future__ import annotations

import os
from collections.abc import Callable

from atlas_files.protocol import telemetry
from atlas_files.protocol.telemetry import nvml, probe
from atlas_files.protocol.telemetry.trust import Trust
from atlas_files.storage.config import Machine
from atlas_files.storage.record import Record

# `.invalid` never resolves (RFC 2606), so this probe fails the same way everywhere.
UNREACHABLE_PROBE = ("ssh -o BatchMode=yes -o ConnectTimeout=3 gpubox.invalid "
                     "atlas telemetry sample --json")
# A machine that answers, but not with a sample: it is up, and its probe command prints a
# notice instead of running the sampler.
NO_SAMPLER_PROBE = "echo 'sampling disabled on this host until Monday'"


def _show(row: telemetry.RowView) -> list[str]:
    head = f"  {row.machine}: observed by {row.observer} at {row.observed_at}"
    if row.stale:
        head += " (STALE)"
    if not row.reachable:
        return [head, f"    reachable: false, error: {row.error}"]
    if row.error:
        return [head, f"    reachable: true, no GPUs read, error: {row.error}"]
    lines = [head, "    reachable: true"]
    lines += ["    " + ln for ln in nvml.describe({"nvml": row.nvml, "gpus": row.gpus})]
    return lines


def scene(record: Record, say: Callable[[str], None]) -> None:
    say("\n== telemetry: one live row per machine, written by an outside prober ==")
    probe.add_machine(record, "this-machine", "local", timeout="30s", interval="5m")
    probe.add_machine(record, "gpubox", UNREACHABLE_PROBE, timeout="10s", interval="5m")
    probe.add_machine(record, "webbox", NO_SAMPLER_PROBE, timeout="10s", interval="5m")
    say("atlas.yaml now lists three machines: this-machine (probe: local), gpubox "
        f"(probe: {UNREACHABLE_PROBE}) and webbox, which is up but does not sample "
        f"(probe: {NO_SAMPLER_PROBE})")
    say("prober-1 probes them side by side; each probe command has its own timeout. It runs "
        "its own commands for gpubox and webbox (a probes file of its own): a probe string "
        "in the shared atlas.yaml runs only once the prober's user approves it")
    names = ["this-machine", "gpubox", "webbox"]
    # The prober's own commands, as its probes file would give them: the demo must not
    # read or write the approvals of whoever runs it.
    own = Trust(os.path.realpath(record.root), probes={
        "gpubox": Machine("gpubox", UNREACHABLE_PROBE, 10.0, 300.0),
        "webbox": Machine("webbox", NO_SAMPLER_PROBE, 10.0, 300.0),
    })
    for outcome in probe.probe_once(record, "prober-1", names, trust=own):
        state = ("UNREACHABLE" if not outcome.reachable
                 else "reachable, but no sample" if outcome.error else "reachable")
        say(f"  wrote telemetry/{outcome.path.name}: {state} ({outcome.duration_s:.1f}s)")
    say("the rows, as `atlas telemetry ls` reads them (staleness computed now):")
    for row in telemetry.ls(record):
        for line in _show(row):
            say(line)
    busy = telemetry.busy_gpus(record)
    say(f"GPUs in use by the last rows: {', '.join(g['resource'] for g in busy) or 'none'}; "
        "`atlas lease ls` shows them beside the leases")
    say("an unreachable machine is a row saying so, with the reason and who saw it: a fact, "
        "not a silence. Rows are replaced, never versioned, and kept out of git.")
