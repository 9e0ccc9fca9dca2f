"""Which of a MkDocs site's Markdown extensions atlas renders its pages with, decided
without importing any of them, and what a rendering yields.

A repository's mkdocs.yml is someone else's writing, and loading an extension runs its
code: so atlas loads only extensions of the toolkits it knows, by their module names
(``ALLOWED``): Python-Markdown's own (``toc``, ``markdown.extensions.toc``),
pymdown-extensions' (``pymdownx.*``) and Material's (``material.extensions.*``). Nothing
else is imported: no name outside those toolkits (an installed module is still code the
file chose to run), no ``module:Class`` name (Python-Markdown would import the module and
call whatever it names with the settings given), no extension of the project's own.
Each one left out is said once (ATL018), and its pages are read without it.

Nor does atlas run plugins and hooks (they change pages as the site is built, which is
why some anchors "cannot be checked from source"), extensions that only work inside their
own site generator, or snippets downloaded by URL.

Kept apart from sitepages.py (the renderer) so that a run that renders nothing (every
rendering it needs is in the cache, rendercache.py) never imports Python-Markdown.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files.linkcheck.siteconfig import NOT_NEEDED, SiteConfig, Unresolved, resolve_relative

# Extensions known to run code or fetch from the network (said so when named).
NOT_RUN = frozenset({
    "mkdocs-click", "mkdocs_click", "markdown_exec", "markdown-exec", "plantuml_markdown",
    "markdown_kroki", "mkdocs_kroki", "mdx_truly_sane_lists_exec",
})
# Extensions that need their generator's build around them (Zensical's own).
BUILD_ONLY = ("zensical.",)
# Directives (`::: name`) these make at build time: mkdocstrings (a plugin) and mkdocs-click.
DIRECTIVE_MAKERS = frozenset({"mkdocstrings", "mkdocs-click", "mkdocs_click"})

# Python-Markdown's own extensions by their short names.
BUILTIN = frozenset({
    "abbr", "admonition", "attr_list", "codehilite", "def_list", "extra", "fenced_code",
    "footnotes", "legacy_attrs", "legacy_em", "md_in_html", "meta", "nl2br", "sane_lists",
    "smarty", "tables", "toc", "wikilinks",
})
# The extensions atlas loads: a module of these toolkits, named as its package names it.
ALLOWED = re.compile(r"(?:markdown\.extensions|pymdownx(?:\.blocks)?|material\.extensions)"
                     r"\.(?!__)[a-z_][a-z0-9_]*")  # _bypassnorm is superfences' own
TOOLKITS = "Python-Markdown, pymdown-extensions and Material"

Problem = Callable[[str, str], None]  # (key said once, message)


@dataclass(frozen=True)
class Rendered:
    ids: frozenset[str]
    links: tuple[str, ...]  # in the order the page makes them
    whole: bool = True  # False: rendered for its ids alone, its links not all collected


@dataclass(frozen=True)
class Planned:
    """An extension to load: its name and its configuration (``!relative`` resolved,
    what atlas does not resolve left out)."""

    name: str
    config: dict[str, Any]


def local(name: str, root: Path) -> bool:
    """Whether extension ``name`` would be imported from the repository itself. Its
    top-level package is looked up, not imported (finding ``a.b`` would run ``a``)."""
    try:
        spec = importlib.util.find_spec(name.split(":")[0].split(".")[0])
    except (ImportError, ValueError):
        return False
    origin = getattr(spec, "origin", None) if spec is not None else None
    return bool(origin) and Path(str(origin)).resolve().is_relative_to(root.resolve())


def autorefs(site: SiteConfig) -> bool:
    """Whether the site's build has autorefs' Markdown (the autorefs plugin, or
    mkdocstrings, which brings it): a reference link to no definition, ``[Foo][foo]``,
    is then an autoref whose text alone shows (and makes a heading's id)."""
    return bool(site.plugins & {"autorefs", "mkdocstrings"})


def emoji(site: SiteConfig) -> bool:
    """Whether the site's pages turn emoji shortcodes into emoji (pymdownx.emoji): the
    renderer stands in for it (sitepages.py)."""
    return any(name == "pymdownx.emoji" for name, _ in site.extensions)


def trusted(name: str) -> bool:
    """Whether atlas loads extension ``name``: one of Python-Markdown's, pymdown-extensions'
    or Material's, named by its module (ALLOWED)."""
    return name in BUILTIN or ALLOWED.fullmatch(name) is not None


def refusal(name: str, root: Path) -> str | None:
    """Why extension ``name`` is not loaded for the site at ``root`` (None: it is, if it is
    installed). Nothing is imported to decide."""
    shown = name if len(name) <= 120 else name[:117] + "..."
    if name.startswith(BUILD_ONLY):
        return (f"markdown extension {shown} works only inside its own site generator's "
                "build: pages are read without it")
    if name in NOT_RUN:
        return (f"markdown extension {shown} is not run by atlas check (it runs code or "
                "fetches from the network when the site is built): what it makes cannot be "
                "checked from source")
    if ":" in name:
        return (f"markdown extension {shown} is not loaded: a `module:Class` name makes "
                "Python-Markdown import that module and call what it names, so atlas check "
                f"loads only {TOOLKITS}'s extensions, by their module names; pages are read "
                "without it")
    if not trusted(name):
        return (f"markdown extension {shown} is not loaded: atlas check runs only "
                f"{TOOLKITS}'s extensions (loading another would run code that mkdocs.yml "
                "chose); pages are read without it, and what it makes cannot be checked "
                "from source")
    if local(name, root):
        return (f"markdown extension {shown} is the project's own code, which atlas check "
                "does not run: what it makes cannot be checked from source")
    return None


def unresolved_message(name: str, value: Unresolved) -> str:
    return (f"markdown extension {name}: {value.said()} is a tag atlas check constructs "
            f"nothing for (it understands only a few Python names of {TOOLKITS}, such as "
            "their slugify functions, and never imports or calls another); that setting "
            "keeps its default")


def plan(site: SiteConfig, problem: Problem) -> list[Planned]:
    """The extensions atlas renders ``site``'s pages with, in the site's order; each one
    left out is said through ``problem``."""
    out: list[Planned] = []
    for name, raw in site.extensions:
        if name in NOT_NEEDED:
            continue
        refused = refusal(name, site.root)
        if refused is not None:
            problem(name, refused)
            continue

        def unresolved(value: Unresolved, name: str = name) -> None:
            problem(f"{name}:{value.what}", unresolved_message(name, value))

        out.append(Planned(name, resolve_relative(raw, site.root, site.docs_dir, unresolved)))
    return out
