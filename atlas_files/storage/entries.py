"""Append-only entries: one immutable file per entry, named by a collision-free id.

Decisions and corrections are entries. An id is the writer's clock to the microsecond
plus 32 random bits (``dec-20261129t110512123456z-1a2b3c4d``): no counter is shared, so
two writers at once, or two git branches merged later, never produce the same name, and
sorting the names sorts the entries by time. The file is published with an exclusive
create; in the rare case that the name exists, a fresh random part is drawn.

An entry is Markdown with front matter: every field lives in the front matter (readable in
a diff), and ``digest`` is the sha256 of the fields and the body together, so an edit of
any field after publication is detectable. The digest catches accidents and hand edits; it
is no protection against someone who recomputes it.

Fields are checked by hand before writing (the modules that build entries do that); the
JSON Schemas in schemas/ are applied by ``validate`` (for `atlas check`), which alone pays
for importing jsonschema.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from atlas_files.facts import timeutil
from atlas_files.facts.errors import DamagedFile
from atlas_files.facts.layout import entry_filename, is_entry_file
from atlas_files.storage import frontmatter, fsio, schemas

PREFIXES = {"decision": "dec", "correction": "cor", "retraction": "cor",
            # Tasks and what happened to them name themselves (``publish``'s ``make_id``).
            "task": "", "task-done": "", "task-dropped": ""}
# The schema that describes each kind of entry.
SCHEMA_OF = {"decision": "decision", "correction": "correction", "retraction": "correction",
             "task": "task", "task-done": "task", "task-dropped": "task"}
_PUBLISH_TRIES = 8
# An entry holds a few fields of at most a few thousand characters each; a file far
# larger was not written by atlas, and a reader refuses it unread.
ENTRY_LIMIT = 1 << 20


def _random_part() -> str:
    return os.urandom(4).hex()


def new_id(prefix: str, at: datetime) -> str:
    """``<prefix>-<yyyymmdd>t<hhmmss><microseconds>z-<8 hex>`` for the time ``at``."""
    stamp = at.astimezone(UTC).strftime("%Y%m%dt%H%M%S%fz")
    return f"{prefix}-{stamp}-{_random_part()}"


def digest_of_entry(meta: dict[str, Any], body: bytes) -> str:
    """sha256 over the canonical JSON of every field but ``digest``, then the body."""
    fields = {k: v for k, v in meta.items() if k != "digest" and v is not None}
    canonical = json.dumps(
        fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
    )
    import hashlib  # noqa: PLC0415 - a no-op sync or a read need not load OpenSSL

    h = hashlib.sha256(canonical.encode("utf-8", "surrogatepass"))
    h.update(b"\n")
    h.update(body)
    return "sha256:" + h.hexdigest()


class Entry(NamedTuple):
    """One published entry as read from its file."""

    id: str
    kind: str
    meta: dict[str, Any]
    body: str
    path: Path
    digest_ok: bool | None  # None: the file states no digest (hand-written, not stamped)

    @property
    def name_ok(self) -> bool:
        """The file is named after the id it holds (a copied-and-renamed file is not)."""
        return self.path.name == entry_filename(self.id)


# -- writing ------------------------------------------------------------------------------


def publish(folder: Path, kind: str, fields: dict[str, Any], body: str = "", *,
            within: fsio.OpenRoot | None = None,
            make_id: Callable[[datetime], str] | None = None) -> Entry:
    """Publish a new entry of ``kind`` in ``folder``: id, time and digest are stamped here.

    ``fields`` must already be checked. Raises nothing on a name collision: another random
    part is drawn (two entries never share a name, and neither is lost). ``within``: the
    record the command opened (the folder is reached from it, see fsio.OpenRoot).
    ``make_id`` draws an id for a time (default: ``new_id`` with the kind's prefix); the
    file is named after the id.
    """
    prefix = PREFIXES[kind]
    raw = body.encode("utf-8")
    try:
        where = fsio.open_folder(folder, within=within, create=True)
    except (FileExistsError, NotADirectoryError):
        raise not_a_folder(folder) from None
    with where:
        where.clean_debris()
        for _ in range(_PUBLISH_TRIES):
            at = timeutil.now()
            entry_id = make_id(at) if make_id is not None else new_id(prefix, at)
            meta: dict[str, Any] = {"id": entry_id, "kind": kind,
                                    "at": timeutil.format_time(at)}
            meta.update({k: v for k, v in fields.items() if v is not None})
            meta["digest"] = digest_of_entry(meta, raw)
            try:
                path = where.publish_exclusive(entry_filename(entry_id),
                                               frontmatter.render(meta, raw))
            except FileExistsError:
                continue
            return Entry(entry_id, kind, meta, body, path, True)
    raise RuntimeError(f"could not find a free entry name in {folder}")  # pragma: no cover


# -- reading ------------------------------------------------------------------------------


def not_a_folder(folder: Path) -> DamagedFile:
    return DamagedFile(
        f"{folder} should be a folder of entries, but something else is in its place",
        hint="move it aside and restore the folder (from git, if the record is in one); "
        "`atlas check` lists what else is wrong",
    )


def read_entry(path: Path, limit: int = ENTRY_LIMIT) -> Entry:
    """Read one entry file; raises DamagedFile if it cannot be read as an entry at all.

    A file that reads but whose digest no longer matches its fields is returned with
    ``digest_ok`` False: it was edited after publication. A symlink is refused, not
    followed (the check and the open are one system call, so nothing can swap it in
    between).
    """
    try:
        data = fsio.read_nofollow(path, limit)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise fsio.damage(path, exc, "entry") from None
    return parse_entry(path, data)


def parse_entry(path: Path, data: bytes) -> Entry:
    """The entry in ``data``, the bytes of the file at ``path`` (see ``read_entry``)."""
    try:
        parsed = frontmatter.parse(data)
    except frontmatter.FrontMatterError as exc:
        raise DamagedFile(
            f"{path}:{exc.line}: {exc}",
            hint="entries are never edited; restore the file from git, or record a "
            "correction instead",
        ) from None
    meta = parsed.meta
    try:
        body = parsed.body.decode("utf-8")
    except UnicodeDecodeError:
        raise DamagedFile(f"{path}: the body is not UTF-8 text") from None
    entry_id = meta.get("id")
    kind = meta.get("kind")
    if not isinstance(entry_id, str) or not isinstance(kind, str) or kind not in PREFIXES:
        raise DamagedFile(
            f"{path}: front matter lacks a valid id or kind ({', '.join(PREFIXES)})",
            hint="run `atlas check` on the record to see what is wrong",
        )
    stated = meta.get("digest")
    digest_ok = None if stated is None else stated == digest_of_entry(meta, parsed.body)
    return Entry(entry_id, kind, meta, body, path, digest_ok)


def entry_paths(folder: Path) -> list[Path]:
    """The files in ``folder`` named like entries, oldest first (ids sort by time). One
    listing.

    Symlinks and folders with an entry's name are listed too, so that a reader reports
    them (``read_entry`` refuses them) instead of silently leaving them out.
    """
    try:
        names = [n for n in os.listdir(folder) if is_entry_file(n)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [folder / n for n in sorted(names)]


def iter_entries(
    folder: Path, on_damaged: Callable[[Path, str], None] | None = None
) -> Iterator[Entry]:
    """Every readable entry in ``folder``, oldest first; unreadable ones go to ``on_damaged``
    (so does ``folder`` itself, when a file is in its place)."""
    paths = entry_paths(folder)
    if not paths and on_damaged is not None and os.path.lexists(folder) \
            and not os.path.isdir(folder):
        on_damaged(folder, not_a_folder(folder).message)
    for path in paths:
        try:
            yield read_entry(path)
        except (DamagedFile, OSError) as exc:
            if on_damaged is not None:
                on_damaged(path, str(exc))


def validate(entry: Entry) -> list[tuple[str, str]]:
    """(JSON path, message) for each way the entry fails its kind's JSON Schema."""
    meta = {k: (timeutil.format_time(v) if isinstance(v, datetime) else v)
            for k, v in entry.meta.items()}
    return schemas.errors(SCHEMA_OF[entry.kind], meta)
