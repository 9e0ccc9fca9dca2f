"""The feed: for one reader, every status and topic with a version newer than it has read."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from atlas_files.facts.errors import AtlasError, BadInput, DamagedFile, warn
from atlas_files.facts.names import check_name
from atlas_files.protocol.artifacts import artifacts_folder, topic_hints, topic_names
from atlas_files.protocol.stopsign import read_through_writes
from atlas_files.storage import receipts
from atlas_files.storage.documents import LatestHints

if TYPE_CHECKING:
    from atlas_files.storage.record import Record


class FeedItem(NamedTuple):
    """One status or topic newer than its reader has read. A NamedTuple, as the other
    records every command reads: a feed of ten thousand topics makes ten thousand."""

    kind: str  # "status" or "artifact"
    project: str
    name: str
    version: int
    read_version: int
    author: str
    written_at: str
    summary: str

    @property
    def key(self) -> str:
        if self.kind == "status":
            return receipts.status_key(self.project)
        return receipts.artifact_key(self.project, self.name)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind, "project": self.project, "name": self.name,
            "version": self.version, "read_version": self.read_version,
            "author": self.author, "written_at": self.written_at, "summary": self.summary,
        }


def feed(record: Record, identity: str | None, *, mark_read: bool = False) -> list[FeedItem]:
    """Every status and topic newer than ``identity`` has read, project by project.

    Nothing damaged or unreadable stops the feed: a damaged receipt row reads as no
    receipts (everything is offered), and a version or folder that cannot be read is left
    out; each with a warning that names the file.
    """
    if not identity:
        raise BadInput(
            "whose feed? the feed is what one identity has not read yet",
            hint="pass --as NAME or set ATLAS_AS=NAME",
        )
    identity = check_name(identity, "identity")
    try:
        read = receipts.read(record, identity)
    except (DamagedFile, OSError) as exc:
        warn(f"{_reason(exc)}; the feed treats {identity} as having read nothing")
        read = {}
    items: list[FeedItem] = []
    for project in record.config.projects:
        items += _project_items(record, project, identity, read)
    if mark_read and items:
        try:
            receipts.mark(record, identity, {item.key: item.version for item in items})
        except (DamagedFile, OSError) as exc:
            raise NotMarked(items, _reason(exc)) from None
    return items


class NotMarked(AtlasError):
    """`feed --mark-read` found what is new but could not mark it read: nothing was
    marked. Exit 2, as the environment's other refusals; ``items`` is what was new."""

    kind = "environment"

    def __init__(self, items: list[FeedItem], reason: str) -> None:
        super().__init__(
            f"{len(items)} new to you, but nothing was marked as read: {reason}",
            hint="make receipts/ writable by you (a damaged receipts row may be deleted: it "
                 "only holds what you have read, on this machine), then run `atlas feed "
                 "--mark-read` again; `atlas feed` lists without marking")
        self.items = items


def _reason(exc: Exception) -> str:
    if isinstance(exc, AtlasError):
        return exc.message
    where = f" {exc.filename}" if isinstance(exc, OSError) and exc.filename else ""
    return f"cannot read{where}: {exc.strerror if isinstance(exc, OSError) else exc}"


def _project_items(record: Record, project: str, identity: str,
                   read: dict[str, int]) -> list[FeedItem]:
    items: list[FeedItem] = []
    status = record.status_stream(project)
    status_hints = LatestHints(record.project_dir(project), record.opened,
                               lambda _name: status)
    hints = topic_hints(record, project)
    try:
        topics = topic_names(record, project)
    except OSError as exc:  # one unreadable folder must not hide the rest of the record
        warn(f"{artifacts_folder(record, project)} cannot be read "
             f"({exc.strerror or exc}): its topics are left out of the feed")
        topics = []
    streams: list[tuple[str, str, LatestHints]] = [("status", status.name, status_hints)]
    streams += [("artifact", name, hints) for name in topics]
    for kind, name, hints_of in streams:
        key = (
            receipts.status_key(project) if kind == "status"
            else receipts.artifact_key(project, name)
        )
        try:
            latest = hints_of.latest(name)
            seen = read.get(key, 0)
            if latest <= seen:
                continue
            doc = hints_of.head(name, latest)
        except BadInput as exc:
            warn(f"{exc.message} (left out of the feed; `atlas check` tells more)")
            continue
        except OSError as exc:
            where = exc.filename or f"{artifacts_folder(record, project)}/{name}"
            warn(f"{where} cannot be read ({exc.strerror or exc}): left out of the feed")
            continue
        if doc.author == identity:
            continue  # a write counts as a read of what it wrote
        if key in read:  # and what it read is moved on through the writes since
            seen = read_through_writes(hints_of.stream(name), identity, seen,
                                       latest, latest_author=doc.author)
        items.append(FeedItem(
            kind, project, name, latest, seen, doc.author, doc.written_at, doc.summary,
        ))
    status_hints.save()
    hints.save()
    return items
