"""A site's hooks run as MkDocs runs them: only once a person on this clone accepted them
(sitecode.py, `atlas check accept`), or for one run with ``--run-site-hooks``; never
because mkdocs.yml says so.

MkDocs imports each file of ``hooks:`` as a module and calls its event functions as if it
were a plugin. So does this module, with MkDocs' own machinery: a configuration made from
mkdocs.yml (as atlas read it: no tag constructed, no plugin loaded, the Markdown
extensions by name), the hooks loaded and registered by MkDocs' own ``hooks`` option, then
the events that come before MkDocs validates links: ``on_config``, ``on_files`` (the
site's files become what the hooks leave), and for each page ``on_pre_page``,
``on_page_read_source`` and ``on_page_markdown``, whose Markdown is then judged as the
site's. Plugins are not run (those atlas models are modelled, siteplugins.py); nor is
anything after the validation.

None of it runs in atlas's own process: the hooks are set up and run in children
(renderpool.run_children) with their memory capped, each page (and the set-up) under the
deadline every page a check renders has, and the pages under the batch budget the macros
plugin's have. What a hook raises, or a deadline or the cap it runs past, is said once;
the pages it left without an answer are then judged as written, their anchors as what
the build alone can see (ATL017), never as errors: what the hook would have made is not
known.

What the hooks gave is kept between runs with the renderings (rendercache.py), so that a
warm check neither imports MkDocs nor runs a hook for what did not change: the site's
files as the hooks leave them, and each page's Markdown, keyed by the page's text (as
the macros plugin left it), the digests of the accepted code, the configuration the
hooks get, the installed MkDocs and theme, and atlas's and Python's versions. Each answer
holds only while every file of the repository the hooks read, every folder they listed
and every environment variable they read, in their set-up and on that page, is as it
was (codereads.py); one made by a hook that started a program or opened a connection is
not kept, nor is one that raised or ran out.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from atlas_files import __version__
from atlas_files.facts import renderlimit
from atlas_files.linkcheck import codereads, rendercache, renderpool
from atlas_files.linkcheck.siteconfig import SiteConfig
from atlas_files.linkcheck.sitemacros import cap_memory, plain_data
from atlas_files.linkcheck.siteplan import Problem
from atlas_files.linkcheck.siteplugins import Cause

FILES = "\0files"  # the key of the set-up's answer: no page has it
_RUN_PAGES = 6  # as sitemacros: no page is started past this many pages' time


class SiteHooks:
    """One site's hooks, run in children (see the module's docstring)."""

    def __init__(self, site: SiteConfig, problem: Problem,
                 pages: Callable[[], Mapping[str, tuple[str, str]]],
                 code: Mapping[str, str]) -> None:
        self.site = site
        self._problem = problem
        self._pages = pages
        self._done: dict[str, tuple[str | None, str | None]] = {}
        self._uris: set[str] | None = None
        self._batched = False
        self.cause = Cause("hooks:ran", "the site's hooks did not give this page back (see "
                           "the note on mkdocs.yml)", site.line_of("hooks"))
        self._kept = HookCache(site, _setup(site, code)) \
            if rendercache.folder() is not None else None
        kept = self._kept.get_answer(FILES) if self._kept is not None else None
        answer = kept or self._run([[FILES]], {}).get(FILES)
        if isinstance(answer, tuple) and answer[:1] == ("files",):
            self._uris = set(answer[1])
            self._keep(FILES, answer)
        else:
            self._said(answer, "setting them up")
        self.ready = self._uris is not None

    def _said(self, answer: Any, doing: str) -> None:
        """Say once why the hooks gave no answer while ``doing``."""
        seconds = renderlimit.check_seconds()
        if isinstance(answer, renderpool.RanOut):
            self._problem("hooks:ran-out", f"the site's hooks took longer than "
                          f"{answer.seconds:g} s {doing}: the pages they did not finish are "
                          "judged as written, their anchors as the build alone can see")
        elif isinstance(answer, tuple) and answer[:1] == ("raised",):
            self._problem(f"hooks:raised:{answer[1].split(':')[0]}",
                          f"a site's hook raised {answer[1]} {doing}"[:300] + " (a build "
                          "stops there): such pages' anchors are the build's to judge")
        else:
            self._problem("hooks:none", f"the site's hooks gave no answer {doing} (they ran "
                          f"out of memory, or past the {seconds * _RUN_PAGES:g} s a check "
                          "gives them): pages are judged as written, their anchors as the "
                          "build alone can see")

    def _run(self, shares: list[list[str]], texts: Mapping[str, tuple[str, str]],
             ) -> dict[str, Any]:
        # MkDocs is atlas's own dependency: imported here, once, for every child.
        import mkdocs.config.defaults  # noqa: PLC0415 - see above
        import mkdocs.structure.pages  # noqa: F401, PLC0415 - idem

        made: list[_Loaded] = []

        def work(key: str) -> tuple[Any, ...]:  # pragma: no cover - the child
            if not made:
                codereads.recorder().start(self.site.repository, self.site.readable)
                made.append(_Loaded(self.site))
            return made[0].answer(key, texts)

        seconds = renderlimit.check_seconds()
        return renderpool.run_children(work, shares, seconds, total=seconds * _RUN_PAGES,
                                       setup=cap_memory)

    def uris(self) -> set[str] | None:
        """The site's files as the hooks leave them (None: they were not set up)."""
        return self._uris

    def markdown(self, uri: str, text: str, body: str) -> tuple[str | None, Cause | None]:
        """Page ``uri``'s Markdown after the hooks' page events (None: unchanged), and
        why its anchors cannot be checked where the hooks gave it no answer."""
        if not self.ready:
            return None, None
        if uri not in self._done and not self._from_cache(uri, text, body):
            if not self._batched:  # the first page not kept: every such page in one go
                self._batched = True
                self._batch({**self._pages(), uri: (text, body)})
            if uri not in self._done:
                self._batch({uri: (text, body)})
        out, why = self._done.get(uri, (None, "none"))
        return out, (self.cause if why is not None else None)

    def _from_cache(self, uri: str, text: str, body: str) -> bool:
        """Whether the page's answer was kept and still holds (then it is done)."""
        kept = None if self._kept is None else self._kept.get_answer(_page_key(uri, text,
                                                                               body))
        if kept is not None and kept[:1] == ("page",):
            self._done[uri] = (kept[1], None)
            return True
        return False

    def _keep(self, key: str, answer: tuple[Any, ...]) -> None:
        if self._kept is not None and len(answer) > 2 and answer[2] is not None:
            self._kept.put_answer(key, answer[:2], answer[2])

    def _batch(self, texts: Mapping[str, tuple[str, str]]) -> None:
        texts = {uri: job for uri, job in texts.items()
                 if uri not in self._done and not self._from_cache(uri, *job)}
        if not texts:
            return
        keys = sorted(texts, key=lambda u: len(texts[u][1]), reverse=True)
        count = max(1, min(renderpool.cpus(), len(keys)))
        answers = self._run([keys[i::count] for i in range(count)], texts)
        for uri in keys:
            answer = answers.get(uri)
            if isinstance(answer, tuple) and answer[:1] == ("page",):
                self._done[uri] = (answer[1], None)
                self._keep(_page_key(uri, *texts[uri]), answer)
                continue
            self._said(answer, f"on {uri}")
            self._done[uri] = (None, "no answer")
        if self._kept is not None:
            self._kept.save()


def _page_key(uri: str, text: str, body: str) -> str:
    return hashlib.sha256(f"{uri}\0{text}\0{body}".encode("utf-8", "surrogatepass")
                          ).hexdigest()


def _setup(site: SiteConfig, code: Mapping[str, str]) -> str:
    """What every answer of the site's hooks depends on besides the page and the files
    they read, hashed (see the module's docstring)."""
    theme = site.data.get("theme")
    name = theme.get("name") if isinstance(theme, dict) else theme
    described = json.dumps({
        "format": 1, "atlas": __version__, "python": sys.version,
        "root": str(site.root), "docs": str(site.docs_dir), "config": plain_data(site.data),
        "extensions": [[n, plain_data(c)] for n, c in site.extensions],
        "hooks": [str(h) for h in site.hooks], "code": dict(code),
        "packages": [rendercache.package(p) for p in
                     ("mkdocs", name if isinstance(name, str) else "mkdocs")],
        "modules": [rendercache.stamp(__file__), rendercache.stamp(codereads.__file__)],
    }, sort_keys=True, default=str)
    return "h" + hashlib.sha256(described.encode()).hexdigest()


class HookCache(rendercache.RenderCache):
    """What one site's hooks gave, kept with its renderings (see the module's
    docstring): the same file handling, other entries."""

    def __init__(self, site: SiteConfig, setup: str) -> None:
        super().__init__(site, setup)
        if self.problems is None:
            self.problems = []  # the hooks have no renderer whose problems are kept

    def get_answer(self, key: str) -> tuple[Any, ...] | None:
        """The answer kept for ``key`` (the set-up's, or a page's) if it still holds."""
        entry = self._pages.get(key)
        if entry is None:
            return None
        try:
            answer = entry["answer"]
            holds = self._holds(entry)
            ok = isinstance(answer, list) and len(answer) == 2 and answer[0] in (
                "files", "page") and (isinstance(answer[1], str | None) if answer[0] == "page"
                                      else all(isinstance(u, str) for u in answer[1]))
        except (KeyError, TypeError, ValueError):
            return None
        if not (ok and holds):
            return None
        self._used.add(key)
        return tuple(answer)

    def put_answer(self, key: str, answer: tuple[Any, ...], reads: Any) -> None:
        """Keep ``answer`` with what the hooks read to give it (codereads.py)."""
        if not isinstance(reads, list):
            return
        self._pages[key] = {"answer": list(answer), "reads": reads, "missing": [],
                            "included": []}
        self._used.add(key)
        self._dirty = True


class _Loaded:  # pragma: no cover - the child
    """The hooks loaded and set up in a child; each page's answer from there."""

    def __init__(self, site: SiteConfig) -> None:
        self.site = site
        self.error: str | None = None
        try:
            # `mkdocs build` runs in the site's folder, and hooks read files relative to it.
            os.chdir(site.root)
            self._set_up()
        except Exception as exc:  # noqa: BLE001 - the hooks are the repository's code
            self.error = f"{type(exc).__name__}: {exc}"
        self.mark = codereads.recorder().mark()

    def answer(self, key: str, texts: Mapping[str, tuple[str, str]]) -> tuple[Any, ...]:
        """The answer for ``key``, with what the hooks read to give it (None: nothing
        to keep it by; codereads.py)."""
        if self.error is not None:
            return ("raised", self.error[:200])
        if key == FILES:
            return ("files", sorted(f.src_uri for f in self.files),
                    codereads.recorder().since(self.mark))
        text, body = texts[key]
        try:
            out = self.markdown(key, text, body)
        except Exception as exc:  # noqa: BLE001 - the repository's code
            codereads.recorder().since(self.mark)
            return ("raised", f"{type(exc).__name__}: {exc}"[:200])
        return ("page", out, codereads.recorder().since(self.mark))

    def _set_up(self) -> None:
        from mkdocs.config.defaults import MkDocsConfig  # noqa: PLC0415 - in the child only
        from mkdocs.structure.files import get_files  # noqa: PLC0415 - idem

        data = plain_data({k: v for k, v in self.site.data.items()
                           if k not in ("plugins", "hooks", "markdown_extensions")})
        data["markdown_extensions"] = [name for name, _ in self.site.extensions]
        data["hooks"] = [os.path.relpath(h, self.site.root) for h in self.site.hooks]
        data["plugins"] = []
        for _ in range(2):
            config = MkDocsConfig(config_file_path=str(self.site.path))
            config.load_dict(data)
            errors, _ = config.validate()
            if not any(key == "theme" for key, _ in errors) or "theme" not in data:
                break
            # A theme not installed here: the hooks without it (one that renders the
            # theme's templates says so when it raises).
            del data["theme"]
        if errors:
            key, error = errors[0]
            raise ValueError(f"{key}: {error}")
        self.config = config.plugins.on_config(config)
        files = get_files(self.config)
        self.files = self.config.plugins.on_files(files, config=self.config)

    def markdown(self, uri: str, text: str, body: str) -> str | None:
        from mkdocs.structure.pages import Page  # noqa: PLC0415 - idem

        file = self.files.get_file_from_path(uri)
        if file is None:
            return None
        plugins = self.config.plugins
        page = file.page or Page(None, file, self.config)
        page = plugins.on_pre_page(page, config=self.config, files=self.files) or page
        source = plugins.on_page_read_source(page=page, config=self.config)
        page.markdown, page.meta = body, {}
        if isinstance(source, str) and source != text:
            from mkdocs.utils import meta  # noqa: PLC0415 - idem

            page.markdown, page.meta = meta.get_data(source)
        out = plugins.on_page_markdown(page.markdown, page=page, config=self.config,
                                       files=self.files)
        return out if isinstance(out, str) else None
