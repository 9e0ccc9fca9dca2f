"""Topic pages, the bulk of the work: read every version, render, diff, write.

Written chunk by chunk so that the caller can report progress. (Forked workers were
tried: on a two-core machine shared with other work they made this slower, not faster,
so the pages are written by the one process.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files.sitegen import model, pages, urls
from atlas_files.sitegen.files import Writer
from atlas_files.sitegen.reading import UNREADABLE, describe

if TYPE_CHECKING:
    from atlas_files.record import Record

CHUNK = 25


@dataclass
class Done:
    """What a chunk of topics left behind for the index, the home page and the prune."""

    topics: int
    written: list[Path] = field(default_factory=list)
    versions: int = 0


def write_topics(ctx: pages.PageContext, record: Record, writer: Writer) -> Iterator[Done]:
    """Write every topic page with ``writer``; yields as each chunk is done. Index rows
    and recent-activity events are added to ``ctx``, unreadable versions to its problems."""
    snap = ctx.snap
    jobs = [(p, t) for p in snap.projects for t in p.topics]
    for start in range(0, len(jobs), CHUNK):
        done = Done(topics=len(jobs[start:start + CHUNK]))
        for project, topic in jobs[start:start + CHUNK]:
            stream = record.artifact_stream(topic, project.name)
            versions = model.read_versions(stream, project.topics[topic], record,
                                           snap.problems)
            done.versions += len(versions)
            if not versions:
                continue
            rel = urls.topic_page(project.name, topic)
            page = guarded_page(ctx, f"projects/{project.name}/artifacts/{topic}",
                                partial(pages.topic_page, ctx, project, topic, versions))
            if page is not None:
                writer.write(rel, page)
                done.written.append(writer.root / rel)
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
