"""The artifact channel: handoff documents with stable names, one folder per topic."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from atlas_files.facts import layout
from atlas_files.facts.errors import BadInput, NotFound, warn
from atlas_files.facts.names import is_name
from atlas_files.protocol import corrections
from atlas_files.protocol.diffs import Diff, diff_stream, unified_diff
from atlas_files.protocol.stopsign import read_marked, write_checked
from atlas_files.storage import receipts, watched
from atlas_files.storage.documents import (
    Known,
    LatestHints,
    Stream,
    Unreadable,
    Version,
    clean_summary,
    read_each,
)
from atlas_files.storage.record import require_identity

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

# Diff, diff_stream and unified_diff live in diffs; kept here for callers of this module.

__all__ = ["Diff", "TopicSummary", "diff", "diff_stream", "get", "history", "ls",
           "ls_accepted", "put", "topic_hints", "topic_names",
           "topic_stream_maker", "topic_streams", "unified_diff"]


class TopicSummary(NamedTuple):
    name: str
    version: int
    author: str
    written_at: str
    summary: str
    proposal: bool

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name, "version": self.version, "author": self.author,
            "written_at": self.written_at, "summary": self.summary, "proposal": self.proposal,
        }


def put(
    record: Record,
    name: str,
    body: str,
    *,
    author: str | None,
    project: str | None = None,
    expect: int | None = None,
    summary: str | None = None,
    proposal: bool = False,
    links: Sequence[str] = (),
) -> Version:
    author = require_identity(author)
    stream = record.artifact_stream(name, project)
    p = record.project(project)
    if links:
        # What a version builds on must exist, or the link is dangling from birth.
        links = corrections.resolve_refs(record, p, links, "--link")
    if summary is not None:
        summary = clean_summary(summary)
    return write_checked(
        record, stream, receipts.artifact_key(p, name), body, author=author, expect=expect,
        summary=summary, proposal=proposal, links=links,
    )


def get(
    record: Record,
    name: str,
    *,
    reader: str | None = None,
    version: int | None = None,
    project: str | None = None,
) -> Version:
    stream = record.artifact_stream(name, project)
    if version is None:
        version = stream.latest_for_reading()
        if version == 0:
            raise NotFound(
                f"no topic named {name!r} in project {record.project(project)}",
                hint="`atlas ls` lists the topics; `atlas put` creates one",
            )
    key = receipts.artifact_key(record.project(project), name)
    return read_marked(record, stream, key, reader=reader, version=version)


def artifacts_folder(record: Record, project: str | None = None) -> Path:
    return record.path("projects", record.project(project), "artifacts")


def topic_streams(record: Record, project: str | None = None) -> list[Stream]:
    """The project's topics, sorted by name, from one listing of the artifacts folder.

    Folders whose names are no topic names are left out here, and so are symlinks (with a
    warning: the record never follows one); `atlas check` reports them.
    """
    p = record.project(project)
    stream_of = topic_stream_maker(record, p)
    return [stream_of(name) for name in topic_names(record, p)]


def topic_names(record: Record, project: str | None = None) -> list[str]:
    """The names of ``topic_streams``, without making a Stream of each: a reader of every
    topic makes one only where its hint missed (documents.LatestHints)."""
    p = record.project(project)
    held = _kept(record, p)
    if held is not None:
        return list(held["names"])
    return _list_topics(record, p)


def _list_topics(record: Record, p: str) -> list[str]:
    try:
        with os.scandir(artifacts_folder(record, p)) as found:
            # Sorted by name alone: a key function per entry costs more than the sort.
            by_name = {entry.name: entry for entry in found}
    except FileNotFoundError:
        return []
    names = []
    for name in sorted(by_name):
        entry = by_name[name]
        if name.startswith(".") or not is_name(name) or name == "status":
            continue
        if entry.is_symlink():
            try:
                record.path("projects", p, "artifacts", name)
            except BadInput as exc:
                warn(f"{exc.message} (left out of this listing)")
            continue
        if entry.is_dir(follow_symlinks=False):
            names.append(name)
    return names


def topic_stream_maker(record: Record, project: str) -> Callable[[str], Stream]:
    """The Stream of a topic named by ``topic_names``, as ``topic_streams`` makes
    it (no second check of its name)."""
    folder = artifacts_folder(record, project)
    limit = record.config.body_limit
    return lambda name: Stream(folder / name, name, name, limit, record.opened)


def topic_hints(record: Record, project: str | None = None) -> LatestHints:
    """The latest-version hints of ``project``'s topics, making a topic's Stream as
    ``topic_streams`` does where a hint misses; in a served command, what the command
    server read of every topic while nothing changed since (``snapshot``)."""
    p = record.project(project)
    held = _kept(record, p)
    if held is None:
        # A served command: the command server reads them ahead for the next
        # (server/watching.py).
        watched.want("artifacts", os.path.abspath(record.root), p)
    return LatestHints(artifacts_folder(record, p), record.opened,
                       topic_stream_maker(record, p),
                       known=held["heads"] if held is not None else None)


def _kept(record: Record, project: str) -> dict[str, Any] | None:
    folder = artifacts_folder(record, project)
    held = watched.kept(folder)
    return held if held is not None and held["folder"] == str(folder) else None


def snapshot(record: Record, project: str, old: dict[str, Any] | None = None,
             changed: set[str] | None = None) -> dict[str, Any]:
    """Every topic of ``project`` with its latest version and that version's front matter
    (or what reading them raised), read now: what the command server keeps while the
    kernel reports no change to the artifacts folder nor to any topic's folder (storage/
    watched.py). Given the ``old`` copy and the folders that ``changed`` since (the
    artifacts folder itself: the topics were renamed, added or removed), only those are
    read again."""
    folder = artifacts_folder(record, project)
    base = str(folder)
    if old is None or changed is None or base in changed:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            names = _list_topics(record, project)
        if caught:  # a symlink among the topics: its warning is said by each listing
            raise watched.Unkeepable(str(caught[0].message))
    else:
        names = old["names"]
    whole = old is None or changed is None
    if old is None or changed is None:
        again = set(names)
    else:
        again = {os.path.basename(c) for c in changed if c != base} | \
            (set(names) - old["heads"].keys())
    # A few topics read again need no hints (loading them costs more than the reads), and
    # must not save them: that would write a file of those few.
    hints = LatestHints(folder, record.opened, topic_stream_maker(record, project),
                        known=None if whole else {})
    heads: dict[str, Known] = {} if old is None else \
        {n: old["heads"][n] for n in names if n in old["heads"] and n not in again}
    for name in names:
        if name in again:
            watched.checkpoint()  # the server's reading ahead may stop between topics
            heads[name] = _known(hints, name)
            latest = heads[name][0]
            if isinstance(latest, int) and latest and os.stat(
                    folder / name / layout.version_filename(name, latest),
                    follow_symlinks=False).st_nlink > 1:
                # Written through its other name, it would change with no event here.
                raise watched.Unkeepable(f"{name} v{latest} has another name elsewhere")
    if whole:
        hints.save()
    return {"folder": base, "names": names, "heads": {n: heads[n] for n in names}}


def topic_folders(record: Record, project: str) -> list[str]:
    """Each topic's folder, as ``snapshot`` names the folders that changed."""
    base = str(artifacts_folder(record, project))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # said by the listing that reads them
        return [f"{base}{os.sep}{n}" for n in _list_topics(record, project)]


def _known(hints: LatestHints, name: str) -> Known:
    try:
        latest = hints.latest(name)
    except (BadInput, OSError) as exc:
        return (exc, None)
    if latest == 0:
        return (0, None)
    try:
        return (latest, hints.head(name, latest))
    except (BadInput, OSError) as exc:
        return (latest, exc)


def ls(record: Record, project: str | None = None,
       unreadable: list[str] | None = None) -> list[TopicSummary]:
    """Every topic with its latest version; reads one file per topic, not every version.

    A topic whose latest version or folder cannot be read is left out with a warning (and
    its name added to ``unreadable``, when given; the folder's path, when the topics cannot
    even be listed): one damaged file never hides the others.
    """
    out = []
    folder = artifacts_folder(record, project)
    hints = topic_hints(record, project)
    try:
        names = topic_names(record, project)
    except OSError as exc:  # no permission to list the topics at all
        warn(f"{folder} cannot be read ({exc.strerror or exc}): no topic can be listed")
        if unreadable is not None:
            unreadable.append(str(folder))
        return []
    for name in names:
        try:
            latest = hints.latest(name)
            if latest == 0:
                continue
            doc = hints.head(name, latest)
        except (BadInput, OSError) as exc:
            reason = (exc.message if isinstance(exc, BadInput) else
                      f"{exc.filename or folder / name} cannot be read "
                      f"({exc.strerror or exc})")
            warn(f"{reason} (left out of this listing; `atlas check` tells more)")
            if unreadable is not None:
                unreadable.append(name)
            continue
        out.append(TopicSummary(name, latest, doc.author, doc.written_at, doc.summary,
                                doc.proposal))
    hints.save()
    return out


def ls_accepted(record: Record, project: str | None = None,
                unreadable: list[str] | None = None) -> list[tuple[TopicSummary, str]]:
    """Each topic at its newest version that stands: not an open proposal, not retracted.

    A topic whose latest version is a proposal nobody accepted yet is shown at the version
    before it that stands (if any): the gate keeps a proposal out, not the topic.
    Returns (summary, state) with state "accepted" or "" (never a proposal). A version
    that cannot be read before one that stands is met cannot be judged, so an older one
    is not shown in its place: the topic's name goes to ``unreadable`` (when given).
    """
    p = record.project(project)
    retracted = corrections.retracted_refs(record, p)
    out = []
    for stream in topic_streams(record, p):
        for version in _newest_first(stream):
            if f"{stream.name}@v{version}" in retracted:
                continue
            try:
                doc = stream.read(version)
            except BadInput as exc:
                warn(f"{exc.message} (left out of this listing; `atlas check` tells more)")
                if unreadable is not None:
                    unreadable.append(stream.name)
                break
            state = corrections.proposal_state(record, p, stream.name, version, doc.proposal)
            if state == "proposed":
                continue
            out.append((TopicSummary(stream.name, version, doc.author, doc.written_at,
                                     doc.summary, doc.proposal), state))
            break
    return out


def _newest_first(stream: Stream) -> Iterator[int]:
    """The stream's versions, newest first: the newest from the hints (one stat), the
    rest from one listing, asked for only if the newest does not stand. Only versions that
    exist are visited (a file numbered v10^20 by hand is one version, not 10^20)."""
    latest = stream.latest_for_reading()
    if latest == 0:
        return
    yield latest
    for version in reversed(stream.versions()):
        if version < latest:
            yield version


def history(record: Record, name: str, project: str | None = None,
            unreadable: list[Unreadable] | None = None) -> list[Version]:
    """Every version of topic ``name``, oldest first (``unreadable``: see ``read_each``)."""
    stream = record.artifact_stream(name, project)
    if not stream.versions():
        raise NotFound(f"no topic named {name!r}", hint="`atlas ls` lists the topics")
    return read_each(stream, unreadable)


def diff(
    record: Record,
    name: str,
    old: int | None = None,
    new: int | None = None,
    project: str | None = None,
) -> Diff:
    """Unified diff of two versions' bodies; by default the latest against the one before."""
    return diff_stream(record.artifact_stream(name, project), old, new)
