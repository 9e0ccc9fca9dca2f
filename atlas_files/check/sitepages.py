"""A MkDocs site's pages rendered as the site renders them: by Python-Markdown, with the
extensions mkdocs.yml configures (those installed), so every id a page will have and every
link it will make come from the real parser, not from a re-implementation of it.

Collected as MkDocs collects them for its own link validation: the ``id`` of every element
and the ``name`` of every ``<a>``, in the rendered tree and in the raw HTML of the source;
the ``href`` of every ``<a>`` and the ``src`` of every ``<img>`` Markdown made (links in raw
HTML are left as they are, by MkDocs and here).

What atlas does not run: plugins and hooks (they change pages as the site is built, which
is why some anchors "cannot be checked from source"), extensions that run code or reach
the network (mkdocs-click imports the documented program; markdown-exec runs code blocks;
PlantUML and Kroki fetch diagrams), and snippets downloaded by URL.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

import markdown
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor

from atlas_files.check.siteconfig import SiteConfig, Unresolved, resolve_relative

# Extensions never loaded here: they run the project's code, or fetch from the network.
NOT_RUN = frozenset({
    "mkdocs-click", "mkdocs_click", "markdown_exec", "markdown-exec", "plantuml_markdown",
    "markdown_kroki", "mkdocs_kroki", "mdx_truly_sane_lists_exec",
})
# Extensions whose output holds no id and no relative link, left out for speed (the emoji
# index alone takes longer to load than most pages take to render).
NOT_NEEDED = frozenset({"pymdownx.emoji"})
# Extensions that need their generator's build around them (Zensical's own).
BUILD_ONLY = ("zensical.",)
# Directives (`::: name`) these make at build time: mkdocstrings (a plugin) and mkdocs-click.
DIRECTIVE_MAKERS = frozenset({"mkdocstrings", "mkdocs-click", "mkdocs_click"})


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


class _Links(Treeprocessor):  # type: ignore[misc]
    links: list[str]

    def run(self, root: Element) -> None:
        self.links: list[str] = []
        for element in root.iter():
            key = "href" if element.tag == "a" else "src" if element.tag == "img" else None
            url = element.get(key) if key else None
            if url is not None:
                self.links.append(url)


@dataclass(frozen=True)
class Rendered:
    ids: frozenset[str]
    links: tuple[str, ...]  # in the order the page makes them


def _local(name: str, root: Path) -> bool:
    """Whether extension ``name`` would be imported from the repository itself. Its
    top-level package is looked up, not imported (finding ``a.b`` would run ``a``)."""
    try:
        spec = importlib.util.find_spec(name.split(":")[0].split(".")[0])
    except (ImportError, ValueError):
        return False
    origin = getattr(spec, "origin", None) if spec is not None else None
    return bool(origin) and Path(str(origin)).resolve().is_relative_to(root.resolve())


def _code_format() -> Any:
    from pymdownx.superfences import fence_code_format  # noqa: PLC0415 - only when needed

    return fence_code_format


def unresolved_message(name: str, value: Unresolved) -> str:
    return (f"markdown extension {name}: {value.what} is not loaded by atlas check (only "
            "Python-Markdown's, pymdown-extensions', Material's and MkDocs' own names are); "
            "its default is used")


class Renderer:
    """One Python-Markdown, set up as the site's, reset for each page."""

    def __init__(self, site: SiteConfig, problem: Callable[[str, str], None]) -> None:
        self.site = site
        self.directive_makers = {n for n in DIRECTIVE_MAKERS
                                 if n in site.plugins or n in dict(site.extensions)}
        loaded: list[Any] = []
        base = markdown.Markdown()
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
            if _local(name, site.root):
                problem(name, f"markdown extension {name} is the project's own code, which "
                        "atlas check does not run: what it makes cannot be checked from source")
                continue

            def unresolved(value: Unresolved, name: str = name) -> None:
                problem(f"{name}:{value.what}", unresolved_message(name, value))

            config = resolve_relative(raw, site.root, site.docs_dir, unresolved)
            config = self._tuned(name, config)
            try:
                loaded.append(base.build_extension(name, config))
            except ImportError:
                problem(name, f"markdown extension {name} is not installed here: pages are "
                        "read without it (install it where atlas runs to check them as built)")
            except Exception as exc:  # noqa: BLE001 - a bad config is the site's problem
                problem(name, f"markdown extension {name} cannot be loaded: "
                        f"{type(exc).__name__}: {exc}"[:300])
        self.md = markdown.Markdown(extensions=loaded)
        self._raw = _RawHtml()
        self.md.preprocessors.register(self._raw, "atlas_raw_ids", 21)
        self._ids = _Ids(self.md)
        self.md.treeprocessors.register(self._ids, "atlas_ids", 5)
        self._links = _Links(self.md)
        self.md.treeprocessors.register(self._links, "atlas_links", 0)

    def _tuned(self, name: str, config: dict[str, Any]) -> dict[str, Any]:
        config = dict(config)
        if name == "pymdownx.snippets":
            bases = config.get("base_path", ["."])
            bases = [bases] if isinstance(bases, str) else bases
            config["base_path"] = [str(self.site.root / b) for b in bases if isinstance(b, str)]
            config["check_paths"] = False
            config["url_download"] = False
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

    def render(self, text: str) -> Rendered:
        self.md.reset()
        self._raw.ids, self._ids.ids, self._links.links = set(), set(), []
        self.md.convert(text)
        return Rendered(frozenset(self._ids.ids | self._raw.ids), tuple(self._links.links))
