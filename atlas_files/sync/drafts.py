"""A collision: the same path added here and on the remote with different bytes.

The remote's file won (it was pushed first). A local version or entry that lost is kept,
byte for byte, as a draft under ``.atlas-drafts/`` (ignored by git, never pushed), and its
writer's receipt is set back to the version that writer had read, so the next write stops
and asks for a read of the winner. A lease generation that lost is a claim that lost: it
holds nothing and is not kept.

A draft is obsolete once its writer has written the topic again after it was kept: that
later version was written after reading the winner (the lowered receipt asks for the read,
and the stop sign for the merge), so it is the writer's latest attempt. The sync that
pushes such a version from this checkout removes the drafts it supersedes; one that lost
too replaces them as the draft that waits. Every other draft stays until its writer
deletes it: the writer's latest of a topic, one of an entry, one of a writer atlas cannot
name, and one superseded only by a version written elsewhere (a writer of the same name on
another machine never saw this draft) or before the draft was kept (a version written on
top of the one that lost, before the race was told).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable
from typing import NamedTuple

from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import AtlasError, BadInput, LeaseHeld, VersionConflict
from atlas_files.facts.names import is_name
from atlas_files.storage import frontmatter, fsio, receipts
from atlas_files.storage.record import Record
from atlas_files.sync.paths import Kind, draft_path, kind

# How much of the winner's file is read to say who wrote it and when: its front matter
# (or a lease generation's JSON) lies well within it, however large the file.
META_LIMIT = 64 * 1024
_DRAFTS_IGNORE = b"# versions that lost a race on the git remote; never pushed\n*\n"


class Collision(NamedTuple):
    path: str  # relative to the record
    kind: Kind
    draft: str | None  # relative to the record; None for a lease generation
    author: str  # who wrote the local file
    based_on: int | None  # the version the local writer had read
    winner: str  # who wrote the remote's file
    winner_at: str  # when, as written in it
    expires_at: str | None = None  # a lease the winner holds: until when
    replaced: tuple[str, ...] = ()  # the writer's earlier drafts this one supersedes


def _version_meta(data: bytes) -> tuple[str, int | None, str]:
    """(author, based_on, written_at) of a version's or entry's bytes; unknowns where the
    front matter cannot be read."""
    try:
        meta = frontmatter.parse(data).meta
    except frontmatter.FrontMatterError:
        return "unknown", None, "an unknown time"
    author = meta.get("author")
    based_on = meta.get("based_on")
    at = meta.get("written_at") or meta.get("at")
    return (author if isinstance(author, str) else "unknown",
            based_on if isinstance(based_on, int) and not isinstance(based_on, bool) else None,
            str(at)[:40] if at else "an unknown time")


def _lease_meta(data: bytes) -> tuple[str, str, str | None]:
    """(holder or writer, written_at, expires_at) of a lease generation's bytes."""
    try:
        raw = json.loads(data)
    except ValueError:
        return "unknown", "an unknown time", None
    if not isinstance(raw, dict):
        return "unknown", "an unknown time", None
    who = raw.get("holder") or raw.get("written_by") or "unknown"
    return str(who)[:100], str(raw.get("written_at") or "an unknown time")[:40], \
        raw.get("expires_at") if isinstance(raw.get("expires_at"), str) else None


def _save(record: Record, rel: str, data: bytes) -> str:
    """Publish ``data`` at draft path ``rel`` (or beside it if another draft holds that
    name with other bytes); returns where it lies."""
    folder = record.path(layout.DRAFTS)  # never through a symlink
    if not folder.is_dir():
        # Ignored even where the record's .gitignore predates drafts.
        with fsio.open_folder(folder, within=record.opened, create=True) as made:
            made.replace_atomic(".gitignore", _DRAFTS_IGNORE)
    stem, dot, ext = rel.rpartition(".")
    for n in range(1, 1000):
        candidate = rel if n == 1 else f"{stem}.{n}{dot}{ext}"
        *folders, name = candidate.split("/")
        target = record.path(*folders, name)
        try:
            with fsio.open_folder(target.parent, within=record.opened, create=True) as where:
                where.publish_exclusive(name, data, mode=0o644)
            return candidate
        except FileExistsError:
            with contextlib.suppress(OSError):
                if fsio.read_nofollow(target) == data:
                    return candidate  # kept already (a sync that died after keeping it)
    raise AtlasError(f"too many drafts named like {rel}",
                     hint=f"clear out {layout.DRAFTS}/ once their text is merged")


def keep(record: Record, path: str, ours: bytes, theirs: bytes) -> Collision:
    """Keep the local loser of a collision at ``path`` and say who won."""
    k = kind(path)
    if k.what == "lease":
        mine, _, _ = _lease_meta(ours)
        winner, at, expires = _lease_meta(theirs)
        return Collision(path, k, None, mine, None, winner, at, expires)
    author, based_on, written_at = _version_meta(ours)
    winner, _, at = _version_meta(theirs)
    identity = author if is_name(author) else "unknown"
    # This writer's earlier drafts of the topic kept before this version was written: it
    # was written after reading, so it is their latest attempt (a draft too, now).
    replaced = _clear(record, k.project, k.name, lambda: [(k.number, author, written_at)]) \
        if k.what == "version" else []
    draft = _save(record, draft_path(path, identity), ours)
    if k.what == "version" and based_on is not None and is_name(author):
        key = receipts.status_key(k.project) if k.name == "status" \
            else receipts.artifact_key(k.project, k.name)
        receipts.lower(record, author, {key: based_on})
    return Collision(path, k, draft, author, based_on, winner, at, replaced=tuple(replaced))


def superseded(record: Record, landed: list[str],
               read: Callable[[str], bytes]) -> list[str]:
    """Remove the drafts that the versions ``landed`` supersede and return them (paths
    relative to the record). ``landed``: versions this checkout has just pushed, relative
    to the record; ``read(path)`` gives at least the front matter of one of them."""
    topics: dict[tuple[str, str], list[str]] = {}
    for rel in landed:
        k = kind(rel)
        if k.what == "version":
            topics.setdefault((k.project, k.name), []).append(rel)
    removed: list[str] = []
    for (project, name), paths in topics.items():
        removed += _clear(record, project, name, functools.partial(_authored, paths, read))
    return removed


def _authored(paths: list[str], read: Callable[[str], bytes]) -> list[tuple[int, str, str]]:
    """(number, author, written_at) of each version at ``paths``."""
    out = []
    for rel in paths:
        author, _, written_at = _version_meta(read(rel))
        out.append((kind(rel).number, author, written_at))
    return out


def _clear(record: Record, project: str, name: str,
           later: Callable[[], list[tuple[int, str, str]]]) -> list[str]:
    """Remove the drafts of one topic that a version in ``later`` (number, author,
    written_at; read only if the topic has drafts) supersedes; return them."""
    try:
        here = record.path(layout.DRAFTS, project, name)
        names = sorted(os.listdir(here))
    except (OSError, BadInput):
        return []  # no draft of this topic, or a folder atlas never made (a symlink)
    found = [(n, v) for n in names if (v := layout.draft_version(name, n)) is not None]
    if not found:
        return []
    versions = later()
    removed = []
    for draft, number in found:
        try:
            data, st = fsio.read_with_stat(here / draft)
        except OSError:
            continue  # not a plain file: not a draft atlas kept
        author, _, _ = _version_meta(data)
        if is_name(author) and any(
                m > number and who == author and _written_after(at, st.st_mtime)
                for m, who, at in versions):
            with contextlib.suppress(FileNotFoundError):
                (here / draft).unlink()
            removed.append(f"{layout.DRAFTS}/{project}/{name}/{draft}")
    with contextlib.suppress(OSError):
        here.rmdir()  # only when it is empty now
    return removed


def _written_after(written_at: str, kept_at: float) -> bool:
    """Whether a version written here at ``written_at`` came after a draft kept here at
    ``kept_at`` (both this machine's clock); False when the time cannot be read."""
    try:
        return timeutil.parse_time(written_at).timestamp() > kept_at
    except ValueError:
        return False


def waiting(record: Record) -> list[str]:
    """Every draft in the record, relative to it, oldest name first."""
    folder = record.path(layout.DRAFTS)
    found: list[str] = []
    if not folder.is_dir():
        return found
    for here, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if name != ".gitignore" and not fsio.is_temp(name):  # a kill's debris
                found.append(os.path.relpath(os.path.join(here, name), record.root))
    return found


def _when(at: str) -> str:
    return timeutil.age_of(at) if at[:1].isdigit() else at


def _version_lines(c: Collision, where: str, default_project: str) -> tuple[str, str]:
    k = c.kind
    p = "" if k.project == default_project else f" -p {k.project}"
    if k.what == "entry":
        return (f"{k.describe()} was also written on {where} with other text; yours is kept "
                f"at {c.draft}", f"write it again as a new entry from {c.draft}")
    status = k.name == "status"
    what = f"{'status' if status else k.name} v{k.number}" + (
        f" of project {k.project}" if p else "")
    said = (f"{what} was published first on {where} by {c.winner} ({_when(c.winner_at)}); "
            f"yours ({c.author}'s) lost the race and was not published. It is kept, byte "
            f"for byte, at {c.draft} (ignored by git)")
    read = "status show" if status else f"get {k.name}"
    write = "status write" if status else f"put {k.name}"
    hint = (f"read v{k.number} (`atlas{p} {read}`), merge your draft's text into it, then "
            f"write the result as the next version: `atlas{p} {write} --expect {k.number} "
            "-f MERGED_FILE`")
    return said, hint


def error(collisions: list[Collision], where: str, default_project: str) -> AtlasError:
    """The stop sign for versions and entries that lost (exit 3), else the held sign for
    lease generations that lost (exit 4)."""
    bodies = [c for c in collisions if c.kind.what != "lease"]
    if bodies:
        parts = [_version_lines(c, where, default_project) for c in bodies]
        more = "" if len(collisions) == len(bodies) else \
            f" ({len(collisions) - len(bodies)} lease change(s) lost too)"
        return VersionConflict("stop: " + "; ".join(p[0] for p in parts) + "." + more,
                               hint="; ".join(dict.fromkeys(p[1] for p in parts)))
    c = collisions[0]
    held = f", holding it until {c.expires_at}" if c.expires_at else ""
    return LeaseHeld(
        f"held: {c.winner} changed the lease of {c.kind.name} first on {where} (generation "
        f"{c.kind.number}, {_when(c.winner_at)}{held}); your change lost the race and "
        "holds nothing",
        hint=f"`atlas lease show {c.kind.name}` says who holds it and until when",
    )
