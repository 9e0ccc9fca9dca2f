"""Which probe commands a prober runs: the prober's own, never the shared record's unasked.

atlas.yaml lives in the shared record, and anyone who can write the record can write it.
A probe string there is therefore only a proposal. A prober runs a shell command when:

* it comes from the prober's own probes file (``--probes FILE``, else the per-user
  ``$XDG_CONFIG_HOME/atlas/probes.yaml``), which lies outside the record; or
* it comes from atlas.yaml and the person running the prober approved exactly that string
  for exactly that record and machine (``atlas telemetry approve``); the approval is kept in
  a per-user file, as the sha256 of (record, machine, probe string), so any change to the
  string withdraws it.

``local`` runs no shell command (it runs this package's sampler), so it needs no approval.
Both per-user files are refused when they lie inside the record or when another user could
change them: then they would be no safer than atlas.yaml.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from atlas_files.facts import timeutil
from atlas_files.facts.errors import AtlasError, BadInput, DamagedFile, NotFound
from atlas_files.facts.names import check_name
from atlas_files.storage import config as configmod
from atlas_files.storage import fsio
from atlas_files.storage.ownfiles import config_dir, read_small, refuse_unsafe

if TYPE_CHECKING:
    from atlas_files.storage.config import Machine
    from atlas_files.storage.record import Record

LOCAL = "local"
PROBES_NAME = "probes.yaml"
APPROVALS_NAME = "approved-probes.json"


def load_probes(path: Path, record_root: str) -> dict[str, Machine]:
    """The machines of a probes file: ``name: {probe, timeout, interval}`` per machine."""

    what = "probes file"
    if not path.exists():
        raise NotFound(f"no {what} at {path}",
                       hint="write one mapping each machine to {probe, timeout, interval}")
    refuse_unsafe(path, record_root, what)
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(read_small(path, what).decode("utf-8"), Loader=loader)  # noqa: S506
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise BadInput(f"the {what} {path} is not valid YAML: {str(exc).splitlines()[0]}",
                       hint="fix it by hand") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BadInput(f"the {what} {path} should map each machine name to its probe",
                       hint="e.g. `gpubox: {probe: \"ssh gpubox atlas telemetry sample "
                       "--json\", timeout: 10s, interval: 5m}`")
    try:
        return dict(configmod.from_mapping({"machines": data}, path).machines)
    except AtlasError as exc:
        raise BadInput(exc.message, hint=f"fix {path} by hand: each machine maps to "
                       "{probe, timeout, interval}") from None


def approval_key(record_root: str, machine: str, probe: str) -> str:
    """The sha256 that approves exactly ``probe`` for ``machine`` of the record at
    ``record_root`` (a real path): one JSON list, so no two triples hash alike by a shift of
    separators."""
    triple = json.dumps([record_root, machine, probe], ensure_ascii=False)
    return hashlib.sha256(triple.encode("utf-8")).hexdigest()


def approvals_path() -> Path:
    folder = config_dir()
    if folder is None:
        raise BadInput("no home folder: there is nowhere of your own to keep approvals",
                       hint="set HOME or XDG_CONFIG_HOME")
    return folder / APPROVALS_NAME


def _load_approvals(path: Path, record_root: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    refuse_unsafe(path, record_root, "approvals file")
    try:
        data = json.loads(read_small(path, "approvals file"))
    except (ValueError, UnicodeDecodeError):
        raise DamagedFile(f"the approvals file {path} is not JSON",
                          hint="delete it and approve the probes again") from None
    entries = data.get("approved") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise DamagedFile(f"the approvals file {path} has no `approved` list",
                          hint="delete it and approve the probes again")
    return [e for e in entries if isinstance(e, dict)]


@dataclass(frozen=True)
class Target:
    """One machine as this prober will treat it: the command and why it may not run."""

    machine: Machine
    source: str  # "local", "probes file" or "atlas.yaml"
    refusal: str | None = None  # set: the command is not run, and this says why


@dataclass(frozen=True)
class Trust:
    """What this prober trusts: its own probes, and its approvals of atlas.yaml's."""

    record_root: str
    probes: Mapping[str, Machine] = field(default_factory=dict)
    approved: frozenset[str] = frozenset()
    approved_before: Mapping[str, str] = field(default_factory=dict)  # machine -> key

    def target(self, record_machine: Machine | None, name: str) -> Target:
        own = self.probes.get(name)
        if own is not None:
            return Target(own, LOCAL if own.probe == LOCAL else "probes file")
        if record_machine is None:
            raise NotFound(f"no machine {name!r} in atlas.yaml or in the probes file")
        if record_machine.probe == LOCAL:
            return Target(record_machine, LOCAL)
        key = approval_key(self.record_root, name, record_machine.probe)
        if key in self.approved:
            return Target(record_machine, "atlas.yaml")
        changed = name in self.approved_before
        why = ("its probe command in atlas.yaml has changed since it was approved"
               if changed else "its probe command comes from atlas.yaml, which anyone who "
               "can write the record can change, and whoever runs this prober has not "
               "approved it")
        return Target(record_machine, "atlas.yaml", refusal=(
            f"probe not approved: {why}, so it was not run; review it and run "
            f"`atlas telemetry approve {name}`, or give {name} a command in your own "
            "probes file"))


def load(record: Record, probes_file: str | os.PathLike[str] | None = None) -> Trust:
    """The trust of the person running the prober: ``probes_file``, else the per-user
    probes file if there is one, plus the per-user approvals of this record's probes."""
    root = os.path.realpath(record.root)
    probes: dict[str, Machine] = {}
    if probes_file is not None:
        probes = load_probes(Path(probes_file), root)
    else:
        folder = config_dir()
        if folder is not None and (folder / PROBES_NAME).exists():
            probes = load_probes(folder / PROBES_NAME, root)
    folder = config_dir()
    entries = _load_approvals(folder / APPROVALS_NAME, root) if folder else []
    mine = [e for e in entries if e.get("record") == root]
    return Trust(
        record_root=root, probes=probes,
        approved=frozenset(str(e.get("sha256")) for e in entries),
        approved_before={str(e.get("machine")): str(e.get("sha256")) for e in mine},
    )


def pending(record: Record, machine: str) -> str:
    """The probe string of ``machine`` in atlas.yaml, the one ``approve`` would approve."""
    check_name(machine, "machine name")
    spec = record.config.machines.get(machine)
    if spec is None:
        known = ", ".join(record.config.machines) or "none"
        raise NotFound(f"no machine {machine!r} in atlas.yaml (machines: {known})",
                       hint="name one listed under `machines:` in atlas.yaml")
    return spec.probe


def approve(record: Record, machine: str, probe: str) -> Path:
    """Approve exactly ``probe`` for ``machine`` of ``record``, replacing an approval of
    another string for it; returns the approvals file."""
    root = os.path.realpath(record.root)
    path = approvals_path()
    refuse_unsafe(path, root, "approvals file")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with fsio.locked(path.parent / (APPROVALS_NAME + ".lock")):
        entries = [e for e in _load_approvals(path, root)
                   if not (e.get("record") == root and e.get("machine") == machine)]
        entries.append({
            "sha256": approval_key(root, machine, probe), "record": root,
            "machine": machine, "probe": probe,
            "approved_at": timeutil.format_time(timeutil.now()),
        })
        data = json.dumps({"approved": entries}, ensure_ascii=False, indent=1) + "\n"
        fsio.replace_atomic(path, data.encode("utf-8"), mode=0o600)
    return path


def shown(probe: str, limit: int | None = None) -> str:
    """``probe`` as it can be put on a terminal: as is if every character is printable,
    else escaped (a control character could redraw the line a person is approving); cut
    at ``limit`` characters if given (never when it is shown for approval)."""
    text = probe if probe.isprintable() else ascii(probe)
    return text if limit is None or len(text) <= limit else text[:limit] + "..."
