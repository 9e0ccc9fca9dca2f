"""Which ``sync:`` settings a clone acts on: the ones a person on it accepted.

atlas.yaml travels with the record, so anyone who can push to the shared remote can
change its ``sync:`` block, and with it where this clone's writes go (another remote of
the clone, another branch) and whether they go at all. So the block in atlas.yaml is a
proposal, as a probe command there is: a sync acts on it once the person running atlas
on this clone has accepted exactly those settings for exactly this record
(`atlas sync accept`). The acceptance lives in that person's own config folder
(``~/.config/atlas/accepted-sync.json``), which nothing in the record or on the remote
can reach; the file is used only while it is private to them (ownfiles.refuse_unsafe).

What applies, then:

* the block in atlas.yaml, when it is the one accepted;
* the accepted one, when atlas.yaml says otherwise (a change came in, or someone edited
  the file): the difference is said on every sync and every synced command, and waits;
* nothing, when this clone never accepted a block and atlas.yaml has one: `atlas sync`
  and ``--sync`` stop with NotAccepted (exit 2), and no write or read syncs by itself
  (a warning says why). Without a block and without an acceptance, `atlas sync` syncs
  with the defaults: the clone's own ``origin`` and the branch it has checked out.

A removal of the block stops writes from syncing by themselves at once (that sends
nothing anywhere) but an explicit `atlas sync` keeps to the accepted remote and branch
until the removal is accepted too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from atlas_files.facts.errors import AtlasError, BadInput, DamagedFile
from atlas_files.facts.names import quote
from atlas_files.storage.config import (
    CONFIG_NAME,
    SyncConfig,
    describe_sync,
    from_mapping,
    sync_block,
    sync_differences,
    sync_from_block,
)
from atlas_files.storage.ownfiles import config_dir, read_accepted, refuse_unsafe, write_accepted
from atlas_files.storage.record import Record

ACCEPTED_NAME = "accepted-sync.json"
WHAT = "sync acceptances file"
# A probe that runs this package's own sampler, no shell command: nothing to approve.
LOCAL_PROBE = "local"


class NotAccepted(AtlasError):
    """atlas.yaml's ``sync:`` block has not been accepted on this clone: nothing synced."""

    exit_code = 2
    kind = "environment"  # this clone's setup waits for its person; the call was fine


class Pending(NamedTuple):
    """atlas.yaml's sync block as it differs from what this clone accepted."""

    accepted: dict[str, Any] | None  # None: no block was accepted (or none ever)
    in_atlas_yaml: dict[str, Any] | None
    ever_accepted: bool

    def differences(self) -> list[str]:
        return sync_differences(self.accepted, self.in_atlas_yaml)

    def to_json(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "in_atlas_yaml": self.in_atlas_yaml,
                "ever_accepted": self.ever_accepted, "differences": self.differences()}

    def sentence(self) -> str:
        """What waits, in one sentence."""
        if not self.ever_accepted:
            return ("atlas.yaml's sync: block has not been accepted on this clone, so atlas "
                    f"does not act on it ({describe_sync(self.in_atlas_yaml)})")
        return ("atlas.yaml's sync: block differs from the one accepted on this clone ("
                + "; ".join(self.differences()) + "); until a person here accepts the "
                "change, atlas keeps to the accepted one")


HINT = ("anyone who can push to the remote can change atlas.yaml: a person on this clone "
        "should review the settings (`git log -p -- atlas.yaml` says who changed them), "
        "then run `atlas sync accept`")


class Standing(NamedTuple):
    """What a sync of this clone acts on, and what waits."""

    cfg: SyncConfig | None  # None: no settings (defaults for `atlas sync`, no auto)
    pending: Pending | None

    def explicit(self) -> SyncConfig:
        """The settings for `atlas sync` and ``--sync``; NotAccepted when the clone has
        never accepted the block atlas.yaml holds (the defaults could send the record to
        a remote the block does not name)."""
        if self.pending is not None and not self.pending.ever_accepted:
            raise NotAccepted(self.pending.sentence() + "; nothing was synced", hint=HINT)
        return self.cfg or SyncConfig()


def store_path() -> Path:
    folder = config_dir()
    if folder is None:
        raise BadInput("no home folder: there is nowhere of your own to keep what you "
                       "accepted", hint="set HOME or XDG_CONFIG_HOME")
    return folder / ACCEPTED_NAME


AGAIN = "accept each record's sync settings again (`atlas sync accept`)"


def _entries(path: Path, root: str) -> list[dict[str, Any]]:
    return read_accepted(path, root, WHAT, AGAIN)


def _root(record: Record) -> str:
    return os.path.realpath(record.root)


def accepted(record: Record) -> tuple[bool, dict[str, Any] | None]:
    """(whether this clone ever accepted a block, the block it accepted last)."""
    folder = config_dir()
    if folder is None:
        return False, None
    root = _root(record)
    for entry in _entries(folder / ACCEPTED_NAME, root):
        if entry.get("record") == root:
            block = entry.get("sync")
            if block is not None and not isinstance(block, dict):
                raise DamagedFile(f"the {WHAT} {folder / ACCEPTED_NAME} holds settings for "
                                  f"{root} that atlas did not write",
                                  hint="run `atlas sync accept` again")
            sync_from_block(block)  # refuse a hand-made entry atlas could not act on
            return True, block
    return False, None


def standing(record: Record, *, without_block: bool = False) -> Standing:
    """What applies now. A record whose atlas.yaml has no sync block costs nothing here
    unless ``without_block`` (an explicit sync, which must keep to an accepted remote
    even when the block was removed)."""
    cfg = record.config.sync
    if cfg is None and not without_block:
        return Standing(None, None)
    ever, block = accepted(record)
    mine = sync_block(cfg)
    if not ever:
        return Standing(None, Pending(None, mine, False) if mine is not None else None)
    if block == mine:
        return Standing(cfg, None)
    return Standing(sync_from_block(block), Pending(block, mine, True))


def accept(record: Record) -> tuple[Path, Pending | None]:
    """Accept atlas.yaml's sync block (or its absence) for this clone; returns where the
    acceptance is kept, and what it changed (None: it was accepted already)."""
    root = _root(record)
    mine = sync_block(record.config.sync)
    ever, block = accepted(record)
    path = store_path()
    refuse_unsafe(path, root, WHAT)
    if ever and block == mine:
        return path, None
    write_accepted(path, root, WHAT, AGAIN, "record", {"record": root, "sync": mine})
    return path, Pending(block, mine, ever)


class ConfigChange(NamedTuple):
    """One setting of atlas.yaml that a sync brought in changed."""

    setting: str  # "sync", "machines.gpubox", "body_limit", ...
    change: str  # what changed, in words
    waits_for: str | None  # the command a person runs to accept it; None: in effect

    def to_json(self) -> dict[str, Any]:
        return {"setting": self.setting, "change": self.change,
                "in_effect": self.waits_for is None, "waits_for": self.waits_for}

    def sentence(self) -> str:
        then = (f"waits for a person here to run `{self.waits_for}`" if self.waits_for
                else "in effect")
        return f"{self.setting}: {self.change} ({then})"


def _shown(value: Any) -> str:
    return "(unset)" if value is None else quote(value, 60)


def config_changes(before: dict[str, Any], after: dict[str, Any]) -> list[ConfigChange]:
    """Each setting that differs between two parses of atlas.yaml, with what it waits for.

    What changes where this clone's writes go, or what runs, waits: the ``sync:`` block
    (for `atlas sync accept`) and a machine's probe command (for `atlas telemetry
    approve`, as every probe from atlas.yaml does). The rest shapes the record (its
    projects, limits, lease cap, site engine) and is in effect at once."""
    found: list[ConfigChange] = []
    for key in dict.fromkeys([*before, *after]):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if key == "sync":
            phrases = sync_differences(_block(old), _block(new))
            found.append(ConfigChange("sync", "; ".join(phrases) or "rewritten",
                                      "atlas sync accept"))
        elif key == "machines" and isinstance(old or {}, dict) and isinstance(new or {}, dict):
            found += _machine_changes(old or {}, new or {})
        else:
            found.append(ConfigChange(str(key)[:100], f"{_shown(old)} -> {_shown(new)}", None))
    return found


def _block(raw: Any) -> dict[str, Any] | None:
    """A raw ``sync:`` value as a block; one atlas cannot read is shown as it stands."""
    try:
        return sync_block(from_mapping({"sync": raw}, Path(CONFIG_NAME)).sync)
    except AtlasError:
        return {"remote": quote(raw, 60), "branch": None, "auto": None, "fetch_every_s": 0}


def _machine_changes(old: dict[str, Any], new: dict[str, Any]) -> list[ConfigChange]:
    found = []
    for name in dict.fromkeys([*old, *new]):
        was, now = old.get(name), new.get(name)
        if was == now:
            continue
        setting = f"machines.{str(name)[:100]}"
        probe = now.get("probe") if isinstance(now, dict) else None
        before = was.get("probe") if isinstance(was, dict) else None
        if isinstance(probe, str) and probe != LOCAL_PROBE and probe != before:
            found.append(ConfigChange(setting, f"probe command {_shown(before)} -> "
                                      f"{_shown(probe)}", f"atlas telemetry approve {name}"))
        else:
            found.append(ConfigChange(setting, f"{_shown(was)} -> {_shown(now)}", None))
    return found
