"""The record's config, ``atlas.yaml``: projects, limits and the machines to probe.

Read on every command, so it is checked here by hand for what commands rely on; the full
JSON Schema (schemas/config.schema.json) is applied by `atlas check`, which can afford
jsonschema's import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import AtlasError, BadInput, DamagedFile
from atlas_files.facts.names import check_name, quote
from atlas_files.storage import fsio, yamlcache
from atlas_files.storage.frontmatter import YamlError, load_yaml

CONFIG_NAME = layout.CONFIG_NAME
SCHEMA_VERSION = 1
DEFAULT_LEASE_CAP = "4h"
MAX_LEASE_CAP_S = 24 * 3600.0
DEFAULT_STATUS_LIMIT = 4000
# A body larger than this is refused at write, reported by check and skipped by the site:
# one 200 MB version is enough to exhaust a reader's memory.
DEFAULT_BODY_LIMIT = 1 << 20
# A config is a few kilobytes even with hundreds of machines; a larger file was not
# written by atlas and is refused unread.
CONFIG_LIMIT = 4 << 20
DEFAULT_CLOCK_TOLERANCE = "2m"
# How far a lease's writer's clock and its reader's may disagree, measured against the
# record's volume (volclock.py), before a reader says the expiry it shows is off.
DEFAULT_CLOCK_SKEW_ALLOWANCE = "2s"
DEFAULT_PROBE_TIMEOUT = "10s"
DEFAULT_PROBE_INTERVAL = "5m"
DEFAULT_SYNC_REMOTE = "origin"
DEFAULT_FETCH_EVERY = "30s"
# The edit guard's window for "someone else committed to this file lately" (`guard.recent`),
# and how often at most the news hook looks for news (`news.every`).
DEFAULT_GUARD_RECENT = "60m"
DEFAULT_NEWS_EVERY = "3m"
DEFAULT_NEWS_LIMIT = 600
MAX_GUARD_RECENT_S = 7 * 86400.0
# A git remote or branch name as sync passes it to git: never an option (a leading '-'),
# never a path trick; git's own rules on refs are checked by git.
# A string, compiled by re on first use: only records that sync read it.
_GIT_NAME = r"[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}"


class Machine(NamedTuple):
    """A machine the telemetry prober visits: ``probe`` is a shell command or ``local``."""

    name: str
    probe: str
    timeout_s: float
    interval_s: float
    stale_after_intervals: float = 3.0


class SyncConfig(NamedTuple):
    """``sync:`` in atlas.yaml: the git remote the record travels by (see docs/sync.md).

    ``branch`` None means the branch checked out; ``auto`` makes every write sync itself;
    reads fetch when the last fetch is older than ``fetch_every_s``.
    """

    remote: str = DEFAULT_SYNC_REMOTE
    branch: str | None = None
    auto: bool = False
    fetch_every_s: float = 30.0


class GuardConfig(NamedTuple):
    """``guard:`` and ``news:`` in atlas.yaml: the edit-time hooks (docs/sessions.md).

    ``recent_s``: commits by another author on any ref within this window reach the agent
    as context before an edit; ``news_every_s``: the news hook looks for news at most this
    often; ``news_limit``: the most characters one piece of news may take."""

    recent_s: float = 3600.0
    news_every_s: float = 180.0
    news_limit: int = DEFAULT_NEWS_LIMIT


def sync_block(cfg: SyncConfig | None) -> dict[str, Any] | None:
    """``sync:`` as a plain mapping of what it means (None: no block): what a clone
    accepts, compares and shows. Two spellings of one setting (``30s``, ``0.5m``) are the
    same block."""
    if cfg is None:
        return None
    return {"remote": cfg.remote, "branch": cfg.branch, "auto": cfg.auto,
            "fetch_every_s": cfg.fetch_every_s}


def sync_from_block(block: Mapping[str, Any] | None) -> SyncConfig | None:
    """The settings of a mapping made by ``sync_block`` (None for None); DamagedFile for
    anything else, since such a mapping is kept outside the record and read back."""
    if block is None:
        return None
    remote, branch, auto = block.get("remote"), block.get("branch"), block.get("auto")
    every = block.get("fetch_every_s")
    if not (isinstance(remote, str) and (branch is None or isinstance(branch, str))
            and isinstance(auto, bool) and isinstance(every, int | float)
            and not isinstance(every, bool)):
        raise DamagedFile(f"accepted sync settings {quote(dict(block))} are not ones atlas "
                          "wrote")
    return SyncConfig(_git_name({"remote": remote}, "remote") or DEFAULT_SYNC_REMOTE,
                      _git_name({"branch": branch}, "branch"), auto, float(every))


def describe_sync(block: Mapping[str, Any] | None) -> str:
    """One line a person can review: what syncing with these settings does."""
    if block is None:
        return ("no sync: block (`atlas sync` uses the remote origin and the branch checked "
                "out; no write syncs by itself)")
    branch = block.get("branch") or "the branch checked out"
    auto = ("auto: every write fetches first and pushes after, and reads fetch when the last "
            f"fetch is over {timeutil.format_duration(block.get('fetch_every_s') or 0)} old"
            if block.get("auto") else "auto off: only `atlas sync` and --sync writes sync")
    return f"remote {block.get('remote')}, branch {branch}, {auto}"


def sync_differences(before: Mapping[str, Any] | None,
                     after: Mapping[str, Any] | None) -> list[str]:
    """What changes from one sync block to another, a phrase per setting."""
    if before == after:
        return []
    if before is None:
        return [f"a sync: block is added ({describe_sync(after)})"]
    if after is None:
        return ["the sync: block is removed"]
    said = []
    for key, word in (("remote", "remote"), ("branch", "branch"), ("auto", "auto"),
                      ("fetch_every_s", "fetch_every")):
        old, new = before.get(key), after.get(key)
        if old != new:
            if key == "fetch_every_s":
                old = timeutil.format_duration(old or 0)
                new = timeutil.format_duration(new or 0)
            elif key == "branch":
                old, new = old or "(the branch checked out)", new or "(the branch checked out)"
            elif key == "auto":
                old, new = "on" if old else "off", "on" if new else "off"
            said.append(f"{word} {quote(old)} -> {quote(new)}" if key in ("remote", "branch")
                        else f"{word} {old} -> {new}")
    return said


class Config(NamedTuple):
    projects: tuple[str, ...]
    default_project: str
    lease_cap_s: float
    status_limit: int
    clock_tolerance_s: float
    body_limit: int = DEFAULT_BODY_LIMIT
    machines: Mapping[str, Machine] = MappingProxyType({})
    # None: atlas.yaml has no `sync:` (`atlas sync` then uses SyncConfig's defaults).
    sync: SyncConfig | None = None
    guard: GuardConfig = GuardConfig()
    schema_version: int = SCHEMA_VERSION
    raw: Mapping[str, Any] = MappingProxyType({})
    clock_skew_allowance_s: float = 2.0


def default_config(projects: list[str], default_project: str) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "projects": projects,
        "default_project": default_project,
        "lease_cap": DEFAULT_LEASE_CAP,
        "status_limit": DEFAULT_STATUS_LIMIT,
        "body_limit": DEFAULT_BODY_LIMIT,
        "clock_tolerance": DEFAULT_CLOCK_TOLERANCE,
        "machines": {},
    }


def render(data: Mapping[str, Any]) -> bytes:
    head = (
        "# atlas-files record config. `atlas check` validates it against its schema.\n"
        "# lease_cap: the longest lease (at most 24h); status_limit: characters before a\n"
        "# status write is warned about; body_limit: the largest body in bytes; machines:\n"
        "# what `atlas telemetry probe` visits; sync: the git remote the record travels\n"
        "# by (remote, branch, auto, fetch_every; see `atlas sync --help`); guard.recent:\n"
        "# how recent another author's commit to a file must be for the edit guard to say\n"
        "# so; news.every: how often at most the news hook looks (docs/sessions.md).\n"
    )
    import yaml  # noqa: PLC0415 - only a write of the config pays for PyYAML

    return (head + yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True)).encode()


def read(path: Path) -> bytes:
    """atlas.yaml's bytes: a plain file of at most CONFIG_LIMIT bytes, never a symlink (it
    may lead anywhere), a named pipe (it would hang the reader) or a device (/dev/zero
    would fill its memory). FileNotFoundError when there is none."""
    try:
        return fsio.read_nofollow(path, CONFIG_LIMIT)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise fsio.damage(path, exc, "config file") from None


def load(path: Path, data: bytes | None = None) -> Config:
    """The config in ``path`` (``data``: its bytes, read already)."""
    if data is None:
        data = read(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DamagedFile(f"{path} is not UTF-8 text") from None
    try:
        data = yamlcache.load(text, load_yaml)  # the same text: last time's parse
    except YamlError as exc:
        raise DamagedFile(
            f"{path}:{exc.line + 1}: {exc}",
            hint="fix the file by hand, then run `atlas check`",
        ) from None
    if not isinstance(data, dict):
        raise DamagedFile(f"{path} should be a YAML mapping", hint="see `atlas init --help`")
    return from_mapping(data, path)


def _duration(data: Mapping[str, Any], key: str, default: str,
              label: str | None = None) -> float:
    value = data.get(key, default)
    # Never str() a value of unknown size for a message; quote() shows a bounded part.
    if isinstance(value, str):
        try:
            return timeutil.parse_duration(value)
        except BadInput:
            pass
    raise DamagedFile(f"{label or key} is {quote(value)}; it must be a duration such as 4h "
                      "or 90m")


def _git_name(spec: Mapping[str, Any], key: str) -> str | None:
    value = spec.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(_GIT_NAME, value) or ".." in value \
            or value.endswith((".", "/", ".lock")):
        raise DamagedFile(f"sync.{key} is {quote(value)}; it must be a git {key} name such "
                          "as origin or main")
    return value


def _sync(spec: Any) -> SyncConfig | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise DamagedFile("sync must be a mapping: remote, branch, auto, fetch_every")
    unknown = sorted(set(spec) - {"remote", "branch", "auto", "fetch_every"})
    if unknown:
        raise DamagedFile(f"sync has unknown key(s) {', '.join(map(quote, unknown))}; it "
                          "takes remote, branch, auto and fetch_every")
    auto = spec.get("auto", False)
    if not isinstance(auto, bool):
        raise DamagedFile(f"sync.auto is {quote(auto)}; it must be true or false")
    return SyncConfig(
        remote=_git_name(spec, "remote") or DEFAULT_SYNC_REMOTE,
        branch=_git_name(spec, "branch"),
        auto=auto,
        fetch_every_s=_duration(spec, "fetch_every", DEFAULT_FETCH_EVERY),
    )


def _section(data: Mapping[str, Any], key: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    spec = data.get(key)
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise DamagedFile(f"{key} must be a mapping: {', '.join(keys)}")
    unknown = sorted(set(spec) - set(keys))
    if unknown:
        raise DamagedFile(f"{key} has unknown key(s) {', '.join(map(quote, unknown))}; it "
                          f"takes {', '.join(keys)}")
    return spec


def _guard(data: Mapping[str, Any]) -> GuardConfig:
    guard = _section(data, "guard", ("recent",))
    news = _section(data, "news", ("every", "limit"))
    recent = _duration(guard, "recent", DEFAULT_GUARD_RECENT, "guard.recent")
    if not 0 < recent <= MAX_GUARD_RECENT_S:
        raise DamagedFile(f"guard.recent is {quote(guard.get('recent'))}; it must lie "
                          "between 1s and 7d")
    limit = news.get("limit", DEFAULT_NEWS_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 200 <= limit <= 20000:
        raise DamagedFile(f"news.limit is {quote(limit)}; it must be a whole number of "
                          "characters from 200 to 20000")
    return GuardConfig(recent, _duration(news, "every", DEFAULT_NEWS_EVERY, "news.every"),
                       limit)


def from_mapping(data: Mapping[str, Any], path: Path) -> Config:
    try:
        version = data.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise DamagedFile(
                f"schema_version is {quote(version)}; this atlas-files reads version "
                f"{SCHEMA_VERSION}",
                hint="a newer atlas-files wrote this record: upgrade atlas-files",
            )
        raw_projects = data.get("projects") or []
        if not isinstance(raw_projects, list) or not all(
            isinstance(p, str) for p in raw_projects
        ):
            raise DamagedFile("projects must be a list of project names, one per line '- name'")
        projects = tuple(check_name(p, "project name") for p in raw_projects)
        default = data.get("default_project") or (projects[0] if projects else None)
        if default is not None:
            check_name(default, "project name")
        lease_cap = _duration(data, "lease_cap", DEFAULT_LEASE_CAP)
        if lease_cap > MAX_LEASE_CAP_S:
            raise DamagedFile(f"lease_cap is {quote(data.get('lease_cap'))}; the most "
                              "allowed is 24h")
        tolerance = _duration(data, "clock_tolerance", DEFAULT_CLOCK_TOLERANCE)
        allowance = _duration(data, "clock_skew_allowance", DEFAULT_CLOCK_SKEW_ALLOWANCE)
        limit = data.get("status_limit", DEFAULT_STATUS_LIMIT)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise DamagedFile(f"status_limit is {quote(limit)}; it must be a whole number "
                              "above 0")
        body_limit = data.get("body_limit", DEFAULT_BODY_LIMIT)
        if not isinstance(body_limit, int) or isinstance(body_limit, bool) or body_limit < 1:
            raise DamagedFile(f"body_limit is {quote(body_limit)}; it must be a whole number "
                              "of bytes above 0")
        raw_machines = data.get("machines") or {}
        if not isinstance(raw_machines, dict):
            raise DamagedFile("machines must be a mapping of machine name to its probe")
        machines = {}
        for name, spec in raw_machines.items():
            check_name(name, "machine name")
            spec = spec or {}
            if not isinstance(spec, dict) or not isinstance(spec.get("probe"), str) \
                    or not spec["probe"]:
                raise DamagedFile(f"machine {name!r} needs a `probe:` command (or `local`)")
            stale = spec.get("stale_after_intervals", 3)
            if not isinstance(stale, int | float) or isinstance(stale, bool):
                raise DamagedFile(f"machine {name!r}: stale_after_intervals is "
                                  f"{quote(stale)}; it must be a number")
            machines[name] = Machine(
                name=name,
                probe=spec["probe"],
                timeout_s=_duration(spec, "timeout", DEFAULT_PROBE_TIMEOUT),
                interval_s=_duration(spec, "interval", DEFAULT_PROBE_INTERVAL),
                stale_after_intervals=float(stale),
            )
        return Config(
            sync=_sync(data.get("sync")),
            guard=_guard(data),
            projects=projects,
            default_project=default or "",
            lease_cap_s=lease_cap,
            status_limit=limit,
            body_limit=body_limit,
            clock_tolerance_s=tolerance,
            clock_skew_allowance_s=allowance,
            machines=machines,
            schema_version=SCHEMA_VERSION,
            raw=dict(data),
        )
    except AtlasError as exc:
        raise DamagedFile(f"{path}: {exc.message}",
                          hint=exc.hint if isinstance(exc, DamagedFile) and exc.hint
                          else "fix atlas.yaml by hand") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise DamagedFile(f"{path}: {str(exc)[:200]}", hint="fix atlas.yaml by hand") from None
