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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from importlib import util
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote, urlsplit

from atlas_files.facts import renderlimit
from atlas_files.facts.errors import AtlasError
from atlas_files.linkcheck import anchors, markdown, sitecode
from atlas_files.linkcheck.boundary import Boundary
from atlas_files.linkcheck.filesources import Source, read_page
from atlas_files.linkcheck.findings import WARNING, Report
from atlas_files.linkcheck.links import PAGE_SUFFIXES, Anchors, LinkChecker, cut, suggestion
from atlas_files.linkcheck.sitecode import macros_module
from atlas_files.linkcheck.siteconfig import (
    NOT_NEEDED,
    SiteConfig,
    Unresolved,
    resolve_relative,
    safe_load,
)
from atlas_files.linkcheck.sitemacros import Macros, plain_data
from atlas_files.linkcheck.siteplan import (
    BUILTIN,
    DIRECTIVE_MAKERS,
    Rendered,
    refusal,
    unresolved_message,
)
from atlas_files.linkcheck.siteplugins import (
    PAGE_SYNTAX,
    Cause,
    Plugins,
    changes_what_is_judged,
)
from atlas_files.linkcheck.siterender import Renderings
from atlas_files.linkcheck.sitetheme import Theme, theme

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
    why: Cause | None  # why some of its anchors cannot be seen from source


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
    cause: Cause | None = None  # for ATL017: why it cannot be checked from source


@dataclass
class _Unverified:
    """The links one cause leaves unchecked: said once, with their number."""

    cause: Cause
    first: tuple[Path, int, str]  # page, line, the link as written
    count: int = 0
    pages: set[Path] = field(default_factory=set)


class SiteLinks:
    def __init__(self, site: SiteConfig, report: Report, source: Source,
                 fast: LinkChecker, run_hooks: bool = False) -> None:
        self.site = site
        self.report = report
        self.source = source
        self.fast = fast
        self._files: set[str] | None = None
        self._pages: dict[str, Page | None] = {}
        self._anchors: dict[str, Anchors] = {}
        self._wheres: dict[tuple[str, str], Where | None] = {}
        self._said: set[str] = set()
        self._unverified: dict[str, _Unverified] = {}
        self._unchecked: set[str] = set()  # pages that took longer than a check gives
        self.renderings = Renderings(site, self._problem, self._text)
        # The user's word (an acceptance of theirs, or --run-site-hooks), never mkdocs.yml's.
        code = self._accepted_code(run_hooks)
        self.hooks = None
        if code is not None and any(changes_what_is_judged(site, h) for h in site.hooks):
            from atlas_files.linkcheck.sitehooks import SiteHooks  # noqa: PLC0415 - imports MkDocs

            self.hooks = SiteHooks(site, self._problem, self._hook_pages, code)
        self.plugins = Plugins(site, self._problem, self.hooks is not None and self.hooks.ready)
        self.macros = Macros(site, code) if "macros" in site.plugins else None
        self._macros_batched = False
        self._macro_uris: set[str] = set()
        self._missing_extensions()
        # Its own reader, with the site's toc (the ids it proposes are the site's).
        self.reader = LinkChecker(report, source, toc=self._toc())

    def contains(self, path: Path) -> bool:
        return path.is_relative_to(self.site.docs_dir)

    def _accepted_code(self, run_hooks: bool) -> dict[str, str] | None:
        """The site's own code that this check runs (path: digest), None for none: all of
        it where ``run_hooks``, else what this clone accepted while it is unchanged
        (sitecode.py); a change since is said once."""
        if not self.site.hooks and macros_module(self.site) is None:
            return None
        try:
            code = sitecode.standing(self.site)
        except AtlasError as exc:
            self._problem("code:accepted", f"{exc}; the site's own code is not run", 1)
            return {} if run_hooks else None
        if run_hooks or code.runs:
            return {f.rel: f.digest or "" for f in code.files}
        if code.changed:
            self._problem("code:changed", code.sentence(),
                          self.site.line_of(code.changed[0].rel.rsplit("/", 1)[-1]))
        return None

    def _hook_pages(self) -> dict[str, tuple[str, str]]:
        """Every page of the site, as the hooks get it (the macros plugin's expansion
        first, as MkDocs runs plugins before hooks): run through them in one go."""
        out: dict[str, tuple[str, str]] = {}
        for uri in sorted(self.files):
            if not uri.lower().endswith(PAGE_SUFFIXES) or self.plugins.excluded(uri):
                continue
            path = self.site.docs_dir / uri
            try:
                text = read_page(self.source, path).decode("utf-8", "replace")
            except OSError:
                continue
            body, first = markdown.split_front_matter(text)
            expanded, _ = self._macros(path, text, body, first)
            out[uri] = (text, body if expanded is None else expanded)
        return out

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

    @property
    def files(self) -> set[str]:
        """The site's files, as MkDocs' link validation knows them: those of docs_dir, less
        what a plugin takes out, and a README.md beside an index.md (MkDocs keeps one)."""
        if self._files is None:
            found: set[str] = set()
            made = self.hooks.uris() if self.hooks is not None else None
            if made is not None:  # as the site's hooks leave them
                self._files = {u for u in made if not self.plugins.removed(u)}
                return self._files
            for folder, _, names in os.walk(self.site.docs_dir):
                rel = Path(folder).relative_to(self.site.docs_dir).as_posix()
                prefix = "" if rel == "." else rel + "/"
                if "index.md" in names and "README.md" in names \
                        and not self.plugins.excluded(prefix + "index.md"):
                    names = [n for n in names if n != "README.md"]
                found.update(prefix + n for n in names
                             if not self.plugins.removed(prefix + n))
            self._files = found
        return self._files

    def built(self, path: Path) -> bool:
        """Whether MkDocs builds the page at ``path`` (and so judges its links)."""
        uri = path.relative_to(self.site.docs_dir).as_posix()
        return uri in self.files and not self.plugins.excluded(uri)

    def page(self, uri: str) -> Page | None:
        if uri not in self._pages:
            self._pages[uri] = self._read(self.site.docs_dir / uri)
        return self._pages[uri]

    def _read(self, path: Path) -> Page | None:
        try:
            text = read_page(self.source, path).decode("utf-8", "replace")
        except OSError:
            return None
        body, first = markdown.split_front_matter(text)
        expanded, unexpanded = self._macros(path, text, body, first)
        body = body if expanded is None else expanded
        unhooked = None
        if self.hooks is not None:
            hooked, unhooked = self.hooks.markdown(
                path.relative_to(self.site.docs_dir).as_posix(), text, body)
            body = body if hooked is None else hooked
        read = markdown.read(body, first)
        changer = self.plugins.page_changers[0] if self.plugins.page_changers else None
        why = changer or unexpanded or unhooked or self._made_at_build(path, read, body)
        return Page(path, body, first, read, why)

    def _macros(self, path: Path, text: str, body: str, first: int,
                ) -> tuple[str | None, Cause | None]:
        """The page's body as the macros plugin expands it (None: not expanded), and why
        its anchors cannot be checked if that cannot be done here (sitemacros.py)."""
        if self.macros is None or not self.macros.uses(body):
            return None, None
        front = _front_matter(text, first)
        if not self.macros.renders(front):
            return None, None
        if not self._macros_batched:
            self._macros_batched = True
            self.macros.expand(self._macro_pages())
        uri = path.relative_to(self.site.docs_dir).as_posix()
        if uri not in self._macro_uris:
            self.macros.expand({uri: (body, front)})
        done, why = self.macros.result(uri)
        if uri in self.macros.ran_out:
            self._cannot(uri, f"expanding its macros took longer than "
                         f"{self.macros.ran_out[uri]:g} s")
            return None, None
        if done is not None:
            return done, None
        return None, Cause("plugin:macros", "the macros plugin expands pages with what atlas "
                           f"check does not run (for one, {path.name}: {why})",
                           self.site.line_of("macros"))

    def _macro_pages(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Every page of the site the macros plugin renders: expanded in one go."""
        assert self.macros is not None
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        for uri in sorted(self.files):
            if not uri.lower().endswith(PAGE_SUFFIXES) or self.plugins.excluded(uri):
                continue
            try:
                text = read_page(self.source, self.site.docs_dir / uri).decode("utf-8",
                                                                              "replace")
            except OSError:
                continue
            body, first = markdown.split_front_matter(text)
            if self.macros.uses(body):
                front = _front_matter(text, first)
                if self.macros.renders(front):
                    out[uri] = (body, front)
        self._macro_uris = set(out)
        return out

    def reader_anchors(self, uri: str, page: Page) -> Anchors:
        """The ids atlas's reader finds on the page (snippets followed where it can): only
        asked for where the site's parser cannot render it."""
        if uri not in self._anchors:
            self._anchors[uri] = self.reader.anchors_of(page.path, page.read)
        return self._anchors[uri]

    def rendered(self, uri: str, whole: bool = True) -> Rendered | None:
        """The page as the site's parser renders it (siterender.py); ``whole=False``: for
        its ids alone. None for a page that took too long, which is said once."""
        out = self.renderings.get(uri, whole)
        if out is None and uri in self.renderings.ran_out:
            self._cannot(uri, f"rendering took longer than {self.renderings.ran_out[uri]:g} s")
        return out

    def _cannot(self, uri: str, why: str) -> None:
        """Say once that page ``uri`` cannot be checked, and why: neither its own links nor
        the anchors that point into it are judged."""
        if uri not in self._unchecked:
            self._unchecked.add(uri)
            self.report.add(self.site.docs_dir / uri, 1, "ATL017", f"this page cannot be "
                            f"checked: {why} (its links, and anchors into it, are not "
                            "judged)", "check it with `mkdocs build`, or give pages more "
                            f"time: {renderlimit.CHECK_ENV}=SECONDS")

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
        """Say what could not be checked, once per cause; keep this run's renderings for
        the next (rendercache.py)."""
        self.renderings.finish()
        for unverified in self._unverified.values():
            cause, (path, line, written) = unverified.cause, unverified.first
            if unverified.count == 1:
                self.report.add(path, line, "ATL017", f"link '{cut(written)}' cannot be "
                                f"checked from source: {cause.text}")
                continue
            pages = len(unverified.pages)
            at = (self.site.path, cause.line) if cause.line else (path, line)
            self.report.add(*at, "ATL017", f"{unverified.count} links on {pages} "
                            f"page{'' if pages == 1 else 's'} cannot be checked from source: "
                            f"{cause.text} (the first: {self.report.show(path)}:{line} "
                            f"'{cut(written)}')")

    def _unverify(self, cause: Cause, path: Path, link: markdown.Link) -> None:
        """Note that ``cause`` leaves ``link`` unchecked (said in ``finish``)."""
        unverified = self._unverified.setdefault(
            cause.key, _Unverified(cause, (path, link.line, link.target)))
        unverified.count += 1
        unverified.pages.add(path)

    def _made_at_build(self, path: Path, page: markdown.Page, body: str) -> Cause | None:
        """Why the build changes this page's anchors (None: it does not), if it does."""
        names = dict(self.site.extensions)
        makers = sorted(n for n in DIRECTIVE_MAKERS if n in self.site.plugins or n in names)
        here = str(path)
        if page.directives and makers:
            line, what = page.directives[0]
            return Cause(f"directive:{makers[0]}", f"`::: ...` directives (here `::: "
                         f"{cut(what)}`, line {line}) are expanded by {makers[0]} as the "
                         "site is built", self.site.line_of(makers[0]))
        for plugin, syntax in PAGE_SYNTAX.items():
            if plugin in self.site.plugins and syntax in body:
                return Cause(f"plugin:{plugin}", f"the plugin {plugin} changes the pages "
                             f"that use {syntax} as the site is built",
                             self.site.line_of(plugin))
        for line, name in page.snippets:
            beyond = self._snippet_beyond(name)
            if beyond is not None:
                return Cause(f"snippet:{here}:{name}", f"it includes the snippet "
                             f"{cut(name)!r} (line {line}), {beyond}")
        if page.snippets and ("pymdownx.snippets" not in names
                              or "pymdownx.snippets" in self._said):
            line, name = page.snippets[0]
            return Cause(f"snippet:{here}:{name}", f"it includes the snippet {cut(name)!r} "
                         f"(line {line}), and the site's snippets extension is not loaded "
                         "here")
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
        if not self.built(path) and os.path.lexists(path):
            return  # not a page of the built site (excluded): MkDocs judges none of it
        page = self.page(uri)
        if page is None:
            self.fast.check_file(path)
            return
        if uri in self._unchecked:
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
        for suspect in suspects[_MAX_FOUND:] if uri not in self._unchecked else ():
            self._report(path, suspect, suspect.link.used)

    def _makes_links(self, page: Page) -> bool:
        """Whether the site's parser may make links the page's source does not show that
        could be broken: those of the snippets it includes (a partial is judged where it is
        included), a footnote's way back (to a reference that may not exist), and a
        heading's permalink where the heading sets its own id with more than letters,
        digits and ``_.:-`` in it (an escape, a ``%``: the link is ``#`` and the id as
        written, which such a character may make another)."""
        return bool(page.read.snippets) or any(
            label.startswith("fn:") for label in page.read.ids) or any(
            "{" in raw and "#" in raw and not all(
                _PLAIN_ID.fullmatch(ident) for ident in _SET_ID.findall(raw[raw.rfind("{"):]))
            for _, raw in page.read.headings)

    def _made_links(self, uri: str, page: Page) -> list[Suspect]:
        rendered = self.rendered(uri)
        if rendered is None:
            return []
        written = {link.target for link in page.read.links}
        out = []
        included = page.read.snippets[0][0] if page.read.snippets else None
        for url in dict.fromkeys(rendered.links):
            if url in written or not (url.startswith("#") or included is not None):
                continue
            at = page.body.find(url[1:] if url.startswith("#") else url)
            # A link a snippet brought in is reported on the line that includes it.
            line = page.first + page.body.count("\n", 0, at) if at >= 0 \
                else included or page.first
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
        elif uri in self._unchecked:
            return
        if suspect.target is not None:
            target = self.rendered(suspect.target, whole=False)
            if target is None and suspect.target in self._unchecked:
                return
            if target is not None and (suspect.fragment in target.ids
                                       or unquote(suspect.fragment) in target.ids):
                return
        self._report(path, suspect, used)

    def _report(self, path: Path, suspect: Suspect, used: bool) -> None:
        if suspect.level is None:
            return
        if suspect.cause is not None:
            # Used or not, a link the build may change is one more of its cause's count:
            # said once per site, never a warning of its own.
            self._unverify(suspect.cause, path, suspect.link)
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
            if target in self._theme.files:
                return None  # a theme's file is a file of the site (sitetheme.py)
            return Where("missing", target, parts.path, "")
        if self.plugins.excluded(target) and not self.plugins.excluded(uri):
            return Where("excluded", target, parts.path, "")
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
            return self._missing(uri, link, where.written, where.target)
        if where.kind == "excluded":  # MkDocs says so at its INFO level, at most
            level = self.site.levels["not_found"] and WARNING
            return Suspect(link, "ATL010", level, f"link '{cut(link.target)}': "
                           f"{cut(where.target)} is excluded from the built site")
        if not where.written:
            return self._anchor(link, where.fragment, uri, page, "this page")
        if self.plugins.excluded(where.target):
            return None  # not built: MkDocs has no ids of it to judge the anchor by
        found = self.page(where.target)
        if found is None or where.target in self._unchecked:
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

    @cached_property
    def _theme(self) -> Theme:
        """The files the site's theme adds (read when a link's file is not in docs_dir)."""
        return theme(self.site)

    def _missing(self, uri: str, link: markdown.Link, written: str,
                 target: str) -> Suspect | None:
        levels = self.site.levels
        url = link.target
        maker = self.plugins.made(target)
        if maker is None and self._theme.unknown is not None and self._theme.may_provide(target):
            maker = Cause("theme", self._theme.unknown, self.site.line_of("theme"))
        if maker is not None:
            return Suspect(link, "ATL017", WARNING, f"link '{cut(url)}' cannot be checked from "
                           f"source: {cut(target)} is not among the documentation files, and "
                           f"{maker.text}", cause=maker)
        guess = self._guess(uri, url)
        meant = "" if guess is None else f"; did you mean '{cut(guess[0])}'?"
        if guess is not None and not posixpath.splitext(written)[1]:
            said = f"link '{cut(url)}' names no file of the site, so MkDocs leaves it as is " \
                   f"and checks neither its page nor its anchor{meant}"
            if guess[1] and self.site.use_directory_urls:
                said += " (it is the address of that page as seen from this one: a browser " \
                        "follows it, but MkDocs checks only links to files)"
            return Suspect(link, "ATL019", levels["unrecognized_links"], said)
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
        return Suspect(link, code, level, f"broken link '{cut(url)}': {cut(target)} {where}"
                       + meant)

    def _guess(self, uri: str, url: str) -> tuple[str, bool] | None:
        """The link MkDocs suggests for ``url`` on page ``uri``, which names no file (as
        MkDocs 1.6 guesses it: relative to the page's file, then to its address; as a
        folder's index.md or README.md, or with .md), and whether it was guessed from
        the page's address; None where it guesses none."""
        parts = urlsplit(url)
        found = next(((guess, by_address) for guess, by_address
                      in _guesses(uri, unquote(parts.path), self.site.use_directory_urls)
                      if guess in self.files), None)
        if found is None:
            return None
        guess, by_address = found
        return (_relative_url(guess, uri) + (f"?{parts.query}" if parts.query else "")
                + (f"#{parts.fragment}" if parts.fragment else "")), by_address

    def _anchor(self, link: markdown.Link, fragment: str, target: str, page: Page,
                where: str) -> Suspect | None:
        # The target's ids as the site renders it (its reader's where it cannot be): a page
        # the reader misjudges (a fence the site's parser refuses) must not hide a break.
        rendered = self.rendered(target, whole=False)
        if rendered is None and target in self._unchecked:
            return None
        ids = rendered.ids if rendered is not None else self.reader_anchors(target, page).ids
        if fragment in ids or unquote(fragment) in ids:
            return None
        if page.why is not None:
            return Suspect(link, "ATL017", WARNING, f"anchor '{cut(link.target)}' cannot be "
                           f"checked from source: {page.why.text}", cause=page.why)
        return Suspect(link, "ATL011", self.site.levels["anchors"],
                       f"broken anchor '{cut(link.target)}': {where} has no anchor "
                       f"#{cut(fragment)}", suggestion(fragment, ids), target, fragment)


def _target_uri(src: str, path: str) -> str:
    """Where ``path`` leads from ``src`` in docs_dir, as MkDocs works it out."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(src), path).lstrip("/"))


def _guesses(uri: str, path: str, directory: bool) -> Iterator[tuple[str, bool]]:
    """The files MkDocs 1.6 guesses link ``path`` on page ``uri`` meant (_possible_target_
    uris, less the first, which names no file), and whether each was guessed from the
    page's address rather than its file."""
    src = _target_uri(uri, path)
    suffixes: list[Callable[[str], str]] = [lambda p: p] if directory else []
    if not posixpath.splitext(src)[1]:
        suffixes += [lambda p: posixpath.join(p, "index.md"),
                     lambda p: posixpath.join(p, "README.md")]
    if not src.endswith(".") and not path.endswith(".md") \
            and (directory or not path.endswith("/")):
        suffixes.append(lambda p: p.removesuffix(".html") + ".md")
    tried = {src}
    for prefix in dict.fromkeys((src, _target_uri(_page_url(uri, directory), path))):
        for suffix in suffixes:
            guess = posixpath.normpath(suffix(prefix))
            if guess not in tried and not guess.startswith("../"):
                tried.add(guess)
                yield guess, prefix != src


def _page_url(uri: str, directory: bool) -> str:
    """The address MkDocs gives page ``uri`` (relative to the site's root)."""
    parent, name = posixpath.split(uri)
    stem = posixpath.splitext(name)[0]
    if stem in ("index", "README"):
        dest = posixpath.join(parent, "index.html")
    else:
        dest = posixpath.join(parent, stem, "index.html") if directory \
            else posixpath.join(parent, stem + ".html")
    folder, file = posixpath.split(dest)
    return (folder or ".") + "/" if directory and file == "index.html" else dest


def _relative_url(url: str, other: str) -> str:
    """``url`` relative to page ``other``, as MkDocs' get_relative_url makes it."""
    head, tail = posixpath.split(other)
    base = head if "." in tail else other
    rel = posixpath.relpath("/" + url, "/" + base)
    return rel + "/" if url.endswith("/") else rel


def _front_matter(text: str, first: int) -> dict[str, Any]:
    """A page's front matter as plain data ({} if it has none, or none that reads)."""
    if first == 1:
        return {}
    try:
        data = plain_data(safe_load("\n".join(text.split("\n")[1:first - 2])))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


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
    if sitecode.COMMAND in message:
        return (f"read what changed (`git diff`), then run `{sitecode.COMMAND}`; until then "
                "what the code makes stays a build check")
    if "site's hook" in message or "macros module" in message:
        return ("the site's own code failed or ran past the limits a check gives it (give "
                f"pages more time: {renderlimit.CHECK_ENV}=SECONDS); `mkdocs build` "
                "checks what it makes")
    return ("atlas check never runs it: what it makes stays a build check (`mkdocs build "
            "--strict` with validation set)")


def _findable(module: str) -> bool:
    try:
        return util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
