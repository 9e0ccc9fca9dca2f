"""HTML fragments shared by the pages: times, marks, diffs, links, versions.

Every function here takes raw record values and escapes them itself (``sanitize.text``),
so a caller cannot forget to; what it returns is HTML meant for a raw HTML block.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from atlas_files.facts import timeutil
from atlas_files.sitegen import urls
from atlas_files.sitegen.sanitize import text

if TYPE_CHECKING:
    from atlas_files.protocol.corrections import Correction
    from atlas_files.sitegen.model import Marks
    from atlas_files.storage.documents import Version


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return timeutil.parse_time(str(value))
    except (TypeError, ValueError):
        return None


def when(value: str | None) -> str:
    """An absolute UTC time; the page's script adds its age, from the reader's clock.

    No age is written at build time: a page whose text changed with every build would be
    rebuilt by the engine every time (see ``cache``), and would be wrong a minute later."""
    t = parse_time(value)
    if t is None:
        return f'<span class="atlas-when">{text(value or "unknown time")}</span>'
    return (
        f'<span class="atlas-when" title="{text(value)}">{t.strftime("%Y-%m-%d %H:%M UTC")}'
        f'<time datetime="{text(timeutil.format_time(t))}" data-atlas-age="aside"></time>'
        "</span>"
    )


def when_short(value: str | None) -> str:
    """``when`` for a table cell: the date and time, the age below."""
    t = parse_time(value)
    if t is None:
        return text(value or "unknown time")
    return (f'<span class="atlas-when" title="{text(value)}">{t.strftime("%Y-%m-%d %H:%M")}'
            f'<br><time datetime="{text(timeutil.format_time(t))}" data-atlas-age></time>'
            "</span>")


def age(value: str | None) -> str:
    """The age of ``value`` (computed by the page's script); the time itself until then."""
    t = parse_time(value)
    if t is None:
        return text(value or "unknown")
    return (
        f'<time datetime="{text(timeutil.format_time(t))}" title="{text(value)}" '
        f'data-atlas-age>{t.strftime("%Y-%m-%d %H:%M")}</time>'
    )


def mark(kind: str, label: str | None = None) -> str:
    return f'<span class="atlas-mark atlas-mark--{kind}">{text(label or kind)}</span>'


def link(page: str, to_page: str, anchor: str | None, label_html: str) -> str:
    return f'<a href="{text(urls.href(page, to_page, anchor))}">{label_html}</a>'


def ref_link(known: urls.Known, project: str, page: str, ref: str) -> str:
    """A reference as a link when it names something in the site, else as text."""
    found = known.target(project, ref)
    label = f"<code>{text(ref)}</code>"
    return link(page, found[0], found[1], label) if found else label


_RUNS = (
    (re.compile(r"^\+.*(?:\n\+.*)*", re.M), "atlas-add"),
    (re.compile(r"^-.*(?:\n-.*)*", re.M), "atlas-del"),
    (re.compile(r"^@@.*", re.M), "atlas-hunk"),
)


def _wrapper(cls: str) -> Callable[[re.Match[str]], str]:
    return lambda m: f'<span class="{cls}">{m.group(0)}</span>'


def diff(body: str) -> str:
    """A unified diff with added and removed lines told apart. A run of lines of one kind
    shares one element: MkDocs parses every tag of a page twice, so tags cost build time."""
    escaped = text(body).rstrip("\n")
    head = ""
    if escaped.startswith("--- "):  # the two file lines are not removed or added lines
        first, _, rest = escaped.partition("\n")
        second, _, escaped = rest.partition("\n")
        head = f"{first}\n{second}\n"
    for pattern, cls in _RUNS:
        escaped = pattern.sub(_wrapper(cls), escaped)
    return f'<pre class="atlas-diff"><code>{head}{escaped}</code></pre>'


def mark_badges(marks: Marks, proposal: bool, digest_ok: bool | None = True) -> str:
    out = []
    if proposal:
        out.append(mark("accepted") if marks.accepted_by else mark("proposal"))
    if marks.retracted is not None:
        out.append(mark("retracted"))
    if marks.corrected_by:
        out.append(mark("corrected"))
    if digest_ok is False:
        out.append(mark("damaged", "edited in place"))
    return "".join(out)


def correction_note(c: Correction, page: str) -> str:
    verb = "Retracted" if c.kind == "retraction" else "Corrected"
    label = "why" if c.kind == "retraction" else "what was wrong"
    cls = "atlas-note atlas-note--retracted" if c.kind == "retraction" else "atlas-note"
    return (
        f'<div class="{cls}"><p><strong>{verb}</strong> by {text(c.author)}, '
        f"{when(c.at)}, in "
        f"{link(page, urls.DECISIONS, c.id, f'<code>{text(c.id)}</code>')} ({label}):</p>"
        f'<p class="atlas-text">{text(c.text)}</p></div>'
    )


def marks_notes(marks: Marks, proposal: bool, page: str) -> str:
    out = []
    if proposal:
        if marks.accepted_by:
            decision = link(page, urls.DECISIONS, marks.accepted_by,
                            f"<code>{text(marks.accepted_by)}</code>")
            out.append(f'<p class="atlas-note">A proposal, accepted by decision {decision}.</p>')
        else:
            out.append('<p class="atlas-note">A proposal: no decision has accepted it yet.</p>')
    if marks.retracted is not None:
        out.append(correction_note(marks.retracted, page))
    for c in marks.corrected_by:
        out.append(correction_note(c, page))
    return "".join(out)


def version_meta(doc: Version, marks: Marks) -> str:
    summary = f' — <em>{text(doc.summary)}</em>' if doc.summary else ""
    return (
        f'<p class="atlas-meta">{mark_badges(marks, doc.proposal, doc.digest_ok)}'
        f"v{doc.version} by <strong>{text(doc.author)}</strong>, {when(doc.written_at)}, "
        f"{based_on(doc.based_on)}{summary}</p>"
    )


def based_on(version: int) -> str:
    """What a version was based on, in words: a first version was based on nothing."""
    return "the first version" if version == 0 else f"based on v{version}"


def block(inner: str, cls: str = "atlas-block", ident: str | None = None) -> str:
    """A raw HTML block for MkDocs: starts at a line start, ends with a blank line."""
    id_attr = f' id="{text(ident)}"' if ident else ""
    return f'<div class="{cls}"{id_attr}>\n{inner}\n</div>\n\n'


_CELL = re.compile(r"<td(?=[\s>])")


def table(head: list[str], rows: list[str], ident: str | None = None) -> str:
    """A table that fits the page at any width: on a narrow screen (atlas.css) each row
    becomes a card whose cells are labelled by ``head``, so nothing is squeezed until
    words break or pushed past the page's edge. ``rows`` are ``<tr>`` elements whose
    cells come in the order of ``head``. The table keeps no class, so the engine's own
    table style applies to it."""
    id_attr = f' id="{text(ident)}"' if ident else ""
    ths = "".join(f"<th>{h}</th>" for h in head)
    labels = [f' data-label="{text(h)}"' for h in head]

    def labelled(row: str) -> str:
        cells = iter(labels)
        return _CELL.sub(lambda m: m.group(0) + next(cells, ""), row)

    return (f'<div class="atlas-cards"><table{id_attr}><thead><tr>{ths}</tr></thead><tbody>\n'
            + "\n".join(labelled(r) for r in rows) + "\n</tbody></table></div>")


def ident(value: str) -> str:
    """An id (a decision's, a correction's) on one line: cut short with an ellipsis where
    its column is narrow, whole in its title and when copied or searched for."""
    return f'<code class="atlas-id" title="{text(value)}">{text(value)}</code>'


# A name this long may break, at its dots, dashes and underscores only.
_UNBROKEN = 24


def name_code(value: str) -> str:
    """A resource or topic name as code, never broken inside a word ("gpubox.gpu" / "0")."""
    if len(value) <= _UNBROKEN:
        return f'<code class="atlas-name">{text(value)}</code>'
    parts = "<wbr>".join(text(p) for p in re.split(r"(?<=[._-])", value))
    return f'<code class="atlas-name atlas-name--long">{parts}</code>'


def count(n: int, noun: str) -> str:
    """``1 topic``, ``2 topics``, ``1,204 topics``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def truncate(value: str, limit: int = 160) -> str:
    value = " ".join(str(value).split())
    return value if len(value) <= limit else value[: limit - 1] + "…"
