"""Everything from the record reaches the site through this module.

The record is written by agents, so any string in it may be hostile. Three rules:

* Plain strings (names, authors, summaries, decision texts) are HTML-escaped with
  ``text()``; the result is only ever placed inside raw HTML blocks the generator writes.
* Markdown bodies are converted to HTML here, by our own Python-Markdown instance without
  ``attr_list`` or ``md_in_html`` (the extensions that turn text into attributes), and the
  result goes through nh3 with a short allowlist: no script, no style, no event handler,
  no ``id`` or ``class`` (no clobbering of the page's own elements), links only to http,
  https and mailto or to pages of this site.
* Neither engine sees record text as Markdown: it only sees our raw HTML blocks, which
  Python-Markdown passes through untouched once no fence is left in them (fenced code
  blocks are found before raw HTML is set aside, see ``unfenced``).

A body Python-Markdown cannot render (nesting deeper than the interpreter's stack, or
text on which it spends more than ``RENDER_CPU_S`` seconds of CPU: some patterns, like
thousands of ``[a](``, cost it time that grows as a power of their length) is shown as
written, escaped, with a note; one body never stops or stalls the build.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import time
from collections.abc import Callable, MutableMapping
from typing import Any

import markdown
import nh3
from markdown.extensions.fenced_code import FencedCodeExtension
from markdown.extensions.sane_lists import SaneListExtension
from markdown.extensions.tables import TableExtension
from markdown.treeprocessors import Treeprocessor
from markdown.util import AtomicString

from atlas_files.facts.renderlimit import RENDER_CPU_S, TooSlow, cpu_limit

# C0 controls (but tab and newline) and DEL are never valid in HTML text; STX/ETX would
# also collide with Python-Markdown's placeholders.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]")
_HEADING_RE = re.compile(r"<(/?)h([1-6])>")
# A placeholder Python-Markdown left in its output: emphasis around raw HTML
# (`_<script>x</script>_<script>y</script>`) can make it lose track of what it set aside,
# even cut the placeholder's first character off. What it stood for was raw HTML, which
# the cleaner drops; the placeholder itself is never page text (a body's own text has no
# STX or ETX: they are removed before rendering).
_PLACEHOLDER_RE = re.compile("\x02?klzzwxh:\\d+\x03|[\x02\x03]")
_SCHEME_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
# Three backticks or tildes open a fenced code block for the engines' Markdown pass
# (fenced_code in MkDocs, SuperFences in Zensical), which runs before raw HTML is set
# aside: a fence in a text shown "as written" would become a code block. As character
# references they read the same in the browser and to the search index, and open nothing.
_FENCES = (("```", "&#96;&#96;&#96;"), ("~~~", "&#126;&#126;&#126;"))

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol",
    "p", "pre", "q", "s", "samp", "small", "strong", "sub", "summary", "sup", "table",
    "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "img": {"src", "alt", "title", "width", "height"},
    "ol": {"start"},
    "td": {"align", "colspan", "rowspan"},
    "th": {"align", "colspan", "rowspan"},
}
URL_SCHEMES = {"http", "https", "mailto"}
# Dropped with their content, not just unwrapped: their text is code or markup, not prose.
DROPPED_WITH_CONTENT = {"script", "style", "template", "iframe", "object", "noscript"}

# What can start one of Python-Markdown's inline patterns (code, escapes, links and images,
# autolinks and inline HTML, entities, emphasis, a line break), and its placeholders.
_INLINE_SYNTAX_RE = re.compile(r"[`\\\[\]!<>&*_\x02\x03]|  \n")

Resolver = Callable[[str], "str | None"]
# Kept in the cache in place of Python-Markdown's output for a body it could not render,
# followed by the reason; the reason is escaped when shown, like everything cached.
UNRENDERED = "\x00atlas-unrendered:"


def clean_str(value: Any) -> str:
    return _CONTROL_RE.sub("", "" if value is None else str(value))


def text(value: Any) -> str:
    """``value`` as HTML text or attribute value (quotes escaped too), with no fence for
    the engine's Markdown pass to find (``unfenced``)."""
    return unfenced(html.escape(clean_str(value), quote=True))


def unfenced(markup: str) -> str:
    """``markup`` (HTML) with no three backticks or tildes in a row: each three are
    written as character references, which mean the same in HTML text and attribute
    values. (What a run leaves over, one or two, touches a reference, not another run.)"""
    for fence, written in _FENCES:
        if fence in markup:
            markup = markup.replace(fence, written)
    return markup


def heading(value: str) -> str:
    """A Markdown heading's text from a string the generator chose or a checked name.

    Names are ``[a-z0-9._-]``; only ``_`` could start emphasis, so it is escaped. Anything
    else is escaped for HTML as well, in case a caller passes a string it did not check.
    """
    return text(value).replace("_", r"\_").replace("*", r"\*").replace("`", r"\`")


def yaml_str(value: str) -> str:
    """A YAML scalar for front matter: JSON strings are valid YAML and escape everything."""
    return json.dumps(clean_str(value), ensure_ascii=True)


def scheme_of(url: str) -> str | None:
    m = _SCHEME_RE.match(url.strip())
    return m.group(1).lower() if m else None


class _PlainText(Treeprocessor):  # type: ignore[misc]  # markdown has no types
    """Marks each text of the parsed body in which no inline pattern can match as done
    (Python-Markdown's ``AtomicString``), so that its inline pass, about half of its time
    on ordinary prose, tries its sixteen patterns only where one may apply. The output is
    the same (tests/sitegen/test_site_sanitize.py renders with and without it)."""

    def run(self, root: Any) -> None:
        for element in root.iter():
            for attr in ("text", "tail"):
                value = getattr(element, attr)
                if (value and not isinstance(value, AtomicString)
                        and not _INLINE_SYNTAX_RE.search(value)):
                    setattr(element, attr, AtomicString(value))


def new_markdown(skip_plain_text: bool = True) -> markdown.Markdown:
    """The Python-Markdown instance bodies are rendered with (see the module's doc)."""
    # Extensions as objects, not names: a name makes Python-Markdown scan every
    # installed package's entry points, about 0.15 s, on every build.
    md = markdown.Markdown(
        extensions=[TableExtension(use_align_attribute=True), FencedCodeExtension(),
                    SaneListExtension()],
        output_format="html",
    )
    if skip_plain_text:  # just before the inline pass (priority 20)
        md.treeprocessors.register(_PlainText(md), "atlas_plain_text", 21)
    return md


class BodyRenderer:
    """Markdown body -> sanitised HTML. One instance per build; not thread-safe.

    ``resolve`` maps a link target that is no web URL (``plan@v2``, a relative path) to a
    URL of this site, or None to drop the link and keep its text.
    """

    def __init__(self) -> None:
        self._md = new_markdown()
        self._resolve: Resolver = lambda _target: None
        self.seconds_markdown = 0.0  # Python-Markdown's own time: MkDocs' work, done here
        self._cleaner = nh3.Cleaner(
            tags=ALLOWED_TAGS,
            clean_content_tags=DROPPED_WITH_CONTENT,
            attributes=ALLOWED_ATTRIBUTES,
            attribute_filter=self._filter,
            url_schemes=URL_SCHEMES,
            link_rel="noopener noreferrer nofollow",
            strip_comments=True,
        )

    def _filter(self, tag: str, attr: str, value: str) -> str | None:
        if (tag, attr) == ("a", "href"):
            scheme = scheme_of(value)
            if scheme is not None:
                return value if scheme in URL_SCHEMES else None
            return self._resolve(value.strip())
        if (tag, attr) == ("img", "src"):
            # A relative image has nothing to point at in the site; a remote one is kept.
            return value if scheme_of(value) in ("http", "https") else None
        return value

    def render(self, body: str, resolve: Resolver | None = None,
               cache: MutableMapping[str, str] | None = None) -> str:
        """Sanitised HTML for ``body``; its headings are demoted by two levels so they sit
        below the version headings of the page. ``cache`` keeps Python-Markdown's output
        (before sanitising) by the body's digest."""
        source = clean_str(body)
        key = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
        raw = cache.get(key) if cache is not None else None
        if raw is None:
            started = time.perf_counter()
            raw = self._convert(source)
            self.seconds_markdown += time.perf_counter() - started
            if cache is not None:
                cache[key] = raw
        if raw.startswith(UNRENDERED):
            return (f'<p class="atlas-note">This text could not be rendered '
                    f"({text(raw[len(UNRENDERED):])}); it is shown as written.</p>"
                    f'<pre class="atlas-source">{text(body)}</pre>')
        self._resolve = resolve or (lambda _target: None)
        try:
            safe = str(self._cleaner.clean(_PLACEHOLDER_RE.sub("", raw)))
        finally:
            self._resolve = lambda _target: None
        return unfenced(_HEADING_RE.sub(_demote, safe))


    def _convert(self, source: str) -> str:
        """Python-Markdown's HTML for ``source``, or UNRENDERED and the reason."""
        try:
            with cpu_limit(RENDER_CPU_S):
                return str(self._md.reset().convert(source))
        except TooSlow:
            reason = f"Markdown took more than {RENDER_CPU_S:g} s of CPU on it"
        except RecursionError:
            reason = "it is nested too deeply"
        except Exception as exc:  # noqa: BLE001 - a third-party parser on hostile text
            reason = f"Markdown failed on it: {type(exc).__name__}"
        self._md.reset()
        return UNRENDERED + reason


def _demote(m: re.Match[str]) -> str:
    return f"<{m.group(1)}h{min(6, int(m.group(2)) + 2)}>"
