"""Which of a MkDocs site's Markdown extensions atlas renders its pages with, decided
without importing any of them, and what a rendering yields.

What atlas does not run: plugins and hooks (they change pages as the site is built, which
is why some anchors "cannot be checked from source"), extensions that run code or reach
the network (mkdocs-click imports the documented program; markdown-exec runs code blocks;
PlantUML and Kroki fetch diagrams), extensions that only work inside their own site
generator, the project's own extensions, and snippets downloaded by URL.

Kept apart from sitepages.py (the renderer) so that a run that renders nothing (every
rendering it needs is in the cache, rendercache.py) never imports Python-Markdown.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files.check.siteconfig import NOT_NEEDED, SiteConfig, Unresolved, resolve_relative

# Extensions never loaded here: they run the project's code, or fetch from the network.
NOT_RUN = frozenset({
    "mkdocs-click", "mkdocs_click", "markdown_exec", "markdown-exec", "plantuml_markdown",
    "markdown_kroki", "mkdocs_kroki", "mdx_truly_sane_lists_exec",
})
# Extensions that need their generator's build around them (Zensical's own).
BUILD_ONLY = ("zensical.",)
# Directives (`::: name`) these make at build time: mkdocstrings (a plugin) and mkdocs-click.
DIRECTIVE_MAKERS = frozenset({"mkdocstrings", "mkdocs-click", "mkdocs_click"})

# The toolkits atlas knows what every extension of makes (and reads: only snippets reads
# files), and Python-Markdown's own extensions by their short names.
TRUSTED = frozenset({"markdown", "pymdownx", "material"})
BUILTIN = frozenset({
    "abbr", "admonition", "attr_list", "codehilite", "def_list", "extra", "fenced_code",
    "footnotes", "legacy_attrs", "legacy_em", "md_in_html", "meta", "nl2br", "sane_lists",
    "smarty", "tables", "toc", "wikilinks",
})

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


def trusted(name: str) -> bool:
    """Whether extension ``name`` is Python-Markdown's, pymdown-extensions' or Material's."""
    top = name.split(":")[0].split(".")[0]
    return name in BUILTIN or ("." in name and top in TRUSTED)


def unresolved_message(name: str, value: Unresolved) -> str:
    return (f"markdown extension {name}: {value.what} is not loaded by atlas check (only "
            "Python-Markdown's, pymdown-extensions', Material's and MkDocs' own names are); "
            "its default is used")


def plan(site: SiteConfig, problem: Problem) -> list[Planned]:
    """The extensions atlas renders ``site``'s pages with, in the site's order; each one
    left out is said through ``problem``."""
    out: list[Planned] = []
    for name, raw in site.extensions:
        if name in NOT_NEEDED:
            continue
        if name.startswith(BUILD_ONLY):
            problem(name, f"markdown extension {name} works only inside its own site "
                    "generator's build: pages are read without it")
            continue
        if name in NOT_RUN:
            problem(name, f"markdown extension {name} is not run by atlas check (it runs "
                    "code or fetches from the network when the site is built): what it "
                    "makes cannot be checked from source")
            continue
        if local(name, site.root):
            problem(name, f"markdown extension {name} is the project's own code, which "
                    "atlas check does not run: what it makes cannot be checked from source")
            continue

        def unresolved(value: Unresolved, name: str = name) -> None:
            problem(f"{name}:{value.what}", unresolved_message(name, value))

        out.append(Planned(name, resolve_relative(raw, site.root, site.docs_dir, unresolved)))
    return out
