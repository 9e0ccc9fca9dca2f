"""A MkDocs site's pages rendered as the site renders them: by Python-Markdown, with the
extensions mkdocs.yml configures (those installed; siteplan.py says which are left out),
so every id a page will have and every link it will make come from the real parser, not
from a re-implementation of it.

Collected as MkDocs collects them for its own link validation: the ``id`` of every element
and the ``name`` of every ``<a>``, in the rendered tree and in the raw HTML of the source;
the ``href`` of every ``<a>`` and the ``src`` of every ``<img>`` Markdown made (links in raw
HTML are left as they are, by MkDocs and here).

MkDocs collects them in tree processors, the last at priority 0, before the tree is
written out as HTML: so the rendering stops there. What comes after (serializing, the
postprocessors that put stashed HTML such as highlighted code back) cannot change what is
collected, and is a tenth of the time a page takes.

Where every extension is one atlas knows (siteplan.ALLOWED), two more parts of the work
are skipped, each because nothing collected can depend on it:

- highlighting code: pymdownx.highlight's output goes to the stash whole, out of the
  tree that ids and links are collected from (whether a fence is accepted is decided
  before, and still is). Inline code is still highlighted in headings and tab titles,
  whose text ids are made of;
- inline patterns on a paragraph, list item, table cell or definition with no ``[``,
  ``<`` or ``{`` in it: every link, image, footnote reference and wikilink needs a ``[``,
  every autolink and inline HTML a ``<``, every attr_list id a ``{``, and what magiclink
  makes of bare URLs and e-mail addresses is absolute links, which are never judged.
  Headings and tab titles are never skipped (ids are made of their text). Inline
  patterns are over half of a page's time. A page rendered only for its ids (the target
  of an anchor, not a page whose links are checked) skips them on text with no ``{``
  (attr_list) and no ``[^`` (a footnote reference): the ids of raw HTML are read from the
  source, and toc's ids come from headings, which are never skipped.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import stat
from dataclasses import dataclass
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

import markdown
from markdown.inlinepatterns import REFERENCE_RE, InlineProcessor, ReferenceInlineProcessor
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor
from markdown.util import AtomicString

from atlas_files.linkcheck.boundary import Boundary
from atlas_files.linkcheck.siteconfig import SiteConfig
from atlas_files.linkcheck.siteplan import (
    BUILTIN,
    Problem,
    Rendered,
    autorefs,
    emoji,
    plan,
    trusted,
)

_PLAIN_BLOCKS = frozenset({"p", "li", "td", "th", "dd", "dt"})
# Elements whose text no extension makes an id of (toc takes headings', tabbed its
# labels'): inline code in them needs no highlighting.
_PROSE = frozenset({
    "div", "p", "li", "ul", "ol", "dl", "dd", "dt", "td", "th", "tr", "table", "thead",
    "tbody", "blockquote", "em", "strong", "b", "i", "a", "del", "ins", "mark", "sub",
    "sup", "small", "span", "s", "u", "details", "summary",
})
_INLINE_MARKS = ("[", "<", "{")
_ID_MARKS = ("{", "[^")  # a page rendered for its ids alone: attr_list, footnote references
MAX_SNIPPET = 2 << 20  # bytes: a larger snippet is as if not found


class _RawIds(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value and (key == "id" or (key == "name" and tag == "a")):
                self.ids.add(value)


class _RawHtml(Preprocessor):  # type: ignore[misc]
    """Ids in the source's raw HTML (run where MkDocs runs it: before html_block)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def run(self, lines: list[str]) -> list[str]:
        parser = _RawIds()
        try:
            parser.feed("\n".join(lines))
            parser.close()
        except (AssertionError, ValueError):  # malformed markup: what was read so far
            pass
        self.ids = parser.ids
        return lines


class _Ids(Treeprocessor):  # type: ignore[misc]
    ids: set[str]

    def run(self, root: Element) -> None:
        self.ids: set[str] = set()
        for element in root.iter():
            ident = element.get("id")
            if ident:
                self.ids.add(ident)
            if element.tag == "a" and element.get("name"):
                self.ids.add(str(element.get("name")))


class _Collected(Exception):
    """Everything MkDocs collects has been collected: the rest of the rendering is skipped."""


class _Links(Treeprocessor):  # type: ignore[misc]
    links: list[str]
    stop = True  # what comes after cannot change what is collected: skip it

    def run(self, root: Element) -> None:
        self.links: list[str] = []
        for element in root.iter():
            key = "href" if element.tag == "a" else "src" if element.tag == "img" else None
            url = element.get(key) if key else None
            if url is not None:
                self.links.append(url)
        if self.stop:
            raise _Collected


class _SkipPlain(Treeprocessor):  # type: ignore[misc]
    """Marks the text of blocks that can make no link and no id as done (AtomicString),
    so that the inline patterns, which run next, leave it as it is."""

    marks: tuple[str, ...] = _INLINE_MARKS

    def run(self, root: Element) -> None:
        for element in root.iter():
            text = element.text
            if element.tag in _PLAIN_BLOCKS and len(element) == 0 and text \
                    and not isinstance(text, AtomicString) \
                    and not any(mark in text for mark in self.marks):
                element.text = AtomicString(text)


class _Inline:
    """Whether Python-Markdown's inline pass is running, and in which elements: the
    ancestors it keeps for its own patterns."""

    def __init__(self, md: markdown.Markdown) -> None:
        self.processor = md.treeprocessors["inline"]
        self.running = False
        run = self.processor.run

        def running(root: Element) -> Any:
            self.running = True
            try:
                return run(root)
            finally:
                self.running = False

        self.processor.run = running

    def in_prose(self) -> bool:
        """Whether the text being processed is prose, none of whose text becomes an id."""
        return self.running and all(tag in _PROSE for tag in self.processor.ancestors)


def _unhighlighted(real: type[Any], inline: _Inline) -> type[Any]:
    """pymdownx.highlight's highlighter, leaving block code, and inline code in prose, as
    they are (its text escaped, as the highlighter escapes it)."""

    class Unhighlighted(real):  # type: ignore[misc]
        def highlight(self, src: str, language: str, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("inline") or (len(args) > 5 and args[5]):
                if not inline.in_prose():
                    return super().highlight(src, language, *args, **kwargs)
                code = Element("code")
                code.text = escape(src, quote=False)
                return code
            return "<pre><code></code></pre>"

    return Unhighlighted


class _Emoji(InlineProcessor):  # type: ignore[misc]
    """What pymdownx.emoji makes of a shortcode it knows (``:smile:``, Material's
    ``:material-tag-outline:``), as far as ids go: an element with no text (an SVG, an
    image, a character toc's slugify drops), so a heading's id is made of the rest. The
    extension itself is left out (its index takes longer to load than a site takes to
    check); known are the emoji of pymdown-extensions' databases and the icons Material
    ships (a file of its `.icons` folder, looked for, never read)."""

    def __init__(self, md: markdown.Markdown) -> None:
        super().__init__(r"(:[+\-\w]+:)", md)
        from pymdownx import emoji1_db, gemoji_db, twemoji_db  # noqa: PLC0415 - emoji sites'

        self.known: set[str] = set()
        for db in (twemoji_db, gemoji_db, emoji1_db):
            self.known.update(db.emoji, db.aliases)
        spec = importlib.util.find_spec("material")
        origin = getattr(spec, "origin", None) if spec is not None else None
        self.icons = Path(origin).parent / "templates" / ".icons" if origin else None

    def _icon(self, name: str) -> bool:
        if self.icons is None:
            return False
        parts = name.split("-")
        # material-tag-outline: material/tag-outline.svg; fontawesome-brands-github:
        # fontawesome/brands/github.svg (a name's dashes are its folders, or its own).
        for cut in range(1, min(len(parts), 3)):
            if (self.icons.joinpath(*parts[:cut]) / ("-".join(parts[cut:]) + ".svg")).is_file():
                return True
        return False

    def handleMatch(self, m: re.Match[str], data: str) -> tuple[Any, Any, Any]:  # noqa: N802
        code = m.group(1)
        if code not in self.known and not self._icon(code[1:-1]):
            return None, None, None
        return Element("span"), m.start(0), m.end(0)


class _Autoref(ReferenceInlineProcessor):  # type: ignore[misc]
    """What autorefs' inline processor makes of a reference link to no definition
    (``[Foo][foo]``, ``[Foo][]``), as far as ids and links go: an element holding its text
    (autorefs' ``<autoref>``, resolved to a link only after MkDocs has validated the
    page). Registered where autorefs registers its own: right after Python-Markdown's
    reference links, so a defined reference is still a link."""

    def handleMatch(self, m: re.Match[str], data: str) -> tuple[Any, Any, Any]:  # noqa: N802
        text, index, handled = self.getText(data, m.end(0))
        if not handled:
            return None, None, None
        ref = self.RE_LINK.match(data, pos=index)
        if not ref:
            return None, None, None
        element = Element("autoref")
        element.text = text
        return element, m.start(0), ref.end(0)


@dataclass(frozen=True)
class Snippet:
    """A file a page asked pymdownx.snippets for, and the file it got (None: none)."""

    asked: str
    found: str | None


class _Markdown(markdown.Markdown):  # type: ignore[misc]
    def build_extension(self, ext_name: str, configs: Any) -> Any:
        """Extension ``ext_name`` made as Python-Markdown makes it, if it is one atlas loads
        (siteplan.ALLOWED; refused otherwise, whoever names it), without asking the entry
        points first (importlib.metadata: 20 ms of a cold check). Extensions name others
        too (superfences loads pymdownx.highlight)."""
        if not trusted(ext_name):
            raise ValueError(f"{ext_name} is not an extension atlas check loads")
        module = importlib.import_module(
            f"markdown.extensions.{ext_name}" if ext_name in BUILTIN else ext_name)
        make = getattr(module, "makeExtension", None)
        if make is None:  # not an extension: Python-Markdown says so in its own words
            return super().build_extension(ext_name, configs)
        return make(**dict(configs))


def _code_format() -> Any:
    from pymdownx.superfences import fence_code_format  # noqa: PLC0415 - only when needed

    return fence_code_format


class Renderer:
    """One Python-Markdown, set up as the site's, reset for each page."""

    def __init__(self, site: SiteConfig, problem: Problem, shortcuts: bool = True) -> None:
        """``shortcuts=False``: the whole rendering, even where the module's docstring says
        what may be skipped (the tests compare the two)."""
        self.site = site
        self._within = Boundary(map(Path, site.readable))
        self.snippet_bases: list[str] = []
        self.snippets: list[Snippet] = []  # those the last page asked for
        loaded: list[tuple[str, Any]] = []
        base = _Markdown()
        planned_all = plan(site, problem)
        for planned in planned_all:
            name = planned.name
            try:
                loaded.append((name, base.build_extension(
                    name, self._tuned(name, planned.config, problem))))
            except ImportError:
                problem(name, f"markdown extension {name} is not installed here: pages are "
                        "read without it (install it where atlas runs to check them as built)")
            except Exception as exc:  # noqa: BLE001 - a bad config is the site's problem
                problem(name, f"markdown extension {name} cannot be loaded: "
                        f"{type(exc).__name__}: {exc}"[:300])
        # As Markdown(extensions=...) would set them up, but one at a time: an extension
        # that fails in its own set-up (a site's own code, or a version mismatch) is the
        # site's problem to report, not a traceback of atlas's.
        self.md = _Markdown()
        for name, extension in loaded:
            try:
                self.md.registerExtensions([extension], {})
            except Exception as exc:  # noqa: BLE001 - whatever the site's code raises
                # Half set up, it may fail again as each page starts (its reset): out.
                while extension in self.md.registeredExtensions:
                    self.md.registeredExtensions.remove(extension)
                problem(name, f"markdown extension {name} failed to set itself up: "
                        f"{type(exc).__name__}: {exc}"[:300] + "; pages are read without "
                        "what it did not add")
        if autorefs(site):
            self.md.inlinePatterns.register(_Autoref(REFERENCE_RE, self.md), "mkdocs-autorefs",
                                            168)
        if emoji(site):  # where pymdownx.emoji registers its own
            self.md.inlinePatterns.register(_Emoji(self.md), "emoji", 75)
        self.md.reset()
        self._raw = _RawHtml()
        self.md.preprocessors.register(self._raw, "atlas_raw_ids", 21)
        self._ids = _Ids(self.md)
        self.md.treeprocessors.register(self._ids, "atlas_ids", 5)
        self._links = _Links(self.md)
        self._links.stop = shortcuts
        self.md.treeprocessors.register(self._links, "atlas_links", 0)
        self._trace_snippets()
        self._skip: _SkipPlain | None = None
        if shortcuts and all(trusted(p.name) for p in planned_all):
            self._skip = _SkipPlain(self.md)
            self.md.treeprocessors.register(self._skip, "atlas_skip_plain", 21)
            inline = _Inline(self.md)
            for ext in self.md.registeredExtensions:
                if type(ext).__module__ == "pymdownx.highlight" and \
                        hasattr(ext, "get_pymdownx_highlighter"):
                    cheap = _unhighlighted(ext.get_pymdownx_highlighter(), inline)
                    ext.get_pymdownx_highlighter = lambda cheap=cheap: cheap

    def _tuned(self, name: str, config: dict[str, Any], problem: Problem) -> dict[str, Any]:
        config = dict(config)
        if name == "pymdownx.snippets":
            # Snippets come from the repository alone, and never from the network.
            bases = config.get("base_path", ["."])
            bases = [bases] if isinstance(bases, str) else bases
            inside = []
            for base in (b for b in bases if isinstance(b, str)) if isinstance(bases, list) \
                    else ():
                path = str(self.site.root / base)
                if self._within.holds(path):
                    inside.append(path)
                else:
                    problem(f"{name}:base_path:{base}", f"markdown extension {name}: its "
                            f"base_path {base[:120]!r} lies outside the repository, which "
                            "atlas check never reads beyond: snippets are not looked for "
                            "there")
            config["base_path"] = inside
            config["restrict_base_path"] = True
            config["check_paths"] = False
            config["url_download"] = False
            self.snippet_bases = list(inside)
        if name == "pymdownx.superfences" and isinstance(config.get("custom_fences"), list):
            # A custom fence whose code atlas does not run is still a fence: its content
            # is shown as code (what it would make cannot be seen from source anyway).
            fences = []
            for fence in config["custom_fences"]:
                if isinstance(fence, dict) and "format" not in fence:
                    fence = {**fence, "format": _code_format()}
                fences.append(fence)
            config["custom_fences"] = fences
        return config

    def _trace_snippets(self) -> None:
        """Note each file a page includes with pymdownx.snippets: a rendering kept in the
        cache holds only while those files (and those it looked for) stay as they were.
        And include only a regular file of the repository, of a size to read: a snippet
        that leads outside (through a symbolic link), a pipe that never ends or a device
        is as if not found."""
        if "snippet" not in self.md.preprocessors:
            return
        snippets = self.md.preprocessors["snippet"]
        original = getattr(snippets, "get_snippet_path", None)
        if original is None:
            return

        def traced(path: str) -> Any:
            found = original(path)
            if found is not None and not self._readable(str(found)):
                found = None
            self.snippets.append(Snippet(str(path), None if found is None else str(found)))
            return found

        snippets.get_snippet_path = traced

    def _readable(self, path: str) -> bool:
        try:
            info = os.stat(path)
        except OSError:
            return False
        return stat.S_ISREG(info.st_mode) and info.st_size <= MAX_SNIPPET \
            and self._within.holds(path)

    def render(self, text: str, whole: bool = True) -> Rendered:
        """The page's ids and links; ``whole=False``: its ids alone, where the shortcuts
        apply (then inline patterns run only on text that can make an id)."""
        self.md.reset()
        self.snippets = []
        self._raw.ids, self._ids.ids, self._links.links = set(), set(), []
        whole = whole or self._skip is None
        if self._skip is not None:
            self._skip.marks = _INLINE_MARKS if whole else _ID_MARKS
        try:
            self.md.convert(text)
        except _Collected:
            pass
        return Rendered(frozenset(self._ids.ids | self._raw.ids),
                        tuple(self._links.links) if whole else (), whole)
