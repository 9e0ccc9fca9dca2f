"""The ids a page of Markdown will have on the site: its headings' (as Python-Markdown's
``toc`` makes them), and those markdown.py finds (attr_list, footnotes, HTML).

A heading's id is its visible text, NFKD-folded to ASCII, everything but word characters,
spaces and hyphens dropped, lowercased, runs of spaces and hyphens joined by one ``-``; a
repeated id gets ``_1``, ``_2``; an explicit ``{#id}`` (attr_list) wins. A plain-text
heading is slugified here; one with inline markup (emphasis, code, links, escapes,
``{...}``) is rendered by Python-Markdown itself, so its id is exactly the site's.

Python-Markdown is not linear on some heading sources (a heading of many ``[`` is
quadratic), so it renders a page's headings only when there are at most
``MAX_RENDERED_HEADINGS`` of at most ``MAX_RENDERED_CHARS`` characters each; beyond that,
headings are slugified here (the same ids, except where inline markup would change the
visible text) and ``anchors_exact`` says the result is approximate.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from atlas_files.linkcheck.markdown import Page, read

_UNIQUE_RE = re.compile(r"^(.*)_([0-9]+)$")
MAX_RENDERED_HEADINGS = 500
MAX_RENDERED_CHARS = 200


def slugify(value: str, separator: str = "-") -> str:
    folded = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    kept = re.sub(r"[^\w\s-]", "", folded).strip().lower()
    return re.sub(rf"[{re.escape(separator)}\s]+", separator, kept)


def _next_id(slug: str) -> str:
    m = _UNIQUE_RE.match(slug)
    return f"{m.group(1)}_{int(m.group(2)) + 1}" if m else f"{slug}_1"


def _unique(slug: str, used: set[str], skip: dict[str, str] | None = None) -> str:
    """The id toc gives a heading whose slug is ``slug``: the first of ``slug``, its
    ``_1``, ``_2``... not yet used. ``skip`` remembers, for each id tried, the first free
    one found after it, so a thousand equal headings cost a thousand steps, not half a
    million (every id skipped over stays used, so the jump is always right)."""
    skip = {} if skip is None else skip
    tried: list[str] = []
    while slug in used or not slug:
        tried.append(slug)
        slug = skip.get(slug) or _next_id(slug)
    for passed in tried:
        skip[passed] = slug
    used.add(slug)
    return slug


def anchors(text: str) -> set[str]:
    """The ids a rendered page of this Markdown has: headings, ``{#id}``, HTML id/name."""
    return anchors_exact(text)[0]


def anchors_exact(text: str) -> tuple[set[str], bool]:
    """``anchors``, and whether they are exact: False when the page's headings hold
    markup but are too many or too long to give to Python-Markdown (see the module's
    docstring), so that an anchor found missing is reported with that caveat."""
    return page_ids(read(text))


@dataclass(frozen=True)
class Toc:
    """How a site's ``toc`` makes ids: its ``slugify`` and ``separator``."""

    slugify: Callable[[str, str], str] | None = None
    separator: str = "-"


DEFAULT_TOC = Toc()


def page_ids(page: Page, toc: Toc = DEFAULT_TOC) -> tuple[set[str], bool]:
    """The ids of a page read by markdown.read, and whether they are exact."""
    found, exact = heading_ids(page.headings, page.reserved, toc)
    return found | page.ids, exact


def heading_ids(headings: list[tuple[int, str]], reserved: set[str],
                toc: Toc = DEFAULT_TOC) -> tuple[set[str], bool]:
    """The ids toc gives ``headings``, with ``reserved`` (ids of other blocks) taken."""
    exact = True
    if any(not _MARKUP.isdisjoint(raw) for _, raw in headings):
        ids = _rendered_ids(headings, reserved, toc) if renderable(headings) else None
        if ids is not None:
            return ids | reserved, True
        exact = False
    used = set(reserved)
    skip: dict[str, str] = {}
    slug = toc.slugify or slugify
    for _, raw in headings:
        _unique(slug(raw.strip(), toc.separator), used, skip)
    return used, exact


def renderable(headings: list[tuple[int, str]]) -> bool:
    """Whether Python-Markdown may render these headings: it is not linear in a heading's
    length, so only few and short ones are given to it."""
    return len(headings) <= MAX_RENDERED_HEADINGS and all(
        len(raw) <= MAX_RENDERED_CHARS for _, raw in headings)


# Characters that can make a heading's visible text, or its id, differ from its source.
_MARKUP = set("*_`[]<>&\\!{}")


def _rendered_ids(headings: list[tuple[int, str]], reserved: set[str],
                  toc: Toc) -> set[str] | None:
    """The heading ids Python-Markdown itself gives (the renderer MkDocs uses, so emphasis,
    code, escapes and attr_list come out exactly as on the site), from a document holding
    just the headings. None if Python-Markdown is missing or a source does not render as
    one heading."""
    md = _renderer(toc)
    parts = [f"x\n{{: #{ident} }}" for ident in sorted(reserved)]
    parts += ["#" * level + " " + " ".join(raw.split("\n")) for level, raw in headings]
    md.reset()
    md.convert("\n\n".join(parts))
    ids: set[str] = set()
    count = 0
    stack = list(getattr(md, "toc_tokens", []))
    while stack:
        token = stack.pop()
        ids.add(html.unescape(token["id"]))
        count += 1
        stack.extend(token.get("children", []))
    return ids if count == len(headings) else None


@functools.cache
def _renderer(toc: Toc) -> Any:
    # Python-Markdown costs ~100 ms to import; only a page whose headings hold markup
    # pays for it.
    import markdown  # noqa: PLC0415 - see above

    config: dict[str, Any] = {"separator": toc.separator}
    if toc.slugify is not None:
        config["slugify"] = toc.slugify
    return markdown.Markdown(extensions=["toc", "attr_list"],
                             extension_configs={"toc": config})
