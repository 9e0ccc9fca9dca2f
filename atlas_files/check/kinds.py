"""Checks of the record's other kinds: atlas.yaml, entries, lease generations, live rows."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from atlas_files.check import debris, fix, refs
from atlas_files.check.bom import BOM, strip_bom
from atlas_files.check.context import DAMAGE, CheckRun, check_not_ahead, list_folder, per_file
from atlas_files.check.schema import json_lines, key_lines, load_json, plain, short, validate
from atlas_files.check.versions import is_private
from atlas_files.facts import layout, timeutil
from atlas_files.linkcheck.filesources import why_unreadable
from atlas_files.storage import config as configmod
from atlas_files.storage import entries, frontmatter, fsio

_ENTRY_HEAD = 64 * 1024  # enough to read the front matter of a file that may be an entry
ENTRY_FOLDERS = {"decisions": "decision", "corrections": "correction", "tasks": "task"}
# ATL002's own hint is for versions and entries, which are never edited. atlas.yaml is the
# record's settings, there to be edited; a live row is this machine's own, kept out of git.
CONFIG_HINT = ("atlas.yaml is the record's settings, meant to be edited by hand: fix what is "
               "named (schemas/config.schema.json gives each key), then run `atlas check`")
ROW_HINTS = {
    "receipt": "delete it: a reader's receipts are this machine's own (git ignores them: "
               "there is nothing to restore); its next read starts the row afresh",
    "telemetry": "delete it: the prober writes the machine's row afresh on its next round",
    "session": "delete it: the identity's next `atlas begin` writes its session row afresh",
}


def _is_task_file(name: str) -> bool:
    return layout.TASK_FILE.fullmatch(name) is not None


@per_file
def check_config(ctx: CheckRun, path: Path) -> None:
    ctx.report.files += 1
    try:
        raw = ctx.source.read(path)
        if len(raw) > configmod.CONFIG_LIMIT:
            ctx.report.add(path, 1, "ATL002",
                           f"is {len(raw)} bytes, more than atlas reads of its config "
                           f"({configmod.CONFIG_LIMIT} bytes): every command refuses it",
                           CONFIG_HINT)
            return
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        ctx.report.add(path, 1, "ATL002", f"not UTF-8 text (byte {exc.start})", CONFIG_HINT)
        return
    except OSError as exc:
        ctx.report.add(path, 1, "ATL002", f"cannot read it: {why_unreadable(exc)}",
                       CONFIG_HINT)
        return
    try:
        data = frontmatter.load_yaml(text)  # refuses anchors and aliases (alias bombs)
    except frontmatter.YamlError as exc:
        ctx.report.add(path, exc.line + 1, "ATL002", short(str(exc)), CONFIG_HINT)
        return
    data = plain(data)
    lines = text.split("\n")
    if not validate(ctx.report, path, "config", data, lambda: key_lines(lines)):
        return
    where = key_lines(lines)
    if data["default_project"] not in data["projects"]:
        ctx.report.add(path, where.get("default_project", 1), "ATL001",
                       f"default_project {data['default_project']!r} is not one of projects")
    cap = data.get("lease_cap")
    if isinstance(cap, str) and cap:
        try:
            seconds = timeutil.parse_duration(cap)
        except ValueError:
            seconds = None
        if seconds is not None and seconds > 24 * 3600:
            ctx.report.add(path, where.get("lease_cap", 1), "ATL001",
                           f"lease_cap {cap} is over the most allowed, 24h")
        elif seconds is not None and seconds <= 0:
            ctx.report.add(path, where.get("lease_cap", 1), "ATL001",
                           f"lease_cap {cap} refuses every lease claim (a claim may last "
                           "at most the cap)", "set a lease_cap of at least a minute "
                           "(default 4h), or remove the key")


def _load_json_file(
    ctx: CheckRun, path: Path, hint: str = ""
) -> tuple[Any, Callable[[], dict[str, int]]] | None:
    """Count the file and read its JSON; None after reporting why it cannot be read (with
    ``hint``, if given, in place of the code's own)."""
    ctx.report.files += 1
    try:
        data = ctx.source.read(path)
    except OSError as exc:
        ctx.report.add(path, 1, "ATL002", f"cannot read it: {why_unreadable(exc)}", hint)
        return None
    if data.startswith(BOM):
        ctx.report.add(path, 1, "ATL002", "it starts with a UTF-8 byte-order mark, which JSON "
                       "readers refuse; remove it (the three bytes before the first '{')",
                       "remove the byte-order mark; the tools never write one")
        return None
    value = load_json(ctx.report, path, data, hint)
    if value is None:
        return None
    return value, json_lines(data.decode("utf-8", "replace"))


@per_file
def check_row(ctx: CheckRun, path: Path, kind: str, key: str) -> None:
    """A live row (receipt, telemetry): its schema, and ``key`` naming the file's stem."""
    loaded = _load_json_file(ctx, path, ROW_HINTS.get(kind, ""))
    if loaded is None:
        return
    value, lines = loaded
    if validate(ctx.report, path, kind, value, lines) and value.get(key) != path.stem:
        ctx.report.add(path, lines().get(key, 1), "ATL004",
                       f"{key} is {value.get(key)!r}, but the file is named {path.name}")


def check_entry_folder(ctx: CheckRun, folder: Path, project: str, kind: str,
                       only: set[str] | None = None) -> None:
    named = _is_task_file if kind == "task" else layout.is_entry_file
    for name in sorted(list_folder(ctx, folder)):
        if only is not None and name not in only:
            continue
        path = folder / name
        if fsio.is_temp(name):
            debris.check_temp(ctx, path)
        elif named(name):
            check_entry(ctx, path, project, kind)
        elif ctx.source.is_file(path) and not is_private(name):
            check_stray_entry(ctx, path, kind)


@per_file
def check_stray_entry(ctx: CheckRun, path: Path, kind: str) -> None:
    """A file in an entry folder that readers do not list. Named like an entry but for its
    case (``DEC-...``, uppercase hex), or Markdown holding an entry's front matter, it is an
    entry nobody will see: an error. Anything else is a stray file (a warning)."""
    name = path.name
    named = _is_task_file if kind == "task" else layout.is_entry_file
    meant = named(name.lower())
    if not meant and name.lower().endswith(".md"):
        try:
            head, _ = ctx.source.read_limited(path, _ENTRY_HEAD)
            meta = frontmatter.parse(head.removeprefix(BOM)).meta
            meant = meta.get("kind") in entries.PREFIXES \
                or isinstance(meta.get("id"), str) and named(f"{meta['id']}.md")
        except (OSError, *DAMAGE):
            meant = False
    if not meant:
        ctx.report.add(path, 1, "ATL032",
                       f"{name} is not a {kind} entry (<id>.md): readers ignore it")
        return
    better = name.lower() if named(name.lower()) else "<id>.md, its id as written"
    ctx.report.add(path, 1, "ATL036",
                   f"{name} is written as a {kind} entry, but readers do not list it "
                   f"(`atlas decisions` and every other reader skip it): name it {better}")


@per_file
def check_entry(ctx: CheckRun, path: Path, project: str, kind: str) -> None:
    report = ctx.report
    report.files += 1
    try:
        data = ctx.source.read(path)
    except OSError as exc:
        report.add(path, 1, "ATL002", f"cannot read this entry: {why_unreadable(exc)}")
        return
    data = strip_bom(ctx, path, data, "entry")
    if data is None:
        return
    try:
        parsed = frontmatter.parse(data)
    except frontmatter.FrontMatterError as exc:
        report.add(path, exc.line, "ATL002", str(exc))
        return
    try:
        parsed.body.decode("utf-8")
    except UnicodeDecodeError:
        report.add(path, parsed.body_line, "ATL002", "the body is not UTF-8 text")
        return
    meta = plain(parsed.meta)
    head = data.decode("utf-8", "replace").split("\n")[1: parsed.body_line - 2]

    def lines() -> dict[str, int]:
        return key_lines(head, 2)

    clean = validate(report, path, kind, meta, lines, 2)
    stem = path.name[:-3]  # <id>.md
    if isinstance(meta.get("id"), str) and meta["id"] != stem:
        clean = False
        report.add(path, lines().get("id", 2), "ATL004",
                   f"the entry's id is {meta['id']}, but the file is named {path.name}")
    if isinstance(meta.get("project"), str) and meta["project"] != project:
        clean = False
        report.add(path, lines().get("project", 2), "ATL004",
                   f"the entry says project {meta['project']!r}, but lies in project {project!r}")
    _entry_refs(ctx, path, project, meta, lines)
    check_not_ahead(ctx, path, lines().get("at", 2), meta.get("at"), "this entry says it was "
                    "made at")
    stated = parsed.meta.get("digest")
    if stated is not None:
        if stated != entries.digest_of_entry(dict(parsed.meta), parsed.body):
            report.add(path, lines().get("digest", 2), "ATL005",
                       "this entry was edited after it was written: its fields or body no "
                       "longer match its digest (entries are immutable; write a correction)")
    elif ctx.fix and clean and not report.has_findings(path):
        fix.stamp_entry(ctx, path, data, parsed)
    else:
        report.add(path, 1, "ATL006", "this entry has no digest yet: an edit of it cannot "
                   "be detected")


def _entry_refs(ctx: CheckRun, path: Path, project: str, meta: dict[str, Any],
                lines: Any) -> None:
    if isinstance(meta.get("links"), list):
        refs.check_meta_links(ctx, path, project, meta["links"], lines().get("links", 2),
                              current=False, entry=True)
    if "accepts" in meta:
        refs.check_ref(ctx, path, lines().get("accepts", 2), project, meta["accepts"],
                       current=False, field="accepts:", entry=True)
    if "ref" in meta:
        # A correction or retraction names what it corrects; only its existence matters
        # (a retraction's own target is retracted by definition).
        state = ctx.index.ref_state(project, meta["ref"], current=False)
        if state.state in ("missing", "bad"):
            ctx.report.add(path, lines().get("ref", 2), "ATL014",
                           f"ref: {meta['ref']!r}: {state.detail}")


def check_lease_folder(ctx: CheckRun, folder: Path, only: set[str] | None = None) -> None:
    found: list[tuple[int, str]] = []
    for name in sorted(list_folder(ctx, folder)):
        path = folder / name
        number = layout.generation_number(name)
        if number is not None:
            found.append((number, name))
        elif fsio.is_temp(name):
            debris.check_temp(ctx, path)
        elif (only is None or name in only) and ctx.source.is_file(path) \
                and not is_private(name):
            ctx.report.add(path, 1, "ATL032",
                           f"{name} is not a lease generation (gNNNNNNNN.json): readers ignore it")
    found.sort()
    expected = 1
    for position, (number, name) in enumerate(found):
        newest = position == len(found) - 1
        if only is not None and name not in only and not newest:
            expected = number + 1
            continue
        if number > expected:
            ctx.report.add(folder / name, 1, "ATL003",
                           f"generation skip: {name} follows generation {expected - 1}; "
                           f"generation {expected} is missing",
                           "generations are never deleted; restore the missing one")
        expected = number + 1
        check_generation(ctx, folder / name, number, newest=newest)


@per_file
def check_generation(ctx: CheckRun, path: Path, number: int, *, newest: bool) -> None:
    loaded = _load_json_file(ctx, path)
    if loaded is None:
        return
    value, lines = loaded
    if not validate(ctx.report, path, "lease", value, lines):
        return
    if value["resource"] != path.parent.name:
        ctx.report.add(path, lines().get("resource", 1), "ATL004",
                       f"it names resource {value['resource']!r}, but lies in the folder of "
                       f"{path.parent.name!r}")
    if value["generation"] != number:
        ctx.report.add(path, lines().get("generation", 1), "ATL004",
                       f"it says generation {value['generation']}, the file name says {number}")
    if newest and value["action"] != "release":
        _lease_times(ctx, path, value, lines)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return timeutil.parse_time(value)
    except ValueError:
        return None


def _lease_times(ctx: CheckRun, path: Path, value: dict[str, Any], lines: Any) -> None:
    cap = ctx.limits.lease_cap_s
    written, expires = _time(value.get("written_at")), _time(value.get("expires_at"))
    duration = value.get("duration_s")
    asked = (expires - written).total_seconds() if written and expires else None
    longest = max(x for x in (duration, asked, 0.0) if isinstance(x, int | float))
    if longest > cap + 1:  # a second of rounding in the stored times
        ctx.report.add(path, lines().get("expires_at", 1), "ATL020",
                       f"this lease runs {timeutil.format_duration(longest)}, longer than the "
                       f"record's cap of {timeutil.format_duration(cap)}",
                       f"break it (`atlas lease break {value['resource']} --why TEXT`) and "
                       "claim again for at most the cap")
    stamps = [t for t in (_time(value.get("claimed_at")), written) if t is not None]
    if stamps:
        ahead = (max(stamps) - ctx.now).total_seconds()
        if ahead > ctx.limits.clock_tolerance_s:
            ctx.report.add(path, lines().get("claimed_at", 1), "ATL021",
                           f"this lease was claimed {timeutil.format_duration(ahead)} in the "
                           "future (clock tolerance "
                           f"{timeutil.format_duration(ctx.limits.clock_tolerance_s)}): its "
                           "expiry cannot be trusted")
