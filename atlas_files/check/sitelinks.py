"""Links judged as a MkDocs site will build them.

Each page is rendered by the site's own Markdown setup (sitepages.py); each link it makes
is resolved as MkDocs resolves it: relative to the page's place in ``docs_dir``, to a file
of ``docs_dir`` (a folder, or a file outside ``docs_dir``, is no page of the site), and its
``#anchor`` to an id of the page rendered. How much each kind of problem weighs is the
site's ``validation:`` block (siteconfig.py).

What the build alone can see is said, not guessed: an anchor missing from a page that a
plugin, a hook or an extension atlas does not run changes as it is built (mkdocstrings'
``::: package.module``, mkdocs-click, a hook that edits pages) is a warning, ATL017,
"cannot be checked from source", never an error.
"""

from __future__ import annotations

import os
import posixpath
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from atlas_files.check import anchors, markdown
from atlas_files.check.findings import Report
from atlas_files.check.links import PAGE_SUFFIXES, LinkChecker, cut, suggestion
from atlas_files.check.siteconfig import SiteConfig
from atlas_files.check.sitepages import Rendered, Renderer
from atlas_files.check.sources import Source

# Plugins that add pages (a link to a file not in docs_dir may be to one of them).
_FILE_MAKERS = frozenset({"gen-files", "blog", "mkdocs-gen-files", "redirects"})
_PAGE_EVENTS = ("on_page_markdown", "on_page_content", "on_post_page", "on_page_read_source")
_MAX_RENDERED = 2 << 20  # bytes: past this a page is read by atlas's own reader (linear)
_AMP_SUBSTITUTE = "\x02amp\x03"


@dataclass(frozen=True)
class PageInfo:
    ids: frozenset[str]
    links: tuple[tuple[str, int], ...]  # (url as rendered, line in the source)
    unused: tuple[markdown.Link, ...]  # reference definitions no link uses
    why: str | None  # why some of its anchors cannot be seen from source


class SiteLinks:
    def __init__(self, site: SiteConfig, report: Report, source: Source,
                 fast: LinkChecker) -> None:
        self.site = site
        self.report = report
        self.source = source
        self.fast = fast
        self._renderer: Renderer | None = None
        self._files: set[str] | None = None
        self._pages: dict[str, PageInfo | None] = {}
        self._said: set[str] = set()
        self._hooks = self._page_hooks()

    def contains(self, path: Path) -> bool:
        return path.is_relative_to(self.site.docs_dir)

    def _problem(self, key: str, message: str) -> None:
        if key not in self._said:  # each said once per run
            self._said.add(key)
            self.report.add(self.site.path, self.site.line_of(key.split(":")[0]), "ATL018",
                            message)

    def _page_hooks(self) -> str | None:
        for hook in self.site.hooks:
            try:
                text = hook.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
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

    def _render(self, text: str) -> Rendered:
        if self._renderer is None:
            self._renderer = Renderer(self.site, self._problem)
        return self._renderer.render(text)

    def page(self, uri: str) -> PageInfo | None:
        if uri not in self._pages:
            self._pages[uri] = self._read(self.site.docs_dir / uri)
        return self._pages[uri]

    def _read(self, path: Path) -> PageInfo | None:
        try:
            text = self.source.read(path).decode("utf-8", "replace")
        except OSError:
            return None
        body, first = markdown.split_front_matter(text)
        page = markdown.read(body, first)
        why = self._hooks or self._made_at_build(page, body)
        rendered = None
        if len(body) <= _MAX_RENDERED:
            try:
                rendered = self._render("\n" * (first - 1) + body)
            except Exception as exc:  # noqa: BLE001 - an extension's bug: say it, go on
                self._problem(f"render:{path}", f"{self.report.show(path)} cannot be rendered "
                              f"with the site's extensions ({type(exc).__name__}: {exc}); it "
                              "was read by atlas's own reader"[:400])
        if rendered is None:
            ids, _ = anchors.page_ids(page)
            links = tuple((link.target, link.line) for link in page.links if link.used)
            return PageInfo(frozenset(ids), links, (), why)
        lines: dict[str, deque[int]] = defaultdict(deque)
        for link in page.links:
            lines[link.target].append(link.line)
        placed = []
        for url in rendered.links:
            queue = lines.get(url) or lines.get(unquote(url))
            if queue:
                line = queue.popleft() if len(queue) > 1 else queue[0]
            else:
                at = body.find(url)
                line = first + body.count("\n", 0, at) if at >= 0 else first
            placed.append((url, line))
        made = set(rendered.links)
        unused = tuple(link for link in page.links
                       if link.definition and not link.used and link.target not in made)
        return PageInfo(rendered.ids, tuple(placed), unused, why)

    def _made_at_build(self, page: markdown.Page, body: str) -> str | None:
        makers = self._renderer.directive_makers if self._renderer else None
        if makers is None:
            names = dict(self.site.extensions)
            makers = {n for n in ("mkdocstrings", "mkdocs-click", "mkdocs_click")
                      if n in self.site.plugins or n in names}
        if page.directives and makers:
            line, what = page.directives[0]
            return f"`::: {cut(what)}` (line {line}) is expanded by {sorted(makers)[0]}"
        if "macros" in self.site.plugins and ("{{" in body or "{%" in body):
            return "the macros plugin expands it as the site is built"
        if "include-markdown" in self.site.plugins and "{%" in body:
            return "include-markdown includes files into it as the site is built"
        if page.snippets and "pymdownx.snippets" not in dict(self.site.extensions):
            line, name = page.snippets[0]
            return f"it includes the snippet {name!r} (line {line})"
        return None

    def check_file(self, path: Path) -> None:
        uri = path.relative_to(self.site.docs_dir).as_posix()
        info = self.page(uri)
        if info is None:
            self.fast.check_file(path)
            return
        for url, line in info.links:
            self._judge(path, uri, url, line, info, unused=False)
        for link in info.unused:
            self._judge(path, uri, link.target, link.line, info, unused=True)

    def _add(self, path: Path, line: int, code: str, level: str | None, message: str,
             unused: bool, hint: str = "") -> None:
        if level is None:
            return
        if unused:  # a broken link nobody can follow: worth a warning, not an error
            self.report.add(path, line, "ATL016", message + "; no link uses this definition")
            return
        self.report.add(path, line, code, message, hint, severity=level)

    def _judge(self, path: Path, uri: str, url: str, line: int, info: PageInfo,
               unused: bool) -> None:
        levels = self.site.levels
        try:
            parts = urlsplit(url)
        except ValueError:
            return
        if parts.scheme or parts.netloc or _AMP_SUBSTITUTE in url:
            return
        if url.startswith(("/", "\\")):
            self._add(path, line, "ATL010", levels["absolute_links"], f"absolute link "
                      f"'{cut(url)}': MkDocs leaves it as is", unused)
            return
        if not parts.path:
            if parts.fragment:
                self._anchor(path, line, url, parts.fragment, info, "this page", unused)
            return
        target = posixpath.normpath(posixpath.join(posixpath.dirname(uri),
                                                   unquote(parts.path))).lstrip("/")
        if target not in self.files:
            self._missing(path, line, url, parts.path, target, unused)
            return
        if parts.fragment and target.lower().endswith(PAGE_SUFFIXES):
            page = self.page(target)
            if page is not None:
                self._anchor(path, line, url, parts.fragment, page, target, unused)

    def _missing(self, path: Path, line: int, url: str, written: str, target: str,
                 unused: bool) -> None:
        levels = self.site.levels
        if self.site.plugins & _FILE_MAKERS:
            makers = ", ".join(sorted(self.site.plugins & _FILE_MAKERS))
            self.report.add(path, line, "ATL017", f"link '{cut(url)}': {cut(target)} is not "
                            f"among the documentation files; the site's plugins ({makers}) may "
                            "make it as the site is built")
            return
        on_disk = (self.site.docs_dir / target)
        if target.startswith("../"):
            where = "lies outside docs_dir: it is not part of the site"
            if not os.path.exists(on_disk):
                where = "does not exist"
        elif os.path.isdir(on_disk):
            where = "is a folder, not a page: MkDocs leaves the link as is (a 404 with " \
                    "directory URLs); link its index.md"
        else:
            where = "is not among the documentation files"
        code, level = ("ATL019", levels["unrecognized_links"]) \
            if not posixpath.splitext(written)[1] else ("ATL010", levels["not_found"])
        self._add(path, line, code, level, f"broken link '{cut(url)}': {cut(target)} {where}",
                  unused)

    def _anchor(self, path: Path, line: int, url: str, fragment: str, page: PageInfo,
                where: str, unused: bool) -> None:
        if fragment in page.ids or unquote(fragment) in page.ids:
            return
        if page.why is not None:
            self.report.add(path, line, "ATL017", f"anchor '{cut(url)}' cannot be checked from "
                            f"source: {page.why}")
            return
        self._add(path, line, "ATL011", self.site.levels["anchors"],
                  f"broken anchor '{cut(url)}': {where} has no anchor #{cut(fragment)}",
                  unused, suggestion(fragment, page.ids))

