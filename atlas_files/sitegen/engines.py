"""Which engine builds the site, and the check of what it built.

Two engines build the same generated folder: MkDocs with Material (the default), and
Zensical, Material's successor. Neither's exit code is taken as proof: an engine that
skipped a page, or a search plugin it did not know, still exits 0. ``verify`` looks at
the built folder itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from atlas_files.facts.errors import AtlasError, BadInput

ENGINES = ("mkdocs", "zensical")
DEFAULT = "mkdocs"
# Where each engine writes its search index, relative to the built site.
SEARCH_INDEX = {"mkdocs": "search/search_index.json", "zensical": "search.json"}
_LOCATION_RE = re.compile(rb'"location"\s*:\s*"([^"#]*)')
_SHOWN = 5


def choose(requested: str | None, config: Mapping[str, Any]) -> str:
    """The engine asked for (``--engine``), else ``site.engine`` in atlas.yaml, else
    MkDocs. An unknown name is refused (exit 2) before anything is written."""
    where = "--engine"
    if requested is None:
        site = config.get("site")
        value = site.get("engine") if isinstance(site, Mapping) else None
        if value is None:
            return DEFAULT
        requested, where = value, "site.engine in atlas.yaml"
    if requested not in ENGINES:
        raise BadInput(f"{where} is {str(requested)[:40]!r}; the site's engines are "
                       f"{' and '.join(ENGINES)}",
                       hint="use mkdocs (MkDocs + Material, the default) or zensical")
    return str(requested)


def _listed(names: list[str]) -> str:
    more = len(names) - _SHOWN
    return ", ".join(names[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


def verify(engine: str, site: Path, pages: Iterable[str]) -> int:
    """Check that ``site`` holds a page for every Markdown page in ``pages`` (paths
    relative to docs/) and a search index that lists each of them; return the number of
    entries in the index. Raises AtlasError naming what is missing.

    The index is scanned for its ``location`` fields rather than parsed whole: at 10,000
    topics it is tens of megabytes, and parsing it would double the build's peak memory.
    """
    expected = {p[:-3] + ".html" for p in pages if p.endswith(".md")}
    missing = sorted(h for h in expected if not (site / h).is_file()
                     or (site / h).stat().st_size == 0)
    hint = (f"build again; if pages are still missing, the installed {engine} may not "
            "support this site: try the other engine (--engine)")
    if missing:
        raise AtlasError(f"{engine} built the site but left out {len(missing)} of its "
                         f"{len(expected)} pages: {_listed(missing)}", hint=hint)
    index = site / SEARCH_INDEX[engine]
    try:
        raw = index.read_bytes()
    except OSError:
        raise AtlasError(f"{engine} built the site without a search index "
                         f"({SEARCH_INDEX[engine]} is missing)", hint=hint) from None
    body = raw.strip()
    if not (body.startswith(b"{") and body.endswith(b"}")):
        raise AtlasError(f"{engine}'s search index {SEARCH_INDEX[engine]} is not a JSON "
                         "object", hint=hint)
    locations = _LOCATION_RE.findall(raw)
    listed = {loc.decode("utf-8", "replace") for loc in locations}
    listed |= {"index.html"} if "" in listed else set()  # the home page, as MkDocs names it
    unlisted = sorted(expected - listed)
    if unlisted:
        raise AtlasError(f"{engine}'s search index leaves out {len(unlisted)} of the "
                         f"{len(expected)} pages: {_listed(unlisted)}", hint=hint)
    return len(locations)
