"""A changed probe or sync block in atlas.yaml changes what runs, or where writes go: say
so where a person reviews.

``machines.<m>.probe`` in atlas.yaml is a shell command that a telemetry prober may run
(once its user approves it). atlas.yaml lies in the shared record, so anyone who can write
the record can change it; this check makes such a change visible before it is committed
(``--staged``: git's index against HEAD) or while it is still uncommitted (a plain check
of a record inside a git work tree: the file on disk against HEAD).

Only what can make someone run something new is reported: a machine added with a probe
command, or a probe command changed (ATL050). ``local`` runs no shell command, and removing
a machine, or changing its timeout or interval, runs nothing new. Beside it, any change of
the ``sync:`` block (ATL051): it says which remote and branch every clone's writes go to
and whether they go by themselves, so each clone acts on it only once a person there
accepts it (`atlas sync accept`), and a reviewer should see it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from atlas_files.check.staged import Change
from atlas_files.facts import layout
from atlas_files.linkcheck.findings import Report
from atlas_files.protocol.telemetry.trust import shown
from atlas_files.storage.config import from_mapping, sync_block, sync_differences
from atlas_files.storage.fsio import read_nofollow
from atlas_files.storage.gitcmd import GitFailed, blob, toplevel

CODE = "ATL050"
SYNC_CODE = "ATL051"
LOCAL = "local"


def _load(data: bytes) -> Any:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(data.decode("utf-8"), Loader=loader)  # noqa: S506 - a safe loader


def probes_of(data: bytes | None) -> dict[str, str] | None:
    """Machine -> probe string of an atlas.yaml's bytes ({} for no file); None if it cannot
    be read as one (the schema check reports that, and no prober can load it either)."""
    if data is None:
        return {}
    try:
        config = _load(data)
    except Exception:  # noqa: BLE001 - any YAML or decoding failure: not ours to report
        return None
    if not isinstance(config, dict):
        return None
    machines = config.get("machines") or {}
    if not isinstance(machines, dict):
        return None
    out: dict[str, str] = {}
    for name, spec in machines.items():
        if isinstance(spec, dict) and spec.get("probe"):
            out[str(name)] = str(spec["probe"])
    return out


def sync_of(data: bytes | None) -> tuple[bool, dict[str, Any] | None]:
    """(whether it could be read, the sync block) of an atlas.yaml's bytes (no file: no
    block); an unreadable block is the schema check's to report."""
    if data is None:
        return True, None
    try:
        config = _load(data)
        if not isinstance(config, dict):
            return False, None
        return True, sync_block(from_mapping({"sync": config.get("sync")},
                                             Path(layout.CONFIG_NAME)).sync)
    except Exception:  # noqa: BLE001 - any YAML or config failure: not ours to report
        return False, None


def new_probes(old: dict[str, str], new: dict[str, str]) -> list[tuple[str, str | None, str]]:
    """(machine, probe before or None, probe now) for each probe that is new or changed."""
    return [(name, old.get(name), probe) for name, probe in new.items()
            if probe != LOCAL and old.get(name) != probe]


def _line_of(data: bytes, machine: str | None) -> int:
    """The line of ``machine:`` under ``machines:``, or of ``sync:`` for None (1 if it
    cannot be found)."""
    try:
        root = yaml.compose(data.decode("utf-8"), Loader=yaml.SafeLoader)
    except Exception:  # noqa: BLE001 - the line is a courtesy, never a failure
        return 1
    if not isinstance(root, yaml.MappingNode):
        return 1
    for key, value in root.value:
        if machine is None and key.value == "sync":
            return int(key.start_mark.line) + 1
        if key.value == "machines" and isinstance(value, yaml.MappingNode):
            for mkey, _ in value.value:
                if str(mkey.value) == machine:
                    return int(mkey.start_mark.line) + 1
    return 1


def report_changes(report: Report, path: Path, old: bytes | None, new: bytes,
                   lead: str) -> None:
    """Report each new or changed probe of ``new`` (compared with ``old``, None for no file
    before), and a changed sync block; ``lead`` says who changes it ("this commit", ...)."""
    (read_before, sync_before), (read_after, sync_after) = sync_of(old), sync_of(new)
    if read_before and read_after and sync_before != sync_after:
        report.add(path, _line_of(new, None), SYNC_CODE,
                   f"{lead} changes where the record syncs: "
                   f"{'; '.join(sync_differences(sync_before, sync_after))}")
    before, after = probes_of(old), probes_of(new)
    if before is None or after is None:
        return
    for name, was, now in new_probes(before, after):
        command = shown(now, 200)
        if was is None:
            message = f"{lead} adds machine {name} with the probe command {command}"
        else:
            message = (f"{lead} changes the probe command of machine {name} to {command} "
                       f"(it was {shown(was, 200)})")
        report.add(path, _line_of(new, name), CODE, message)


def check_staged(report: Report, repo: Path, changes: Sequence[Change],
                 given: Sequence[Path], explicit: Path | None) -> None:
    """Each atlas.yaml the commit adds or changes, its ``machines`` against HEAD's."""
    for change in changes:
        if not change.present or change.blob is None \
                or change.path.rpartition("/")[2] != layout.CONFIG_NAME:
            continue
        path = repo / change.path
        if given and not any(path == p or p in path.parents for p in given):
            continue
        if explicit is not None and path.parent != explicit:
            continue
        new = blob(repo, change.blob)
        if new is not None:
            old = blob(repo, f"HEAD:{change.old or change.path}")
            report_changes(report, path, old, new, "this commit")


def check_worktree(report: Report, root: Path, wanted: Sequence[Path] = ()) -> None:
    """atlas.yaml on disk against HEAD's, when the record lies in a git work tree and its
    atlas.yaml is tracked or staged; nothing otherwise (git cannot vouch for anything)."""
    path = root / layout.CONFIG_NAME
    if wanted and not any(p in (root, path) for p in wanted):
        return
    try:
        repo = toplevel(root)
    except GitFailed:
        return
    try:
        rel = path.resolve().relative_to(repo).as_posix()
        new = read_nofollow(path)
    except (ValueError, OSError):
        return
    old = blob(repo, f"HEAD:{rel}")
    if old is None and blob(repo, f":{rel}") is None:
        return  # neither committed nor staged: an untracked record
    report_changes(report, path, old, new, "since the last commit, atlas.yaml")
