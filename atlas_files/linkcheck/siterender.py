"""A MkDocs site's pages as its own parser renders them (sitepages.py), each got the
cheapest way there is: kept from an earlier run (rendercache.py), or rendered in child
processes under a deadline (renderpool.py), ahead of time or when asked for.

However a rendering was got, what it says is said when the check asks for that page, and
in the same words: what making the renderer says (an extension that cannot be loaded)
when the first page is rendered, or replayed from the cache when none is; an extension's
error on a page when that page is asked for. A page rendered ahead that the check never
asks for says nothing. A page that took longer than a check gives (renderpool.py) is in
``ran_out`` once asked for, remembered with the renderings and not rendered again while
its text, the setup and the limit stay the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from atlas_files.linkcheck import renderpool
from atlas_files.linkcheck.rendercache import RenderCache, setup_key
from atlas_files.linkcheck.renderpool import Job, Outcome
from atlas_files.linkcheck.siteconfig import SiteConfig
from atlas_files.linkcheck.siteplan import Problem, Rendered, plan

if TYPE_CHECKING:
    from atlas_files.linkcheck.sitepages import Renderer


class Renderings:
    """The renderings of one site's pages; ``text(uri)``: the text the site's parser
    renders for a page (None: it is not rendered)."""

    def __init__(self, site: SiteConfig, problem: Problem,
                 text: Callable[[str], str | None]) -> None:
        self.site = site
        self._problem = problem
        self._text = text
        self._renderer: Renderer | None = None
        self._said: list[tuple[str, str]] = []  # what making the renderer said
        self._setup_said = False
        self._replayed = False
        self._rendered: dict[str, Rendered | None] = {}
        self._ahead: dict[str, Outcome] = {}
        self.ran_out: dict[str, float] = {}  # page: the seconds it took longer than
        setup = setup_key(site, plan(site, lambda key, message: None))
        self.cache = None if setup is None else RenderCache(site, setup)

    def get(self, uri: str, whole: bool = True) -> Rendered | None:
        """The page as the site's parser renders it (or as it rendered it on an earlier
        run); None if it cannot be (then atlas's reader has the last word, and says so
        once). ``whole=False``: for its ids alone (sitepages.py)."""
        if uri in self._rendered and _enough(self._rendered[uri], whole, failed=True):
            return self._rendered[uri]
        text = self._text(uri)
        out = None
        if text is not None:
            out = self.cache.get(uri, text) if self.cache is not None else None
            if _enough(out, whole):
                self._said_by_renderer()
            elif self._ran_out_before(uri, text):
                self._said_by_renderer()
            else:
                out = self._render(uri, text, whole)
        self._rendered[uri] = out
        return out

    def known(self, uri: str) -> Rendered | None:
        """The page's ids, if this run has them without rendering (asked for already,
        rendered ahead, or cached); nothing is said."""
        if uri in self._rendered:
            return self._rendered[uri]
        if uri in self._ahead:
            return self._ahead[uri].rendered
        text = self._text(uri)
        return None if self.cache is None or text is None else self.cache.get(uri, text)

    def to_render(self, uri: str, whole: bool) -> str | None:
        """The page's text if it would be rendered when asked for (not had yet, nor
        cached, nor too large)."""
        for had in (self._rendered, self._ahead):
            if uri in had:
                found = had[uri]
                if _enough(found if isinstance(found, Rendered | None) else found.rendered,
                           whole, failed=True):
                    return None
        text = self._text(uri)
        if text is None or (self.cache is not None
                            and _enough(self.cache.get(uri, text), whole)) \
                or self._ran_out_before(uri, text):
            return None
        return text

    def _ran_out_before(self, uri: str, text: str) -> bool:
        """Whether the page ran out of its time on an earlier run, with a limit no smaller
        than today's (then it is in ``ran_out``, and not rendered again)."""
        if uri in self.ran_out:
            return True
        seconds = None if self.cache is None else self.cache.ran_out(self.cache.key(uri, text))
        if seconds is None:
            return False
        self.ran_out[uri] = seconds
        return True

    def ahead(self, texts: Mapping[str, Job]) -> None:
        """Render ``texts`` (uri: text, whole) now, in child processes (several where that
        pays); each outcome waits until its page is asked for."""
        if texts:
            self._ahead.update(renderpool.render_all(self._made_renderer(), texts))

    def _said_by_renderer(self) -> None:
        """What making the renderer says (an extension that cannot be loaded), said as if
        it had been made: a run that finds its renderings in the cache says the same."""
        if not self._setup_said and self.cache is not None and not self._replayed:
            self._replayed = True
            for key, message in self.cache.problems or []:
                self._problem(key, message)

    def _made_renderer(self) -> Renderer:
        if self._renderer is None:
            # Python-Markdown and the site's extensions take a tenth of a second or more
            # to import and set up: a run whose renderings are all in the cache skips it.
            from atlas_files.linkcheck.sitepages import Renderer  # noqa: PLC0415 - see above

            self._renderer = Renderer(self.site, lambda key, message: self._said.append(
                (key, message)))
        return self._renderer

    def _render(self, uri: str, text: str, whole: bool) -> Rendered | None:
        renderer = self._made_renderer()  # made already if the page was rendered ahead
        outcome = self._ahead.pop(uri, None)
        if outcome is None or not _answers(outcome, whole):
            outcome = renderpool.render_one(renderer, text, whole)
        if not self._setup_said:  # said when the first page is rendered, as always
            self._setup_said = True
            for key, message in self._said:
                self._problem(key, message)
            if self.cache is not None:
                self.cache.problems = self._said
        if outcome.ran_out is not None:
            self.ran_out[uri] = outcome.ran_out.seconds
            if self.cache is not None and outcome.ran_out.certain:
                self.cache.put_ran_out(self.cache.key(uri, text), outcome.ran_out.seconds)
            return None
        if outcome.error is not None:
            self._problem(f"render:{uri}", f"{uri} cannot be rendered with the site's "
                          f"extensions ({outcome.error}); atlas's own reader judged its "
                          "links"[:400])
            return None
        if self.cache is not None and outcome.rendered is not None:
            self.cache.put(uri, text, outcome.rendered, outcome.snippets,
                           renderer.snippet_bases)
        return outcome.rendered

    def finish(self) -> None:
        """Keep this run's renderings for the next (rendercache.py)."""
        if self.cache is not None:
            self.cache.save()


def _answers(outcome: Outcome | None, whole: bool) -> bool:
    """Whether ``outcome`` is the page's answer: an error, or a rendering enough."""
    return outcome is not None and (outcome.error is not None
                                    or _enough(outcome.rendered, whole))


def _enough(rendered: Rendered | None, whole: bool, failed: bool = False) -> bool:
    """Whether ``rendered`` answers a request for the page (``whole``: its links too);
    ``failed``: a rendering that failed (None) is an answer, not to be tried again."""
    if rendered is None:
        return failed
    return rendered.whole or not whole
