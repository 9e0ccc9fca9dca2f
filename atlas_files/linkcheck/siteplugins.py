"""What a MkDocs site's plugins and hooks do to what MkDocs' link validation sees, modelled
from each plugin's own documentation and source, without running any of them.

MkDocs validates links and anchors while it renders each page's Markdown, after the
``on_files``, ``on_nav`` and ``on_page_markdown`` events and before ``on_page_content``,
``on_post_page`` and the rest. So a plugin or hook can change a verdict only through
those early events: by adding or removing files (``on_files``, ``on_pre_build``), or by
changing a page's Markdown (``on_page_markdown``, ``on_page_read_source``,
``on_pre_page``; ``on_config`` may change the Markdown setup itself). What it does after
is invisible to the validation, and so to this check.

- **Known plugins** are modelled by what they really add. Most add nothing the
  validation sees (search, social, git dates, minify, rss, redirects, whose stubs are
  HTML written after the build...). The blog plugin (Material's) makes archive, category,
  author and pagination pages of known names under its blog folder (its posts are files
  of the site like any other). The exclude plugin (mkdocs-exclude) takes files out of the
  site by glob and regex: a link to one is broken, and the file is no page. mkdocstrings
  and mkdocs-click expand ``::: directives``; autorefs' Markdown is rendered by
  sitepages.py, the macros plugin's by sitemacros.py.
- MkDocs' own ``exclude_docs`` and ``draft_docs`` (and files and folders starting with
  ``.``, and ``templates/``) leave files out of the build: their pages are not built, so
  their links are not judged, and a link to one is said at MkDocs' INFO level.
- **An unknown plugin, or a hook**, makes uncertain only what it can change: a hook's
  events are read from its source (never run); an unknown plugin's are not known, so it
  may do both. Each is one cause, said once per site with a count (sitelinks.py).

Patterns from mkdocs.yml are the repository's writing too: a regex that can take
exponential time (a repeated group holding a repetition) is not evaluated, nor is a
gitignore pattern of more than a few ``**``; each is said once.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files.linkcheck.boundary import Boundary
from atlas_files.linkcheck.siteconfig import SiteConfig, read_file

Problem = Any  # (key, message) -> None, as siteplan.Problem

# Events through which a plugin or hook changes what the validation sees.
PAGE_EVENTS = ("on_page_markdown", "on_page_read_source", "on_pre_page", "on_config")
FILE_EVENTS = ("on_files", "on_pre_build")

# Plugins whose every event comes after the validation, or touches nothing it sees (or
# that this check models itself: autorefs, mkdocstrings, blog, macros, exclude).
INERT = frozenset({
    "search", "tags", "social", "privacy", "offline", "optimize", "typeset", "info",
    "group", "meta", "projects", "minify", "minify-html", "minify_html", "git-revision-date",
    "git-revision-date-localized", "git-committers", "git-authors", "rss", "glightbox",
    "redirects", "awesome-pages", "awesome-nav", "literate-nav", "section-index", "mike",
    "exclude-search", "enumerate-headings", "open-in-new-tab", "swagger-ui-tag",
    "include_dir_to_nav", "mermaid2", "termynal", "drawio", "drawio-exporter",
    "mkdocs-video", "caption", "autorefs", "mkdocstrings", "blog", "macros", "exclude",
    "bibtex", "codeinclude", "material-plausible", "spellcheck", "htmlproofer",
    "link-marker", "llmstxt", "copy-to-llm",
})
# Known plugins that change the pages that use their syntax (on those pages alone).
PAGE_SYNTAX = {"include-markdown": "{%", "markdownextradata": "{{", "table-reader": "{{"}
# Known plugins that change any page, or make files, before the validation.
CHANGES_PAGES = frozenset({"simple-hooks", "monorepo", "jupyter", "mkdocs-jupyter",
                           "static-i18n", "i18n", "markdown-exec"})
MAKES_FILES = frozenset({"gen-files", "mkdocs-gen-files", "jupyter", "mkdocs-jupyter",
                         "monorepo", "multirepo", "static-i18n", "i18n", "simple-hooks",
                         "print-site", "api-autonav"})
_DANGEROUS_RE = re.compile(r"\((?:[^()\\]|\\.)*[*+}](?:[^()\\]|\\.)*\)[*+{?]")
_MAX_PATTERNS = 200
_MAX_PATTERN = 300
_MAX_GLOBSTARS = 4


@dataclass(frozen=True)
class Cause:
    """Why something cannot be checked from source: a key (said once per site), the
    words, and the line of mkdocs.yml (or a page) it comes from."""

    key: str
    text: str
    line: int = 0


def _plugin_line(site: SiteConfig, name: str) -> int:
    return site.line_of(name)


def changes_what_is_judged(site: SiteConfig, hook: Path) -> bool:
    """Whether hook file ``hook`` may change what MkDocs' link validation sees: it defines
    an event that comes before it, or its events cannot be read. One whose events all
    come later (``on_post_build``...) need not run for a check."""
    events = _events(site, hook)
    return events is None or any(e in PAGE_EVENTS or e in FILE_EVENTS for e in events)


def _events(site: SiteConfig, hook: Path) -> tuple[str, ...] | None:
    """The events hook file ``hook`` defines, read from its source (None: not read)."""
    try:
        text = read_file(hook, Boundary(map(Path, site.readable)), "hook")
    except ValueError:
        return None
    return tuple(e for e in {*PAGE_EVENTS, *FILE_EVENTS} if e in text)


class Plugins:
    """The model of one site's plugins and hooks (see the module's docstring)."""

    def __init__(self, site: SiteConfig, problem: Problem, run_hooks: bool = False) -> None:
        self.site = site
        self.page_changers: list[Cause] = []
        self.file_makers: list[Cause] = []
        configs = site.plugin_configs
        known = INERT | PAGE_SYNTAX.keys() | CHANGES_PAGES | MAKES_FILES
        for name in configs:
            if name in INERT or name in PAGE_SYNTAX:
                continue
            for causes, kind, sure, does in (
                    (self.page_changers, "plugin", CHANGES_PAGES, "change pages"),
                    (self.file_makers, "plugin-files", MAKES_FILES, "make files")):
                if name in sure or name not in known:
                    verb = does.replace("change", "changes").replace("make ", "makes ") \
                        if name in sure else f"(not one atlas check knows) may {does}"
                    causes.append(Cause(f"{kind}:{name}", f"the plugin {name} {verb} as the "
                                        "site is built", _plugin_line(site, name)))
        for hook in site.hooks:
            events = _events(site, hook)
            line = site.line_of(hook.name)
            pages = events is None or any(e in PAGE_EVENTS for e in events)
            files = events is None or any(e in FILE_EVENTS for e in events)
            said = "may change" if events is None else "changes"
            if pages and not run_hooks:
                named = "" if events is None else \
                    f" ({', '.join(e for e in PAGE_EVENTS if e in events)})"
                self.page_changers.append(Cause(
                    f"hook:{hook.name}", f"the site's hook {hook.name}{named} {said} pages as "
                    "the site is built (`atlas check accept` runs it on this clone, once you "
                    "have read and accepted it)", line))
            if files and not run_hooks:
                self.file_makers.append(Cause(
                    f"hook-files:{hook.name}", f"the site's hook {hook.name} "
                    f"{'may make' if events is None else 'makes'} files as the site is built",
                    line))
        self._blog = _blog(site)
        self._exclude = _Patterns(site.data.get("exclude_docs"), site.data.get("draft_docs"),
                                  problem, site)
        self._removed = _ExcludePlugin(configs.get("exclude"), problem) \
            if "exclude" in configs else None

    def excluded(self, uri: str) -> bool:
        """Whether MkDocs leaves page ``uri`` out of the build (exclude_docs, draft_docs,
        its default exclusions): its links are not judged, and links to it are info."""
        return self._exclude.match(uri)

    def removed(self, uri: str) -> bool:
        """Whether a plugin takes file ``uri`` out of the site's files altogether."""
        return self._removed is not None and self._removed.match(uri)

    def made(self, target: str) -> Cause | None:
        """The plugin that makes the missing file ``target`` as the site is built, if one
        may (the blog's generated pages; a plugin or hook that makes files)."""
        if self._blog is not None:
            folder, prefixes = self._blog
            rel = target[len(folder) + 1:] if target.startswith(folder + "/") else None
            if rel is not None and any(rel.startswith(p) for p in prefixes):
                return Cause("plugin:blog", "the blog plugin makes its archive, category, "
                             "author and pagination pages as the site is built",
                             _plugin_line(self.site, "blog"))
        return self.file_makers[0] if self.file_makers else None


def _blog(site: SiteConfig) -> tuple[str, tuple[str, ...]] | None:
    """The blog plugin's folder and the prefixes of the pages it makes there."""
    if "blog" not in site.plugin_configs:
        return None
    config = site.plugin_configs["blog"]

    def setting(key: str, default: Any) -> Any:
        value = config.get(key, default)
        return value if isinstance(value, type(default)) else default

    if setting("enabled", True) is False:
        return None
    folder = posixpath.normpath(setting("blog_dir", "blog")).strip("/")
    prefixes = ["page/"]  # pagination of the index, and of each view
    for flag, key, default in (("archive", "archive_url_format", "archive/{date}"),
                               ("categories", "categories_url_format", "category/{slug}"),
                               ("authors_profiles", "authors_profiles_url_format",
                                "author/{slug}")):
        if setting(flag, flag != "authors_profiles"):
            static = setting(key, default).split("{")[0].strip("/")
            prefixes.append(static + "/" if static else "")
    return ("" if folder == "." else folder), tuple(prefixes)


class _Patterns:
    """MkDocs' exclusions: its defaults (``.*`` and ``/templates/``), ``exclude_docs``
    and ``draft_docs`` (gitignore patterns, as MkDocs reads them with pathspec)."""

    def __init__(self, exclude: Any, drafts: Any, problem: Problem, site: SiteConfig) -> None:
        lines = [line for value in (exclude, drafts) if isinstance(value, str)
                 for line in value.splitlines()]
        safe = [line for line in lines if len(line) <= _MAX_PATTERN
                and line.count("**") <= _MAX_GLOBSTARS][:_MAX_PATTERNS]
        if len(safe) < len([line for line in lines if line.strip()]):
            problem("exclude_docs:patterns", "exclude_docs or draft_docs holds patterns too "
                    "long or too many to evaluate safely: those pages are checked as if "
                    "built")
        self._spec = None
        if safe:
            # pathspec comes with MkDocs, which reads these patterns with it.
            import pathspec  # noqa: PLC0415 - only for a site that sets them

            self._spec = pathspec.gitignore.GitIgnoreSpec.from_lines(safe)

    def match(self, uri: str) -> bool:
        parts = uri.split("/")
        if any(part.startswith(".") for part in parts) or uri.startswith("templates/"):
            return True
        return self._spec is not None and bool(self._spec.match_file(uri))


class _ExcludePlugin:
    """mkdocs-exclude: files matching its ``glob`` (fnmatch) or ``regex`` (re.match)
    patterns are taken out of the site's files."""

    def __init__(self, config: Any, problem: Problem) -> None:
        config = config if isinstance(config, dict) else {}

        def patterns(key: str) -> list[str]:
            value = config.get(key) or []
            items = value if isinstance(value, list) else [value]
            return [p for p in items if isinstance(p, str)][:_MAX_PATTERNS]

        self.globs = patterns("glob")
        self.regexes = []
        for pattern in patterns("regex"):
            try:
                if len(pattern) > _MAX_PATTERN or _DANGEROUS_RE.search(pattern):
                    raise re.error("may take exponential time")
                self.regexes.append(re.compile(pattern))
            except re.error:
                problem(f"exclude:regex:{pattern[:60]}", f"the exclude plugin's regex "
                        f"{pattern[:100]!r} is not evaluated (it cannot be compiled, or "
                        "could take exponential time): the files it names are checked as "
                        "if built")

    def match(self, uri: str) -> bool:
        return any(fnmatch.fnmatchcase(uri, g) for g in self.globs) or any(
            r.match(uri) for r in self.regexes)
