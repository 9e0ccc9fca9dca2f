"""Topic pages, the bulk of the work: read every version, render, diff, write.

Written chunk by chunk so that the caller can report progress. (Forked workers were
tried: on a two-core machine shared with other work they made this slower, not faster,
so the pages are written by the one process.)

A topic whose page the last build wrote from the same version files, with the same marks
and the same body links, is not read again: its memo (``cache.TopicMemo``) gives the
artifacts index its row and recent activity its events, and the page stays as it is.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files.facts import layout
from atlas_files.sitegen import model, pages, urls
from atlas_files.sitegen.cache import TopicCache, TopicMemo
from atlas_files.sitegen.files import Writer
from atlas_files.sitegen.reading import UNREADABLE, describe
from atlas_files.storage.documents import Version

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

CHUNK = 25
# What a memo is checked against besides its own topic: bump when a topic page's layout
# changes, so that no page of an older layout is kept.
PAGE_FORMAT = 3
_MEMO_FIELDS = tuple(name for name in Version._fields if name not in
                     ("body", "path", "meta", "links"))


def stamp(record: Record) -> str:
    """What every topic page depends on: the page layout and the record's body limit."""
    return f"{PAGE_FORMAT}/body_limit={record.config.body_limit}"


@dataclass
class Done:
    """What a chunk of topics left behind for the index, the home page and the prune."""

    topics: int
    written: list[Path] = field(default_factory=list)
    versions: int = 0


def _key(project: model.ProjectData, topic: str, folder: str, versions: list[int]) -> str | None:
    """A digest of everything a topic's page is made from but its body links (checked
    apart, see ``_links_hold``); None if a version file cannot be looked at."""
    facts: list[object] = []
    for v in versions:
        try:
            st = os.stat(os.path.join(folder, layout.version_filename(topic, v)),
                         follow_symlinks=False)
        except OSError:
            return None
        ref = f"{topic}@v{v}"
        facts.append((v, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                      repr(project.marks(ref, proposal=True))))
    return hashlib.sha256(repr(facts).encode("utf-8", "surrogatepass")).hexdigest()


def _links_hold(ctx: pages.PageContext, project: str, topic: str, memo: TopicMemo) -> bool:
    """Would every link of the topic's latest body lead where it led? (A link to a
    version not yet written is text until that version exists.)"""
    if not memo.links:
        return True
    resolve = urls.body_resolver(ctx.snap.known, project, urls.topic_page(project, topic),
                                 f"projects/{project}/artifacts/{topic}")
    return all(resolve(target) == found for target, found in memo.links)


def _replay(ctx: pages.PageContext, project: model.ProjectData, topic: str,
            memo: TopicMemo, folder: str) -> None:
    """What the topic's page would have added to the index and recent activity."""
    fields = dict(memo.latest)
    latest = Version(**fields, body="",
                     path=Path(folder, layout.version_filename(topic, int(fields["version"]))))
    marks = project.marks(f"{topic}@v{latest.version}", latest.proposal)
    ctx.rows.append(pages.TopicRow(project.name, topic, latest, len(memo.versions), marks,
                                   memo.older))
    page = urls.topic_page(project.name, topic)
    for v, at, author in memo.versions:
        ctx.event(at, project.name, f"{topic} v{v}", page, urls.version_anchor(v), author)


def _memo(ctx: pages.PageContext, key: str, page: tuple[int, int],
          versions: list[Version]) -> TopicMemo:
    row = ctx.rows[-1]
    return TopicMemo(
        key=key, page=page, links=tuple(ctx.links or ()),
        latest={name: getattr(row.latest, name) for name in _MEMO_FIELDS},
        older=row.older_marks,
        versions=tuple((v.version, v.written_at, v.author) for v in versions),
        bodies=tuple(dict.fromkeys(ctx.cache.touched or ())),
    )


def write_topics(ctx: pages.PageContext, record: Record, writer: Writer,
                 memos: TopicCache | None = None) -> Iterator[Done]:
    """Write every topic page with ``writer``; yields as each chunk is done. Index rows
    and recent-activity events are added to ``ctx``, unreadable versions to its problems."""
    snap = ctx.snap
    jobs = [(p, t) for p in snap.projects for t in p.topics]
    for start in range(0, len(jobs), CHUNK):
        done = Done(topics=len(jobs[start:start + CHUNK]))
        for project, topic in jobs[start:start + CHUNK]:
            stream = project.streams[topic]
            folder = str(stream.folder)
            rel = urls.topic_page(project.name, topic)
            name = f"{project.name}/{topic}"
            key = _key(project, topic, folder, project.topics[topic]) if memos is not None else None
            memo = memos.get(name, key) if memos is not None and key else None
            if (memos is not None and memo is not None
                    and _links_hold(ctx, project.name, topic, memo)
                    and writer.keep(rel, memo.page)):
                _replay(ctx, project, topic, memo, folder)
                ctx.cache.keep(memo.bodies)
                memos.keep(name, memo)
                done.versions += len(memo.versions)
                done.written.append(writer.root / rel)
                continue
            problems = len(snap.problems)
            versions = model.read_versions(stream, project.topics[topic], record,
                                           snap.problems)
            done.versions += len(versions)
            if not versions:
                continue
            ctx.links, ctx.cache.touched = [], []
            try:
                page = guarded_page(ctx, f"projects/{project.name}/artifacts/{topic}",
                                    partial(pages.topic_page, ctx, project, topic, versions))
                if page is None:
                    continue
                writer.write(rel, page)
                done.written.append(writer.root / rel)
                written = writer.stat(rel)
                # A topic with a problem is read again next time, so that its problem
                # is reported by every build, not only by the first.
                if memos is not None and key and written and len(snap.problems) == problems:
                    memos.keep(name, _memo(ctx, key, written, versions))
            finally:
                ctx.links = ctx.cache.touched = None
        yield done


def guarded_page(ctx: pages.PageContext, where: str, render: Callable[[], str]) -> str | None:
    """``render()``, or None (and a problem) if the record's text made it fail; what the
    failed page added to the index and to recent activity is taken back, so no link
    points at a page that is not there."""
    rows, events = len(ctx.rows), len(ctx.events)
    try:
        return render()
    except UNREADABLE as exc:
        del ctx.rows[rows:], ctx.events[events:]
        ctx.snap.problems.append(model.Problem(where, f"its page could not be made: "
                                                      f"{describe(exc)}"))
        return None
