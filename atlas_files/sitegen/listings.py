"""The pages that list topics: the artifacts index with its pages by name, and the marks.

Bounded at any size. A group of topics (a project's, or those carrying one mark) is shown
whole while it has at most ``LIST_ROWS`` topics; a larger group shows its ``RECENT_ROWS``
most recently written topics, and links to pages of at most ``LIST_ROWS`` topics each, by
name. Every page then costs the engines the same whatever the record's size: an index of
10,000 rows is a page of megabytes that both engines parse, index and search slowly, and
a browser lays out slowly.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

from atlas_files.sitegen import fragments as f
from atlas_files.sitegen import urls
from atlas_files.sitegen.pages import PageContext, TopicRow, front_matter, mark_names
from atlas_files.sitegen.sanitize import heading, text

LIST_ROWS = 500
RECENT_ROWS = 50
MARKS = ("proposal", "accepted", "retracted", "corrected")
# What the marks page lists, said in the menu too: "Marks" alone says nothing.
MARKS_TITLE = "Proposals and corrections"
_EPOCH = datetime.min.replace(tzinfo=UTC)

Page = tuple[str, str]  # (docs-relative path, Markdown)


def _written(row: TopicRow) -> tuple[datetime, str]:
    return (f.parse_time(row.latest.written_at) or _EPOCH, row.latest.written_at or "")


def _row(page: str, r: TopicRow, with_project: bool) -> str:
    doc = r.latest
    to = urls.topic_page(r.project, r.topic)
    label = f"<strong>{text(r.topic)}</strong>"
    if with_project:
        label = f'<span class="atlas-meta">{text(r.project)} /</span> {label}'
    name = f.link(page, to, None, label)
    version = f.link(page, to, urls.version_anchor(doc.version), f"v{doc.version}")
    marks = f.mark_badges(r.marks, doc.proposal, doc.digest_ok)
    marks += "".join(f.mark(m.rsplit(" ", 1)[1], m) for m in r.older_marks)
    # Versions that are not there (deleted by hand, or unreadable) are counted, never
    # shown as "v6 of 4".
    missing = doc.version - r.count
    if missing > 0:
        version += f' <span class="atlas-meta">({missing} missing)</span>'
    return (f"<tr><td>{name}</td><td>{version}</td><td>{text(doc.author)}</td>"
            f"<td>{f.age(doc.written_at)}</td><td>{marks}</td>"
            f'<td class="atlas-text">{text(f.truncate(doc.summary))}</td></tr>')


def _table(page: str, rows: list[TopicRow], with_project: bool = False) -> str:
    return f.table(["Topic", "Latest", "Author", "Written", "Marks", "Summary"],
                   [_row(page, r, with_project) for r in rows])


def _group(page: str, rows: list[TopicRow], page_of: Callable[[int], str],
           with_project: bool) -> tuple[str, list[tuple[str, list[TopicRow]]]]:
    """The HTML of one group on ``page``, and the list pages it links to (rows sorted)."""
    if len(rows) <= LIST_ROWS:
        return _table(page, rows, with_project), []
    chunks = [(page_of(n + 1), rows[i:i + LIST_ROWS])
              for n, i in enumerate(range(0, len(rows), LIST_ROWS))]
    links = " · ".join(
        f.link(page, rel, None, f"{text(chunk[0].topic)} … {text(chunk[-1].topic)}")
        for rel, chunk in chunks)
    recent = heapq.nlargest(RECENT_ROWS, rows, key=_written)
    intro = (f"<p>{f.count(len(rows), 'topic')}: the {RECENT_ROWS} written most recently "
             f"are below. All of them, by name, are on {len(chunks)} pages of at most "
             f"{LIST_ROWS}: {links}.</p>")
    return intro + _table(page, recent, with_project), chunks


def _list_page(rel: str, title: str, rows: list[TopicRow], back: str, anchor: str,
               with_project: bool) -> str:
    intro = (f'<p class="atlas-meta">{f.count(len(rows), "topic")}, by name, from '
             f"<strong>{text(rows[0].topic)}</strong> to <strong>{text(rows[-1].topic)}"
             f"</strong>. {f.link(rel, back, anchor, 'Back to the list')}.</p>")
    return (front_matter(title, hide_toc=True) + f"# {heading(title)}\n\n"
            + f.block(intro) + f.block(_table(rel, rows, with_project)))


def artifacts_pages(ctx: PageContext) -> list[Page]:
    """The artifacts index and the pages by name of each project too large for it."""
    page = urls.ARTIFACTS
    out = [front_matter("Artifacts", hide_toc=True), "# Artifacts\n\n"]
    out.append(f.block(
        f"<p>{f.count(len(ctx.rows), 'topic')} in "
        f"{f.count(len(ctx.snap.projects), 'project')}. Each topic's page holds every "
        "version, newest first, with the changes between them.</p>"))
    by_project: dict[str, list[TopicRow]] = {}
    for row in ctx.rows:
        by_project.setdefault(row.project, []).append(row)
    more: list[Page] = []
    for project in ctx.snap.projects:
        anchor = urls.project_anchor(project.name)
        rows = sorted(by_project.get(project.name, []), key=lambda r: r.topic)
        out.append(f"## {heading(project.name)}\n\n")
        if not rows:
            out.append(f.block("<p>No topics yet.</p>", ident=anchor))
            continue
        html, chunks = _group(page, rows, partial(urls.topic_list_page, project.name), False)
        out.append(f.block(html, ident=anchor))
        for n, (rel, chunk) in enumerate(chunks, start=1):
            title = f"Topics of {project.name}, page {n} of {len(chunks)}"
            more.append((rel, _list_page(rel, title, chunk, page, anchor, False)))
    return [(page, "".join(out)), *more]


def marks_pages(ctx: PageContext) -> list[Page]:
    """The marks page (``tags.md``): the topics carrying each mark, and its pages by name."""
    page = urls.TAGS
    out = [front_matter(MARKS_TITLE, hide_toc=True), f"# {MARKS_TITLE}\n\n"]
    out.append(f.block(
        "<p>Topics by mark: proposals not yet accepted, accepted proposals, and topics with "
        "a retracted or a corrected version. A status's marks are shown on its page.</p>"))
    by_mark: dict[str, list[TopicRow]] = {m: [] for m in MARKS}
    for row in ctx.rows:
        for mark in mark_names(row.marks, row.latest.proposal, row.older_marks):
            by_mark[mark].append(row)
    more: list[Page] = []
    for mark in MARKS:
        rows = sorted(by_mark[mark], key=lambda r: (r.project, r.topic))
        anchor = urls.mark_anchor(mark)
        out.append(f"## {mark}\n\n")
        if not rows:
            out.append(f.block(f"<p>No topic is marked {mark}.</p>", ident=anchor))
            continue
        html, chunks = _group(page, rows, partial(urls.mark_list_page, mark), True)
        out.append(f.block(html, ident=anchor))
        for n, (rel, chunk) in enumerate(chunks, start=1):
            title = f"Marked {mark}, page {n} of {len(chunks)}"
            more.append((rel, _list_page(rel, title, chunk, page, anchor, True)))
    return [(page, "".join(out)), *more]
