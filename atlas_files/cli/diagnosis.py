"""`atlas doctor`: what this machine and the record's volume give the protocol.

The volume's part is measured there (atlas_files.protocol.volume: exclusive create raced by two
processes, hard links, rename over a file, folder fsync, locks, case, the volume's clock).
The machine's part is looked at here: git for sync, the install (jsonschema-rs, the site
engines), the harness hooks and whether the `atlas` they run is on PATH, and the command
server's folder. Each line says ok, degraded or unsafe, and what it means for which
guarantee; the report is ok when nothing is unsafe.

A front end, beside the CLI: it looks at the command server's folder (server/) and at
git through the one runner every git command atlas starts goes through (gitcmd.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files.api import setup as setup_api
from atlas_files.check import validators
from atlas_files.facts import environment, layout
from atlas_files.facts.errors import AtlasError, BrokenInstall, NotFound
from atlas_files.facts.timeutil import parse_duration
from atlas_files.harness import registry
from atlas_files.protocol import volume
from atlas_files.protocol.volume import DEGRADED, OK, UNSAFE, Check
from atlas_files.server import wire
from atlas_files.sitegen import engines
from atlas_files.storage import fsio, gitcmd
from atlas_files.storage.config import DEFAULT_CLOCK_SKEW_ALLOWANCE, DEFAULT_CLOCK_TOLERANCE
from atlas_files.storage.record import Record

RITUAL = ("the session ritual: without a hook, `atlas begin` and `atlas end` run only when "
          "the agent runs them itself")
SETTINGS_LIMIT = setup_api.SETTINGS_LIMIT
# The site engines and the modules each needs.
ENGINE_MODULES = {"mkdocs": ("mkdocs", "material"), "zensical": ("zensical",)}
INSTALL = {"mkdocs": "reinstall atlas-files with its dependencies (mkdocs, mkdocs-material)",
           "zensical": "pip install 'atlas-files[zensical]'"}


@dataclass(frozen=True)
class Diagnosis:
    record: Path | None
    volume: volume.VolumeReport
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return not any(c.verdict == UNSAFE for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "record": str(self.record) if self.record else None,
                "volume": self.volume.to_json(),
                "checks": [c.to_json() for c in self.checks]}


def diagnose(record_path: str | os.PathLike[str] | None = None) -> Diagnosis:
    """Every check, on the record found as every command finds it (``record_path``, else
    ATLAS_RECORD, else upward from here); with no record, the volume of the current
    folder is measured (will it carry a record?)."""
    try:
        record: Record | None = Record.find(record_path)
    except NotFound:
        if record_path is not None or environment.record():
            raise  # a record was named, and is not there: say so, measure nothing
        record = None
    allowance = parse_duration(DEFAULT_CLOCK_SKEW_ALLOWANCE)
    tolerance = parse_duration(DEFAULT_CLOCK_TOLERANCE)
    if record is not None:
        allowance = record.config.clock_skew_allowance_s
        tolerance = record.config.clock_tolerance_s
        report = volume.probe(record.root, record.root / layout.CACHE,
                              allowance_s=allowance, tolerance_s=tolerance)
    else:
        report = volume.probe(Path.cwd(), allowance_s=allowance, tolerance_s=tolerance)
    checks = [*report.checks, git_check(record), schema_check(), engines_check(record),
              hooks_check(record), site_code_check(), server_check()]
    return Diagnosis(record.root if record else None, report, tuple(checks))


# -- git ----------------------------------------------------------------------------------


def git_check(record: Record | None) -> Check:
    syncs = record is not None and record.config.sync is not None
    affects = ("`atlas sync` (this record travels by git)" if syncs else
               "`atlas sync`, `atlas activity` and the commit guard, where used")
    try:
        major, minor = gitcmd.check_version()
    except AtlasError as exc:
        return Check("git", UNSAFE if syncs else DEGRADED, exc.message, affects)
    return Check("git", OK, f"git {major}.{minor} ({gitcmd.executable()}): new enough for "
                 "sync", affects)


# -- the install --------------------------------------------------------------------------


def schema_check() -> Check:
    affects = "`atlas check` and the pre-commit hooks that run it"
    try:
        validators.fast("lease")
    except BrokenInstall as exc:
        return Check("jsonschema_rs", UNSAFE, exc.message, affects)
    return Check("jsonschema_rs", OK, "jsonschema-rs validates the record's files", affects)


def engines_check(record: Record | None) -> Check:
    try:
        wanted = engines.choose(None, record.config.raw if record else {})
    except AtlasError as exc:
        return Check("site_engines", DEGRADED, exc.message, "`atlas site build`")
    present = [name for name, modules in ENGINE_MODULES.items()
               if all(importlib.util.find_spec(m) is not None for m in modules)]
    missing = [name for name in ENGINE_MODULES if name not in present]
    affects = f"`atlas site build` (this record builds with {wanted})"
    have = f"installed: {', '.join(present) or 'none'}"
    if wanted not in present:
        return Check("site_engines", DEGRADED, f"{wanted}, the engine this record's site "
                     f"builds with, is not installed ({have}): {INSTALL[wanted]}", affects)
    more = (f"; not installed: {', '.join(missing)} (--engine {missing[0]} needs it)"
            if missing else "")
    return Check("site_engines", OK, f"{have}{more}", affects)


# -- the harness hooks --------------------------------------------------------------------


def _hook_folders(record: Record | None) -> list[Path]:
    """Where `atlas setup` may have written hooks: the repository holding this folder (or
    the record), this folder, and the user's own settings in the home folder."""
    found: list[Path] = []
    for start in (Path.cwd(), record.root if record else None):
        if start is None:
            continue
        try:
            found.append(gitcmd.toplevel(start))
        except (gitcmd.NotARepository, OSError):
            pass
        found.append(start)
    found.append(Path.home())
    unique: dict[str, Path] = {}
    for folder in found:
        unique.setdefault(os.path.realpath(folder), folder)
    return list(unique.values())


def _commands(value: Any) -> Iterator[str]:
    """Every hook command string in a harness's settings, whatever its layout."""
    if isinstance(value, dict):
        command = value.get("command")
        if isinstance(command, str):
            yield command
        for item in value.values():
            yield from _commands(item)
    elif isinstance(value, list):
        for item in value:
            yield from _commands(item)


def _atlas_program(command: str) -> str | None:
    """The program of an `atlas ...` hook command (``atlas`` or a path to it), else None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if words and os.path.basename(words[0]) == "atlas":
        return words[0]
    return None


def hooks_check(record: Record | None) -> Check:
    settings: dict[Path, list[str]] = {}
    for folder in _hook_folders(record):
        for harness in registry.every():
            path = folder.joinpath(*harness.settings)
            try:
                # A clone may carry its settings as a symlink to anything (/dev/zero): no
                # harness hook of ours is ever installed through one (setup refuses).
                data = json.loads(fsio.read_nofollow(path, SETTINGS_LIMIT))
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            programs = [p for p in map(_atlas_program, _commands(data)) if p]
            if programs:
                settings[path] = programs
    if not settings:
        places = ", ".join(str(f) for f in _hook_folders(record))
        return Check("hooks", DEGRADED, f"no atlas hooks are set up (looked in {places}); "
                     "`atlas setup claude|codex|gemini` installs them", RITUAL)
    broken = []
    resolved = set()
    for path, programs in settings.items():
        for program in programs:
            where = (program if os.sep in program and os.access(program, os.X_OK)
                     else shutil.which(program) if os.sep not in program else None)
            if where is None:
                broken.append(f"{path} runs `{program}`")
            else:
                resolved.add(where)
    files = ", ".join(str(p) for p in settings)
    caveat = ("judged by this shell's PATH; a harness started another way (a desktop "
              "launcher, a service) may have another")
    if broken:
        return Check("hooks", DEGRADED, f"{'; '.join(broken[:3])}, which is not found on "
                     f"PATH ({caveat}): that hook fails at every session", RITUAL)
    # A project's hooks (not the home folder's, which serve every folder) look for the
    # record from the project's folder.
    home = os.path.realpath(Path.home())
    lost = [path.parent.parent for path in settings
            if os.path.realpath(path.parent.parent) != home
            and setup_api.record_for_hooks(path.parent.parent) is None]
    if lost:
        return Check("hooks", DEGRADED, setup_api.no_record_for_hooks(
            lost[0], str(record.root) if record else None), RITUAL)
    outside = [p for p in sorted(resolved)
               if not os.path.realpath(p).startswith(os.path.realpath(sys.prefix))]
    other = (f"; {', '.join(outside)} is not this install's atlas ({sys.prefix})"
             if outside else "")
    return Check("hooks", OK, f"hooks in {files} run {', '.join(sorted(resolved))} "
                 f"({caveat}){other}", RITUAL)


# -- the command server -------------------------------------------------------------------


def site_code_check() -> Check:
    """Where this user accepted a MkDocs site's own code for the links check to run
    (`atlas check accept`): one row, every repository with its number of files."""
    from atlas_files.linkcheck import sitecode  # noqa: PLC0415 - a links check's module

    affects = "`atlas check --links-only` and the pre-commit hooks (a site's hooks and macros)"
    try:
        kept = sitecode.all_accepted()
    except AtlasError as exc:
        return Check("site_code", DEGRADED, f"{exc.message}: no site's code runs", affects)
    if not kept:
        return Check("site_code", OK, "no site's own code is accepted: links checks run none "
                     "(`atlas check accept` in a site you own)", affects)
    places = [f"{e.get('repository')} ({len(e.get('files') or {})} files, since "
              f"{e.get('accepted_at')})" for e in kept]
    return Check("site_code", OK, f"links checks run the accepted hooks and macros of "
                 f"{'; '.join(places)}, while their digests match "
                 f"({sitecode.store_path()})", affects)


def server_check() -> Check:
    affects = ("command speed only: a server that cannot be used is skipped, and each "
               "command says so")
    try:
        path = wire.socket_path()
        on = path is not None
        if path is None:
            state = "off (ATLAS_SERVER unset): every command starts its own Python"
            path = os.path.join(wire.folder(), "server.sock")
        else:
            state = f"on, socket {path}"
        if not wire.supported():
            return Check("command_server", DEGRADED if on else OK,
                         f"{state}; this system lacks what it needs (Linux)", affects)
        exists = wire.prepare(path, create=False)  # looks only: the doctor makes nothing
    except wire.Unusable as exc:
        return Check("command_server", DEGRADED, f"not usable: {exc}", affects)
    where = os.path.dirname(path)
    made = "private to you" if exists else "not made yet (the server makes it)"
    return Check("command_server", OK, f"{state}; its folder {where} is {made}", affects)
