"""The document pages: one per topic, one status history per project, the artifacts index
and the home page.

A page is Markdown only in its headings (text the generator chose, or checked names), so
that MkDocs' table of contents lists the versions; everything else is raw HTML built by
``fragments`` from escaped or sanitised record text.
"""

from __future__ import annotations

import hashlib
import heapq
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from atlas_files.sitegen import fragments as f
from atlas_files.sitegen import urls
from atlas_files.sitegen.cache import SiteCache
from atlas_files.sitegen.reading import Withheld
from atlas_files.sitegen.sanitize import heading, text, yaml_str

if TYPE_CHECKING:
    from atlas_files.documents import Version
    from atlas_files.sitegen.model import Marks, ProjectData, Snapshot
    from atlas_files.sitegen.sanitize import BodyRenderer

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

    @property
    def now(self) -> datetime:
        return self.snap.now

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
    resolve = urls.body_resolver(ctx.snap.known, project.name, page, source_dir)
    by_number = {v.version: v for v in versions}
    for doc in reversed(versions):
        ref = f"{'status' if kind == 'status' else doc.name}@v{doc.version}"
        marks = project.marks(ref, doc.proposal)
        latest = doc is versions[-1]
        inner = [f.version_meta(doc, ctx.now, marks), f.marks_notes(marks, doc.proposal, page,
                                                                    ctx.now)]
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
    from atlas_files.artifacts import unified_diff

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
    tags = _tags(latest_marks, latest.proposal, older)
    back = f.link(page, urls.ARTIFACTS, urls.project_anchor(project.name), "all topics")
    status = f.link(page, urls.status_page(project.name), None, "status")
    intro = (
        f'<p class="atlas-meta">Topic of project <strong>{text(project.name)}</strong> '
        f"({status}, {back}). {len(versions)} version{'s' if len(versions) != 1 else ''}, "
        "newest first; older ones are folded and show their text exactly as written, "
        "with the changes from the version before.</p>"
    )
    return (front_matter(topic, tags) + f"# {heading(topic)}\n\n" + f.block(intro)
            + "".join(parts))


def _tags(marks: Marks, proposal: bool, older: list[str]) -> list[str]:
    """Material tags of a page: the latest version's state and any version's marks."""
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
        f'<p class="atlas-meta">{len(versions)} version'
        f"{'s' if len(versions) != 1 else ''} of the status, newest first. "
        f"{f.link(page, urls.ARTIFACTS, urls.project_anchor(project.name), 'Topics')} of "
        "this project.</p>"
    )
    tags = _tags(project.marks(f"status@v{versions[-1].version}"), False, older)
    return (front_matter(title, tags) + f"# {heading(title)}\n\n" + f.block(intro)
            + "".join(parts))


def artifacts_index(ctx: PageContext) -> str:
    page = urls.ARTIFACTS
    out = [front_matter("Artifacts"), "# Artifacts\n\n"]
    total = len(ctx.rows)
    out.append(f.block(
        f"<p>{total} topic{'s' if total != 1 else ''}. Each topic's page holds every "
        "version, newest first, with the changes between them.</p>"))
    by_project: dict[str, list[TopicRow]] = {}
    for row in ctx.rows:
        by_project.setdefault(row.project, []).append(row)
    for project in ctx.snap.projects:
        rows = sorted(by_project.get(project.name, []), key=lambda r: r.topic)
        out.append(f"## {heading(project.name)}\n\n")
        if not rows:
            out.append(f.block("<p>No topics yet.</p>", ident=urls.project_anchor(project.name)))
            continue
        html_rows = []
        for r in rows:
            doc = r.latest
            to = urls.topic_page(r.project, r.topic)
            name = f.link(page, to, None, f"<strong>{text(r.topic)}</strong>")
            version = f.link(page, to, urls.version_anchor(doc.version), f"v{doc.version}")
            marks = f.mark_badges(r.marks, doc.proposal, doc.digest_ok)
            marks += "".join(f.mark(m.rsplit(" ", 1)[1], m) for m in r.older_marks)
            html_rows.append(
                f"<tr><td>{name}</td><td>{version} of {r.count}</td><td>{text(doc.author)}</td>"
                f"<td>{f.age(doc.written_at, ctx.now)}</td><td>{marks}</td>"
                f"<td>{text(f.truncate(doc.summary))}</td></tr>"
            )
        out.append(f.block(
            f.table(["Topic", "Latest", "Author", "Age", "Marks", "Summary"], html_rows),
            ident=urls.project_anchor(project.name)))
    return "".join(out)


def home(ctx: PageContext, latest_status: dict[str, Version | None], site_name: str) -> str:
    page = urls.HOME
    snap = ctx.snap
    out = [front_matter("Home"), f"# {heading(site_name)}\n\n"]
    held = sum(1 for lease in snap.leases.leases if lease.held) if snap.leases else 0
    counts = (
        f"{len(snap.projects)} projects, {len(ctx.rows)} topics, "
        f"{sum(len(p.decisions) for p in snap.projects)} decisions, "
        f"{f.link(page, urls.LEASES, None, f'{held} leases held')} at the build."
    )
    out.append(f.block(f'<p class="atlas-meta">{counts}</p>'))
    out.append("## Projects\n\n")
    cache = ctx.cache
    for project in snap.projects:
        doc = latest_status.get(project.name)
        status_link = f.link(page, urls.status_page(project.name), None, "status history")
        topics = f.link(page, urls.ARTIFACTS, urls.project_anchor(project.name),
                        f"{len(project.topics)} topics")
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
                f"{f.when(doc.written_at, ctx.now)}</p>"
            )
            inner.append(f.marks_notes(marks, False, page, ctx.now))
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
            f"<tr><td>{f.age(e.at, ctx.now)}</td><td>{text(e.project)}</td>"
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
