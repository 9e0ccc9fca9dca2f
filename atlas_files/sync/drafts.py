"""A collision: the same path added here and on the remote with different bytes.

The remote's file won (it was pushed first). A local version or entry that lost is kept,
byte for byte, as a draft under ``.atlas-drafts/`` (ignored by git, never pushed), and its
writer's receipt is set back to the version that writer had read, so the next write stops
and asks for a read of the winner. A lease generation that lost is a claim that lost: it
holds nothing and is not kept.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import NamedTuple

from atlas_files import frontmatter, fsio, layout, receipts, timeutil
from atlas_files.errors import AtlasError, LeaseHeld, VersionConflict
from atlas_files.names import is_name
from atlas_files.record import Record
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
    author, based_on, _ = _version_meta(ours)
    winner, _, at = _version_meta(theirs)
    identity = author if is_name(author) else "unknown"
    draft = _save(record, draft_path(path, identity), ours)
    if k.what == "version" and based_on is not None and is_name(author):
        key = receipts.status_key(k.project) if k.name == "status" \
            else receipts.artifact_key(k.project, k.name)
        receipts.lower(record, author, {key: based_on})
    return Collision(path, k, draft, author, based_on, winner, at)


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
