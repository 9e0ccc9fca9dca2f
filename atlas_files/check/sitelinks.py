"""Links judged as a MkDocs site will build them.

Each link is resolved as MkDocs resolves it: relative to the page's place in ``docs_dir``,
to a file of ``docs_dir`` (a folder, or a file outside ``docs_dir``, is no page of the
site), and its ``#anchor`` to an id of the page as rendered. How much each kind of problem
weighs is the site's ``validation:`` block (siteconfig.py).

atlas's own reader proposes, the site's parser confirms: the links and ids a page has are
first read by markdown.py (linear, no import of Python-Markdown), and only a link that looks
broken is confirmed by rendering the pages concerned with the site's own Markdown setup
(sitepages.py): the linking page (does it really make that link?) and, for an anchor, the
target (does it really lack that id?). Every error reported is the real parser's verdict;
a site whose links are fine costs a read of each page, not a build.

What the build alone can see is said, not guessed: an anchor missing from a page that a
plugin, a hook or an extension atlas does not run changes as it is built (mkdocstrings'
``::: package.module``, mkdocs-click, a hook that edits pages) is a warning, ATL017,
"cannot be checked from source", never an error.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from importlib import util
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from atlas_files.check import anchors, markdown
from atlas_files.check.boundary import Boundary
from atlas_files.check.findings import WARNING, Report
from atlas_files.check.links import PAGE_SUFFIXES, Anchors, LinkChecker, cut, suggestion
from atlas_files.check.siteconfig import (
    NOT_NEEDED,
    SiteConfig,
    Unresolved,
    read_file,
    resolve_relative,
)
from atlas_files.check.siteplan import (
    BUILTIN,
    DIRECTIVE_MAKERS,
    Rendered,
    refusal,
    unresolved_message,
)
from atlas_files.check.siterender import Renderings
from atlas_files.check.sources import Source

# Plugins that add pages (a link to a file not in docs_dir may be to one of them).
_FILE_MAKERS = frozenset({"gen-files", "blog", "mkdocs-gen-files", "redirects"})
_PAGE_EVENTS = ("on_page_markdown", "on_page_content", "on_post_page", "on_page_read_source")
_MAX_RENDERED = 2 << 20  # bytes: past this a page is read by atlas's own reader (linear)
_MAX_FOUND = 200  # suspect links confirmed by rendering, per page; past that, as read
_AMP_SUBSTITUTE = "\x02amp\x03"
_SET_ID = re.compile(r"#([^\s}]*)")  # in a heading's { }: the ids it may set
_PLAIN_ID = re.compile(r"[\w.:-]+")


@dataclass(frozen=True)
class Page:
    """A page as atlas's reader sees it."""

    path: Path
    body: str
    first: int  # the body's first line in the file
    read: markdown.Page
    why: str | None  # why some of its anchors cannot be seen from source


class Where(NamedTuple):
    kind: str  # "absolute", "missing" (no such file in docs_dir) or "anchor"
    target: str  # the file's path in docs_dir (an anchor's: the page that should have it)
    written: str  # the link's path as written ("": an anchor on its own page)
    fragment: str


@dataclass(frozen=True)
class Suspect:
    """A link that looks broken, before the site's parser confirms it."""

    link: markdown.Link
    code: str
    level: str | None
    message: str
    hint: str = ""
    target: str | None = None  # for an anchor: the page that should have it
    fragment: str = ""


class SiteLinks:
    def __init__(self, site: SiteConfig, report: Report, source: Source,
                 fast: LinkChecker) -> None:
        self.site = site
        self.report = report
        self.source = source
        self.fast = fast
        self._files: set[str] | None = None
        self._pages: dict[str, Page | None] = {}
        self._anchors: dict[str, Anchors] = {}
        self._wheres: dict[tuple[str, str], Where | None] = {}
        self._said: set[str] = set()
        self.renderings = Renderings(site, self._problem, self._text)
        self._hooks = self._page_hooks()
        self._missing_extensions()
        # Its own reader, with the site's toc (the ids it proposes are the site's).
        self.reader = LinkChecker(report, source, toc=self._toc())

    def contains(self, path: Path) -> bool:
        return path.is_relative_to(self.site.docs_dir)

    def _problem(self, key: str, message: str, line: int | None = None) -> None:
        if key not in self._said:  # each said once per run
            self._said.add(key)
            self.report.add(self.site.path, line or self.site.line_of(key.split(":")[0]),
                            "ATL018", message, _hint(message))

    def _missing_extensions(self) -> None:
        """Say at once which configured extensions are not loaded, and why (importing none
        of them: a site whose renderings are all cached never needs them), and which tags
        of mkdocs.yml are left out."""
        for name, _ in self.site.extensions:
            refused = refusal(name, self.site.root)
            if refused is not None:
                self._problem(name, refused)
                continue
            # Looked for, not imported: its package (Python-Markdown's, for one of its own
            # short names: a run whose renderings are all cached never imports it).
            module = "markdown" if name in BUILTIN else name.split(".")[0]
            if name not in NOT_NEEDED and not _findable(module):
                self._problem(name, f"markdown extension {name} is not installed here: pages "
                              "are read without it (install it where atlas runs to check them "
                              "as built)")
        for name, raw in self.site.extensions:

            def unresolved(value: Unresolved, name: str = name) -> None:
                self._problem(f"{name}:{value.what}", unresolved_message(name, value))

            resolve_relative(raw, self.site.root, self.site.docs_dir, unresolved)
        for tag in self.site.unresolved:
            self._problem(f"tag:{tag.what}:{tag.line}", f"{tag.said()} is a tag atlas check "
                          "constructs nothing for (a `!!python/...` tag names code to import "
                          "and call, which a check never does): that value is left out",
                          tag.line)

    def _toc(self) -> anchors.Toc:
        config = dict(self.site.extensions).get("toc", {})
        slugify = config.get("slugify")
        separator = config.get("separator", "-")
        return anchors.Toc(slugify if callable(slugify) else None,
                           separator if isinstance(separator, str) else "-")

    def _page_hooks(self) -> str | None:
        within = Boundary(map(Path, self.site.readable))
        for hook in self.site.hooks:
            try:
                text = read_file(hook, within, "hook")
            except ValueError:
                return f"the site's hook {hook.name} (not read) may change pages as the " \
                       "site is built"
            if any(event in text for event in _PAGE_EVENTS):
                return f"the site's hook {hook.name} changes pages as the site is built"
        return None

    @property
    def files(self) -> set[str]:
        if self._files is None:
            found: set[str] = set()
            for folder, _, names in os.walk(self.site.docs_dir):
                rel = Path(folder).relative_to(self.site.docs_dir).as_posix()
                prefix = "" if rel == "." else rel + "/"
                found.update(prefix + n for n in names)
            self._files = found
        return self._files

    def page(self, uri: str) -> Page | None:
        if uri not in self._pages:
            self._pages[uri] = self._read(self.site.docs_dir / uri)
        return self._pages[uri]

    def _read(self, path: Path) -> Page | None:
        try:
            text = self.source.read(path).decode("utf-8", "replace")
        except OSError:
            return None
        body, first = markdown.split_front_matter(text)
        read = markdown.read(body, first)
        why = self._hooks or self._made_at_build(read, body)
        return Page(path, body, first, read, why)

    def reader_anchors(self, uri: str, page: Page) -> Anchors:
        """The ids atlas's reader finds on the page (snippets followed where it can): only
        asked for where the site's parser cannot render it."""
        if uri not in self._anchors:
            self._anchors[uri] = self.reader.anchors_of(page.path, page.read)
        return self._anchors[uri]

    def rendered(self, uri: str, whole: bool = True) -> Rendered | None:
        """The page as the site's parser renders it (siterender.py); ``whole=False``: for
        its ids alone."""
        return self.renderings.get(uri, whole)

    def _text(self, uri: str) -> str | None:
        """The text the site's parser renders for page ``uri`` (None: it is not rendered)."""
        page = self.page(uri)
        if page is None or len(page.body) > _MAX_RENDERED:
            return None
        return "\n" * (page.first - 1) + page.body

    def prefetch(self, paths: list[Path]) -> None:
        """Render ahead, in several processes where that pays (renderpool.py), the pages
        that checking ``paths`` will render: the targets of their anchors and the pages
        whose links look broken. Only the time changes."""
        self.renderings.start()
        for _ in range(2):  # then the pages that link to an anchor their target lacks
            whole: dict[str, bool] = {}
            for path in paths:
                uri = path.relative_to(self.site.docs_dir).as_posix()
                page = self.page(uri)
                for target, links in self._to_render(uri, page) if page is not None else ():
                    whole[target] = whole.get(target, False) or links
            wanted = {}
            for target, links in whole.items():
                text = self.renderings.to_render(target, links)
                if text is not None:
                    wanted[target] = (text, links)
            self.renderings.ahead(wanted)

    def finish(self) -> None:
        """Keep this run's renderings for the next (rendercache.py)."""
        self.renderings.finish()

    def _made_at_build(self, page: markdown.Page, body: str) -> str | None:
        names = dict(self.site.extensions)
        makers = sorted(n for n in DIRECTIVE_MAKERS if n in self.site.plugins or n in names)
        if page.directives and makers:
            line, what = page.directives[0]
            return f"`::: {cut(what)}` (line {line}) is expanded by {makers[0]}"
        if "macros" in self.site.plugins and ("{{" in body or "{%" in body):
            return "the macros plugin expands it as the site is built"
        if "include-markdown" in self.site.plugins and "{%" in body:
            return "include-markdown includes files into it as the site is built"
        for line, name in page.snippets:
            beyond = self._snippet_beyond(name)
            if beyond is not None:
                return f"it includes the snippet {cut(name)!r} (line {line}), {beyond}"
        if page.snippets and ("pymdownx.snippets" not in names
                              or "pymdownx.snippets" in self._said):
            line, name = page.snippets[0]
            return f"it includes the snippet {cut(name)!r} (line {line}), and the site's " \
                   "snippets extension is not loaded here"
        return None

    @cached_property
    def _snippets(self) -> tuple[list[str], bool] | None:
        """The folders (or files) pymdownx.snippets looks in, as configured, and whether it
        downloads URLs; None if the site does not use it."""
        raw = dict(self.site.extensions).get("pymdownx.snippets")
        if raw is None:
            return None
        config = resolve_relative(raw, self.site.root, self.site.docs_dir, lambda u: None)
        bases = config.get("base_path", ["."])
        bases = [bases] if isinstance(bases, str) else bases if isinstance(bases, list) else []
        return ([str(self.site.root / b) for b in bases if isinstance(b, str)],
                config.get("url_download") is True)

    def _snippet_beyond(self, name: str) -> str | None:
        """Why the site's build includes snippet ``name`` from where atlas never reads (a
        URL it downloads, a file outside the repository), if it does."""
        if self._snippets is None:
            return None
        bases, downloads = self._snippets
        if name.lower().startswith(("http://", "https://")):
            return "which the site's build downloads; atlas check fetches nothing" \
                if downloads else None
        within = Boundary(map(Path, self.site.readable))
        file = name.split(":")[0] if not os.path.exists(name) else name
        for base in bases:
            for candidate in (os.path.join(base, file),
                              os.path.join(os.path.dirname(base), file)):
                if os.path.exists(candidate) and not within.holds(candidate):
                    return "from outside the repository, which atlas check never reads"
        return None

    def check_file(self, path: Path) -> None:
        uri = path.relative_to(self.site.docs_dir).as_posix()
        page = self.page(uri)
        if page is None:
            self.fast.check_file(path)
            return
        suspects = []
        for link in page.read.links:
            suspect = self._judge(uri, link, page)
            if suspect is not None:
                suspects.append(suspect)
        if self._makes_links(page):
            suspects += self._made_links(uri, page)
        for suspect in suspects[:_MAX_FOUND]:
            self._confirm(path, uri, suspect)
        for suspect in suspects[_MAX_FOUND:]:
            self._report(path, suspect, suspect.link.used)

    def _makes_links(self, page: Page) -> bool:
        """Whether the site's parser may make links the page's source does not show that
        could be broken: a footnote's way back (to a reference that may not exist), and a
        heading's permalink where the heading sets its own id with more than letters,
        digits and ``_.:-`` in it (an escape, a ``%``: the link is ``#`` and the id as
        written, which such a character may make another)."""
        return any(label.startswith("fn:") for label in page.read.ids) or any(
            "{" in raw and "#" in raw and not all(
                _PLAIN_ID.fullmatch(ident) for ident in _SET_ID.findall(raw[raw.rfind("{"):]))
            for _, raw in page.read.headings)

    def _made_links(self, uri: str, page: Page) -> list[Suspect]:
        rendered = self.rendered(uri)
        if rendered is None:
            return []
        written = {link.target for link in page.read.links}
        out = []
        for url in dict.fromkeys(rendered.links):
            if url in written or not url.startswith("#"):
                continue
            at = page.body.find(url[1:])
            line = page.first + page.body.count("\n", 0, at) if at >= 0 else page.first
            suspect = self._judge(uri, markdown.Link(line, url), page)
            if suspect is not None:
                out.append(suspect)
        return out

    def _confirm(self, path: Path, uri: str, suspect: Suspect) -> None:
        """Report ``suspect`` if the site's parser agrees: the page makes that link, and
        (for an anchor) its target lacks that id."""
        rendered = self.rendered(uri)
        used = suspect.link.used
        if rendered is not None:
            made = set(rendered.links) | {unquote(u) for u in rendered.links}
            url = suspect.link.target
            used = url in made or unquote(url) in made
            if not used and not suspect.link.definition:
                return  # the site makes no such link (code, raw HTML, a comment...)
        if suspect.target is not None:
            target = self.rendered(suspect.target, whole=False)
            if target is not None and (suspect.fragment in target.ids
                                       or unquote(suspect.fragment) in target.ids):
                return
        self._report(path, suspect, used)

    def _report(self, path: Path, suspect: Suspect, used: bool) -> None:
        if suspect.level is None:
            return
        if not used:  # a broken link nobody can follow: worth a warning, not an error
            self.report.add(path, suspect.link.line, "ATL016",
                            suspect.message + "; no link uses this definition")
            return
        self.report.add(path, suspect.link.line, suspect.code, suspect.message, suspect.hint,
                        severity=suspect.level)

    def _where(self, uri: str, link: markdown.Link) -> Where | None:
        """Where ``link`` on page ``uri`` leads, as far as atlas judges it (None: a link
        it does not judge, or one that is fine as written). Asked for each link as the
        pages to render are worked out, and again as it is judged: worked out once."""
        key = (uri, link.target)
        if key not in self._wheres:
            self._wheres[key] = self._work_out(uri, link.target)
        return self._wheres[key]

    def _work_out(self, uri: str, url: str) -> Where | None:
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        if parts.scheme or parts.netloc or _AMP_SUBSTITUTE in url:
            return None
        if url.startswith(("/", "\\")):
            return Where("absolute", uri, parts.path, "")
        if not parts.path:
            return Where("anchor", uri, "", parts.fragment) if parts.fragment else None
        target = posixpath.normpath(posixpath.join(posixpath.dirname(uri),
                                                   unquote(parts.path))).lstrip("/")
        if target not in self.files:
            return Where("missing", target, parts.path, "")
        if parts.fragment and target.lower().endswith(PAGE_SUFFIXES):
            return Where("anchor", target, parts.path, parts.fragment)
        return None

    def _judge(self, uri: str, link: markdown.Link, page: Page) -> Suspect | None:
        where = self._where(uri, link)
        if where is None:
            return None
        if where.kind == "absolute":
            return Suspect(link, "ATL010", self.site.levels["absolute_links"],
                           f"absolute link '{cut(link.target)}': MkDocs leaves it as is")
        if where.kind == "missing":
            return self._missing(link, where.written, where.target)
        if not where.written:
            return self._anchor(link, where.fragment, uri, page, "this page")
        found = self.page(where.target)
        if found is None:
            return None
        return self._anchor(link, where.fragment, where.target, found, where.target)

    def _to_render(self, uri: str, page: Page) -> Iterator[tuple[str, bool]]:
        """The pages that checking page ``uri`` renders, as far as is known before, and
        whether for their links too: the targets of its anchors (their ids), and the page
        itself where a link looks broken."""
        if self._makes_links(page):
            yield uri, True
        for link in page.read.links:
            where = self._where(uri, link)
            if where is None:
                continue
            if where.kind != "anchor":
                yield uri, True
                continue
            if self.page(where.target) is None:
                continue
            yield where.target, False
            known = self.renderings.known(where.target)
            if known is not None and where.fragment not in known.ids \
                    and unquote(where.fragment) not in known.ids:
                yield uri, True

    def _missing(self, link: markdown.Link, written: str, target: str) -> Suspect | None:
        levels = self.site.levels
        url = link.target
        if self.site.plugins & _FILE_MAKERS:
            makers = ", ".join(sorted(self.site.plugins & _FILE_MAKERS))
            return Suspect(link, "ATL017", WARNING, f"link '{cut(url)}' cannot be checked from "
                           f"source: {cut(target)} is not among the documentation files, and "
                           f"the site's plugins ({makers}) may make it as the site is built")
        on_disk = self.site.docs_dir / target
        if target.startswith("../"):
            where = "lies outside docs_dir: it is not part of the site" \
                if os.path.exists(on_disk) else "does not exist"
        elif os.path.isdir(on_disk):
            where = "is a folder, not a page: MkDocs leaves the link as is (a 404 with " \
                    "directory URLs); link its index.md"
        else:
            where = "is not among the documentation files"
        code, level = ("ATL019", levels["unrecognized_links"]) \
            if not posixpath.splitext(written)[1] else ("ATL010", levels["not_found"])
        return Suspect(link, code, level, f"broken link '{cut(url)}': {cut(target)} {where}")

    def _anchor(self, link: markdown.Link, fragment: str, target: str, page: Page,
                where: str) -> Suspect | None:
        # The target's ids as the site renders it (its reader's where it cannot be): a page
        # the reader misjudges (a fence the site's parser refuses) must not hide a break.
        rendered = self.rendered(target, whole=False)
        ids = rendered.ids if rendered is not None else self.reader_anchors(target, page).ids
        if fragment in ids or unquote(fragment) in ids:
            return None
        if page.why is not None:
            return Suspect(link, "ATL017", WARNING, f"anchor '{cut(link.target)}' cannot be "
                           f"checked from source: {page.why}")
        return Suspect(link, "ATL011", self.site.levels["anchors"],
                       f"broken anchor '{cut(link.target)}': {where} has no anchor "
                       f"#{cut(fragment)}", suggestion(fragment, ids), target, fragment)


def _hint(message: str) -> str:
    """ATL018's hint for what ``message`` says (the code's own, for an extension that is
    not installed)."""
    if "is not installed here" in message:
        return ""
    if "is a tag atlas check constructs nothing for" in message:
        return ("write that setting as a plain value if atlas should read it; what the tag "
                "makes stays a build check (`mkdocs build --strict`)")
    if "lies outside the repository" in message:
        return "keep what the site reads inside the repository; atlas check reads nothing else"
    return ("atlas check never runs it: what it makes stays a build check (`mkdocs build "
            "--strict` with validation set)")


def _findable(module: str) -> bool:
    try:
        return util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
