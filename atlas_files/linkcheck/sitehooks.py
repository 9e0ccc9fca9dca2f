"""A site's hooks run as MkDocs runs them: only with ``--run-site-hooks``, which the user
gives (never mkdocs.yml), for a repository whose hooks they trust.

MkDocs imports each file of ``hooks:`` as a module and calls its event functions as if it
were a plugin. So does this module, with MkDocs' own machinery: a configuration made from
mkdocs.yml (as atlas read it: no tag constructed, no plugin loaded, the Markdown
extensions by name), the hooks loaded and registered by MkDocs' own ``hooks`` option, then
the events that come before MkDocs validates links: ``on_config``, ``on_files`` (the
site's files become what the hooks leave), and for each page ``on_pre_page``,
``on_page_read_source`` and ``on_page_markdown``, whose Markdown is then judged as the
site's. Plugins are not run (those atlas models are modelled, siteplugins.py); nor is
anything after the validation.

What a hook raises is said once, and the pages are then judged without it.
"""

from __future__ import annotations

import os
from typing import Any

from atlas_files.linkcheck.siteconfig import SiteConfig
from atlas_files.linkcheck.sitemacros import plain_data
from atlas_files.linkcheck.siteplan import Problem


class SiteHooks:
    """One site's hooks, loaded and set up (see the module's docstring)."""

    def __init__(self, site: SiteConfig, problem: Problem) -> None:
        self.site = site
        self._problem = problem
        self.config: Any = None
        self.files: Any = None
        self.ready = False
        try:
            self._set_up()
        except Exception as exc:  # noqa: BLE001 - the hooks are the repository's code
            problem("hooks:setup", f"the site's hooks could not be set up as MkDocs sets them "
                    f"up ({type(exc).__name__}: {exc})"[:300] + "; pages are judged without "
                    "them")

    def _set_up(self) -> None:
        # MkDocs is atlas's own dependency: imported only when a user asks for this.
        from mkdocs.config.defaults import MkDocsConfig  # noqa: PLC0415
        from mkdocs.structure.files import get_files  # noqa: PLC0415

        data = plain_data({k: v for k, v in self.site.data.items()
                           if k not in ("plugins", "hooks", "markdown_extensions", "theme")})
        data["markdown_extensions"] = [name for name, _ in self.site.extensions]
        data["hooks"] = [os.path.relpath(h, self.site.root) for h in self.site.hooks]
        data["plugins"] = []
        config = MkDocsConfig(config_file_path=str(self.site.path))
        config.load_dict(data)
        errors, _ = config.validate()
        if errors:
            key, error = errors[0]
            raise ValueError(f"{key}: {error}")
        self.config = config.plugins.on_config(config)
        files = get_files(self.config)
        self.files = self.config.plugins.on_files(files, config=self.config)
        self.ready = True

    def uris(self) -> set[str] | None:
        """The site's files as the hooks leave them (None: not set up)."""
        if not self.ready:
            return None
        return {f.src_uri for f in self.files}

    def markdown(self, uri: str, text: str, body: str) -> str | None:
        """Page ``uri``'s Markdown after the hooks' page events (None: unchanged, or a
        hook failed on it, which is said once)."""
        if not self.ready:
            return None
        from mkdocs.structure.pages import Page  # noqa: PLC0415 - see _set_up

        file = self.files.get_file_from_path(uri)
        if file is None:
            return None
        plugins = self.config.plugins
        try:
            page = file.page or Page(None, file, self.config)
            page = plugins.on_pre_page(page, config=self.config, files=self.files) or page
            source = plugins.on_page_read_source(page=page, config=self.config)
            page.markdown, page.meta = body, {}
            if isinstance(source, str) and source != text:
                from mkdocs.utils import meta  # noqa: PLC0415

                page.markdown, page.meta = meta.get_data(source)
            out = plugins.on_page_markdown(page.markdown, page=page, config=self.config,
                                           files=self.files)
        except Exception as exc:  # noqa: BLE001 - the repository's code
            self._problem(f"hooks:page:{type(exc).__name__}", f"a site's hook raised "
                          f"{type(exc).__name__} on {uri} ({exc})"[:300] + "; such pages are "
                          "judged as written")
            return None
        return out if isinstance(out, str) else None
