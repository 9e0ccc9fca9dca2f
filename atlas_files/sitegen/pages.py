"""The document pages: one per topic, one status history per project, the artifacts index
and the home page.

A page is Markdown only in its headings (text the generator chose, or checked names), so
that MkDocs' table of contents lists the versions; everything else is raw HTML built by
``fragments`` from escaped or sanitised record text.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from atlas_files.facts import timeutil
from atlas_files.protocol.artifacts import unified_diff
from atlas_files.sitegen import fragments as f
from atlas_files.sitegen import urls
from atlas_files.sitegen.cache import SiteCache
from atlas_files.sitegen.reading import Withheld
from atlas_files.sitegen.sanitize import heading, text, yaml_str

if TYPE_CHECKING:
    from atlas_files.sitegen.model import Marks, ProjectData, Snapshot
    from atlas_files.sitegen.sanitize import BodyRenderer, Resolver
    from atlas_files.storage.documents import Version

RECENT = 30


@dataclass(frozen=True)
class Event:
    time: datetime | None
    at: str
    project: str
    what: str  # plain text, escaped when shown
    page: str
    anchor: str | None
    author: str


@dataclass(frozen=True)
class TopicRow:
    project: str
    topic: str
    latest: Version
    count: int
    marks: Marks
    older_marks: tuple[str, ...]  # "v2 corrected", "v3 retracted"


@dataclass
class PageContext:
    snap: Snapshot
    renderer: BodyRenderer
    cache: SiteCache = field(default_factory=lambda: SiteCache(None))
    events: list[Event] = field(default_factory=list)
    rows: list[TopicRow] = field(default_factory=list)
    # Set while a topic page is made: each body link target and where it led, so that
    # the topic's memo can tell whether its page would still link the same (``topics``).
    links: list[tuple[str, str | None]] | None = None

    @property
    def now(self) -> datetime:
        return self.snap.now

    def resolver(self, project: str, page: str, source_dir: str) -> Resolver:
        resolve = urls.body_resolver(self.snap.known, project, page, source_dir)
        log = self.links
        if log is None:
            return resolve

        def logged(target: str) -> str | None:
            found = resolve(target)
            log.append((target, found))
            return found

        return logged

    def event(self, at: str, project: str, what: str, page: str, anchor: str | None,
              author: str) -> None:
        self.events.append(Event(f.parse_time(at), at, project, what, page, anchor, author))


def front_matter(title: str, tags: list[str] | None = None, hide_toc: bool = False) -> str:
    lines = ["---", f"title: {yaml_str(title)}"]
    if hide_toc:  # wide tables need the room of Material's table of contents
        lines += ["hide:", "  - toc"]
    if tags:
        lines.append("tags:")
        lines += [f"  - {yaml_str(t)}" for t in tags]
    lines.append("---\n\n")
    return "\n".join(lines)


def _versions_html(
    ctx: PageContext, project: ProjectData, page: str, versions: list[Version], kind: str,
    source_dir: str,
) -> tuple[list[str], list[str]]:
    """(the page parts, newest first; the older versions' mark summaries)."""
    parts: list[str] = []
    older: list[str] = []
    cache = ctx.cache
    resolve = ctx.resolver(project.name, page, source_dir)
    by_number = {v.version: v for v in versions}
    for doc in reversed(versions):
        ref = f"{'status' if kind == 'status' else doc.name}@v{doc.version}"
        marks = project.marks(ref, doc.proposal)
        latest = doc is versions[-1]
        inner = [f.version_meta(doc, marks), f.marks_notes(marks, doc.proposal, page)]
        if isinstance(doc, Withheld):
            inner.append(withheld_note(doc))
        elif latest:
            body = ctx.renderer.render(doc.body, resolve, cache)
            inner.append(f'<div class="atlas-body">\n{body}\n</div>')
        else:
            if marks.retracted:
                older.append(f"v{doc.version} retracted")
            if marks.corrected_by:
                older.append(f"v{doc.version} corrected")
            inner.append(
                f'<details class="atlas-fold"><summary>Text of v{doc.version}, as written'
                f'</summary><pre class="atlas-source">{text(doc.body)}</pre></details>'
            )
        before = by_number.get(doc.version - 1)
        if before is not None and (isinstance(before, Withheld) or isinstance(doc, Withheld)):
            inner.append(
                f'<p class="atlas-meta">The changes from v{before.version} are not shown: '
                "a body over the body_limit is not read.</p>")
        elif before is not None:
            inner.append(
                # Left out of the search index: the texts of both versions are indexed.
                '<details class="atlas-fold" data-search-exclude><summary>Changes from '
                f'v{before.version} to '
                f'v{doc.version}</summary>{f.diff(_changes(before, doc, cache))}</details>'
            )
        elif doc.version == 1:
            inner.append('<p class="atlas-meta">The first version.</p>')
        parts.append(f"## v{doc.version}\n\n")
        parts.append(f.block("\n".join(x for x in inner if x), "atlas-version"))
        what = (f"status v{doc.version}" if kind == "status" else f"{doc.name} v{doc.version}")
        ctx.event(doc.written_at, project.name, what, page, urls.version_anchor(doc.version),
                  doc.author)
    return parts, older


def withheld_note(doc: Withheld) -> str:
    """Where the text of a version over the body limit would have been."""
    return (f'<p class="atlas-note">The {text(doc.note)} (the limit is {doc.limit} bytes, '
            "<code>body_limit</code> in <code>atlas.yaml</code>).</p>")


def _changes(old: Version, new: Version, cache: SiteCache) -> str:
    """The unified diff of two versions' bodies (plain text: escaped when shown)."""
    key = "diff:" + hashlib.sha256(
        f"{old.name}@v{old.version}\0{new.version}\0{old.body}\0{new.body}".encode(
            "utf-8", "surrogatepass")).hexdigest()
    found = cache.get(key)
    if found is None:
        found = cache[key] = unified_diff(old, new)
    return found


def topic_page(ctx: PageContext, project: ProjectData, topic: str, versions: list[Version]) -> str:
    page = urls.topic_page(project.name, topic)
    latest = versions[-1]
    parts, older = _versions_html(
        ctx, project, page, versions, "artifact", f"projects/{project.name}/artifacts/{topic}"
    )
    latest_marks = project.marks(f"{topic}@v{latest.version}", latest.proposal)
    ctx.rows.append(TopicRow(project.name, topic, latest, len(versions), latest_marks,
                             tuple(older)))
    tags = mark_names(latest_marks, latest.proposal, older)
    back = f.link(page, urls.ARTIFACTS, urls.project_anchor(project.name), "all topics")
    status = f.link(page, urls.status_page(project.name), None, "status")
    intro = (
        f'<p class="atlas-meta">Topic of project <strong>{text(project.name)}</strong> '
        f"({status}, {back}). {f.count(len(versions), 'version')}, "
        "newest first; older ones are folded and show their text exactly as written, "
        "with the changes from the version before.</p>"
    )
    return (front_matter(topic, tags) + f"# {heading(topic)}\n\n" + f.block(intro)
            + "".join(parts))


def mark_names(marks: Marks, proposal: bool, older: Sequence[str]) -> list[str]:
    """The marks of a topic or status (its page's tags): the latest version's state and
    any version's marks."""
    tags = []
    if proposal:
        tags.append("accepted" if marks.accepted_by else "proposal")
    if marks.retracted is not None or any(m.endswith("retracted") for m in older):
        tags.append("retracted")
    if marks.corrected_by or any(m.endswith("corrected") for m in older):
        tags.append("corrected")
    return tags


def status_page(ctx: PageContext, project: ProjectData, versions: list[Version]) -> str:
    page = urls.status_page(project.name)
    title = f"Status of {project.name}"
    if not versions:
        return (front_matter(title) + f"# {heading(title)}\n\n"
                + f.block('<p>No status has been written for this project yet.</p>'))
    parts, older = _versions_html(ctx, project, page, versions, "status",
                                  f"projects/{project.name}/status")
    intro = (
        f'<p class="atlas-meta">{f.count(len(versions), "version")} of the status, newest '
        "first. "
        f"{f.link(page, urls.ARTIFACTS, urls.project_anchor(project.name), 'Topics')} of "
        "this project.</p>"
    )
    tags = mark_names(project.marks(f"status@v{versions[-1].version}"), False, older)
    return (front_matter(title, tags) + f"# {heading(title)}\n\n" + f.block(intro)
            + "".join(parts))


def home(ctx: PageContext, latest_status: dict[str, Version | None], site_name: str) -> str:
    page = urls.HOME
    snap = ctx.snap
    out = [front_matter("Home"), f"# {heading(site_name)}\n\n"]
    held = sum(1 for lease in snap.leases.leases if lease.held) if snap.leases else 0
    decisions = sum(len(p.decisions) for p in snap.projects)
    counts = (
        f"{f.link(page, urls.HOME, 'projects', f.count(len(snap.projects), 'project'))}, "
        f"{f.link(page, urls.ARTIFACTS, None, f.count(len(ctx.rows), 'topic'))}, "
        f"{f.link(page, urls.DECISIONS, None, f.count(decisions, 'decision'))}, "
        f"{f.link(page, urls.LEASES, None, f.count(held, 'lease') + ' held')} at the build, "
        f"{f.when(timeutil.format_time(snap.now))}."
    )
    out.append(f.block(f'<p class="atlas-meta">{counts}</p>'))
    out.append("## Projects\n\n")
    cache = ctx.cache
    for project in snap.projects:
        doc = latest_status.get(project.name)
        status_link = f.link(page, urls.status_page(project.name), None, "status history")
        topics = f.link(page, urls.ARTIFACTS, urls.project_anchor(project.name),
                        f.count(len(project.topics), "topic"))
        inner = [f"<h3>{text(project.name)}</h3>"]
        if doc is None:
            inner.append("<p>No status yet.</p>")
        else:
            marks = project.marks(f"status@v{doc.version}")
            resolve = urls.body_resolver(snap.known, project.name, page,
                                         f"projects/{project.name}/status")
            inner.append(
                f'<p class="atlas-meta">{f.mark_badges(marks, False, doc.digest_ok)}'
                f"Status v{doc.version} by <strong>{text(doc.author)}</strong>, "
                f"{f.when(doc.written_at)}</p>"
            )
            inner.append(f.marks_notes(marks, False, page))
            if isinstance(doc, Withheld):
                inner.append(withheld_note(doc))
            else:
                body = ctx.renderer.render(doc.body, resolve, cache)
                inner.append(f'<div class="atlas-body">\n{body}\n</div>')
        inner.append(f"<p>{status_link} · {topics}</p>")
        out.append(f.block("\n".join(x for x in inner if x), "atlas-project"))
    out.append("## Recent activity\n\n")
    recent = heapq.nlargest(RECENT, ctx.events, key=lambda e: (e.time is not None, e.time or 0,
                                                                e.at))
    if recent:
        rows = [
            f"<tr><td>{f.age(e.at)}</td><td>{text(e.project)}</td>"
            f"<td>{f.link(page, e.page, e.anchor, text(e.what))}</td>"
            f"<td>{text(e.author)}</td></tr>"
            for e in recent
        ]
        out.append(f.block(f.table(["When", "Project", "What", "Who"], rows)))
    else:
        out.append(f.block("<p>Nothing has been written yet.</p>"))
    if snap.problems:
        out.append("## Problems\n\n")
        items = "".join(f"<li><code>{text(p.where)}</code>: {text(p.message)}</li>"
                        for p in snap.problems[:200])
        more = len(snap.problems) - 200
        tail = f"<p>… and {more} more.</p>" if more > 0 else ""
        out.append(f.block(
            "<p>These files could not be read, or are too large to show, and are left out "
            "of the site; "
            f"<code>atlas check</code> says how to fix them.</p><ul>{items}</ul>{tail}"))
    return "".join(out)
