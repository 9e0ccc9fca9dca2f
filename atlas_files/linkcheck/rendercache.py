"""Renderings of a MkDocs site's pages kept between runs, in the user's own cache folder.

A pre-commit hook checks links on every commit, and most pages have not changed since the
last one. What rendering a page yields (its ids and links, or its ids alone for a page
rendered only as the target of anchors: sitepages.py), or that it took longer to render
than a check gives (renderpool.py: not tried again while the limit is no larger), is kept,
keyed by a digest of the page's path and text, in one file per site and *setup*: the
extensions atlas loads and their configuration (siteplan.py), where the installed
Python-Markdown and extension packages lie and their stamps, atlas's own version and
renderer, and Python's version. A rendering holds only while every file it included with
pymdownx.snippets is byte for byte the same and every file the snippets extension looked
for in vain is still missing.

The files live outside every repository: ``$XDG_CACHE_HOME/atlas-files/links/`` (else
``~/.cache/atlas-files/links/``), used only while that folder and the two above it are
real folders that nobody but this user (or root) can write. A rendering says what a page
holds, so whoever can write one can make a check lie; a cache committed into the checked
repository (``.atlas-cache/links/``, as older versions kept it) is never read. What is read
is a regular file of bounded size (a pipe, a device or a link where the cache should be is
no cache), and a snippet is hashed only if it is a regular file of the repository.

Only setups atlas loads are kept, and atlas loads only Python-Markdown's,
pymdown-extensions' and Material's extensions: of those, only snippets reads files, and
its reads are traced. The cache only ever saves time: a file that cannot be read, or reads
as anything but what this module wrote, is as good as none, and one that cannot be
written is not.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import stat
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from atlas_files import __version__
from atlas_files.facts import renderlimit
from atlas_files.linkcheck.boundary import Boundary
from atlas_files.linkcheck.codereads import Checker
from atlas_files.linkcheck.filesources import DiskSource
from atlas_files.linkcheck.siteconfig import SiteConfig
from atlas_files.linkcheck.siteplan import Planned, Rendered, autorefs, emoji, trusted
from atlas_files.storage import fsio, yamlcache

FORMAT = 2
FOLDER = "links"
_RENDERER = ("siteplan.py", "sitepages.py", "rendercache.py")
_MAX_BYTES = 64 << 20
_MAX_SNIPPET = 2 << 20  # as sitepages.MAX_SNIPPET: a larger one was never included
_KEEP_S = 30 * 86400  # an entry no run has used for this long goes at the next write
_KEEP_SETUPS = 4  # files of other setups of a site kept (a branch with another mkdocs.yml)
_KEEP_FILES = 64  # files of all sites kept


def folder() -> Path | None:
    """Where renderings are kept; None when the user has no cache folder of their own."""
    where = yamlcache.folder()
    return None if where is None else Path(where).parent / FOLDER


def _private(path: Path) -> bool:
    """A real folder (not a link) that only this user, or root, can write."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid in (os.getuid(), 0)
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _trusted_folder(where: Path) -> bool:
    """The cache folder, the one above it and its base are private (``_private``)."""
    return all(_private(p) for p in (where.parent.parent, where.parent, where))


class _Uncacheable(Exception):
    pass


def _canon(value: Any) -> Any:
    """``value`` as JSON that names the same configuration on every run."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_canon(v) for v in value]
    if isinstance(value, dict):
        return [[str(k), _canon(v)] for k, v in value.items()]
    if isinstance(value, functools.partial):
        return {"partial": _canon(value.func), "args": _canon(value.args),
                "keywords": _canon(value.keywords)}
    module, name = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if callable(value) and module and name and "<" not in name \
            and getattr(value, "__closure__", None) is None:
        return {"callable": f"{module}:{name}"}
    raise _Uncacheable(type(value).__name__)


def stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def package(name: str) -> list[Any]:
    """Where top-level package ``name`` lies and its stamp (found, not imported)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    origin = getattr(spec, "origin", None) if spec is not None else None
    return [name, origin, stamp(origin) if origin else None]


def setup_key(site: SiteConfig, planned: list[Planned]) -> str | None:
    """What a rendering of ``site``'s pages depends on besides the page, hashed; None if
    that cannot be known from here (an extension from outside the trusted toolkits)."""
    if not all(trusted(p.name) for p in planned):
        return None
    tops = {"markdown"} | {p.name.split(".")[0] for p in planned if "." in p.name} | (
        {"pymdownx", "material"} if emoji(site) else set())
    try:
        extensions = [[p.name, _canon(p.config)] for p in planned]
    except _Uncacheable:
        return None
    here = Path(__file__).parent
    described = json.dumps({
        "format": FORMAT, "python": sys.version, "atlas": __version__, "root": str(site.root),
        "docs": str(site.docs_dir), "extensions": extensions, "autorefs": autorefs(site),
        "emoji": emoji(site),
        "packages": [package(t) for t in sorted(tops)],
        "renderer": [stamp(str(here / f)) for f in _RENDERER],
    }, sort_keys=True, default=str)
    return hashlib.sha256(described.encode()).hexdigest()


def _sha(path: str, within: Boundary) -> str | None:
    """The digest of a snippet file: a regular file of the repository, of a size that
    was included (else None: the rendering that included it no longer holds)."""
    try:
        data, size = DiskSource(within=within).read_limited(Path(path), _MAX_SNIPPET + 1)
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest() if size <= _MAX_SNIPPET else None


def candidates(asked: str, bases: Iterable[str]) -> set[str]:
    """Every path pymdownx.snippets may try for ``asked`` (a superset: all of them must
    stay missing for a rendering that found nothing there to hold)."""
    out: set[str] = set()
    for base in bases:
        out |= {os.path.join(base, asked), os.path.abspath(os.path.join(base, asked)),
                os.path.join(os.path.dirname(base), asked)}
    return out


class RenderCache:
    """The renderings of one setup of one site (see the module's docstring)."""

    def __init__(self, site: SiteConfig, setup: str) -> None:
        where = folder()
        self.folder = where
        # One site's files start with the same name: its other setups are pruned apart.
        self.site_key = hashlib.sha256(str(site.path).encode("utf-8", "surrogatepass")
                                       ).hexdigest()[:16]
        self.path = None if where is None else where / f"{self.site_key}-{setup[:32]}.json"
        self.setup = setup
        self._within = Boundary(map(Path, site.readable))
        self._reads = Checker(self._within)
        self.problems: list[tuple[str, str]] | None = None  # said as the renderer was made
        self._pages: dict[str, dict[str, Any]] = {}
        self._used: set[str] = set()
        # What this run asked already, by (uri, text): one check asks of a page many times
        # (each link to it), and a string's hash is kept with it, so an answer is found
        # again without digesting the page or testing its included files once more.
        self._answers: dict[tuple[str, str], Rendered | None] = {}
        self._dirty = False
        self._load()

    def _load(self) -> None:
        if self.folder is None or self.path is None or not _trusted_folder(self.folder):
            return
        try:
            data = json.loads(fsio.read_nofollow(self.path, _MAX_BYTES))
        except (OSError, ValueError, RecursionError):
            return
        if not isinstance(data, dict) or data.get("setup") != self.setup:
            return
        pages, problems = data.get("pages"), data.get("problems")
        if isinstance(pages, dict):
            self._pages = {k: v for k, v in pages.items() if isinstance(v, dict)}
        if isinstance(problems, list) and all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p)
                for p in problems):
            self.problems = [(p[0], p[1]) for p in problems]

    @property
    def empty(self) -> bool:
        """Whether no rendering is kept (a first run, or a new setup)."""
        return not self._pages

    @staticmethod
    def key(uri: str, text: str) -> str:
        return hashlib.sha256(f"{uri}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, uri: str, text: str) -> Rendered | None:
        """The page's rendering if one is kept and still holds."""
        if self.problems is None:  # no renderer made yet: nothing kept can be trusted
            return None
        asked = (uri, text)
        if asked in self._answers:
            return self._answers[asked]
        found = self._answers[asked] = self._get(uri, text)
        return found

    def _get(self, uri: str, text: str) -> Rendered | None:
        key = self.key(uri, text)
        entry = self._pages.get(key)
        if entry is None or self.problems is None:
            return None
        try:
            ids, links = entry["ids"], entry["links"]
            holds = self._holds(entry)
            rendered = Rendered(frozenset(str(i) for i in ids), tuple(str(u) for u in links),
                                entry.get("partial") is not True)
        except (KeyError, TypeError, ValueError):
            return None
        if not holds:
            return None
        self._used.add(key)
        return rendered

    def _holds(self, entry: dict[str, Any]) -> bool:
        """Whether every file ``entry`` included is the same and every one it looked for
        in vain is still missing, and (for what the site's own code gave) everything
        that code read is as it was (codereads.py). KeyError, TypeError or ValueError
        for a damaged entry."""
        reads = entry.get("reads")
        return all(not os.path.exists(p) for p in entry["missing"]) and all(
            _sha(path, self._within) == sha for path, sha in entry["included"]) and (
            reads is None or self._reads.holds(reads))

    def put(self, uri: str, text: str, rendered: Rendered,
            included: Iterable[tuple[str, str | None]], bases: list[str]) -> None:
        """Keep ``rendered``; ``included``: (file asked for, file found or None) for each
        snippet the page included."""
        found: dict[str, str | None] = {}
        missing: set[str] = set()
        for asked, got in included:
            if got is not None:
                found[got] = _sha(got, self._within)
            missing |= candidates(asked, bases)
        missing = {p for p in missing if not os.path.exists(p)}
        key = self.key(uri, text)
        self._pages[key] = {"ids": sorted(rendered.ids), "links": list(rendered.links),
                            "missing": sorted(missing),
                            "included": [[p, sha] for p, sha in sorted(found.items())]}
        if not rendered.whole:
            self._pages[key]["partial"] = True
        self._used.add(key)
        self._answers.pop((uri, text), None)
        self._dirty = True

    def ran_out(self, key: str) -> float | None:
        """The seconds the page of ``key`` took longer than when it was last tried, if it
        ran out then with a limit no smaller than today's (renderlimit.check_seconds)."""
        entry = self._pages.get(key)
        seconds = None if entry is None or self.problems is None else entry.get("ran_out")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) \
                or seconds < renderlimit.check_seconds():
            return None
        self._used.add(key)
        return float(seconds)

    def put_ran_out(self, key: str, seconds: float) -> None:
        """Remember that the page of ``key`` took longer than ``seconds``."""
        self._pages[key] = {"ran_out": seconds, "missing": [], "included": []}
        self._used.add(key)
        self._dirty = True

    def save(self) -> None:
        """Write what changed (never fails: a cache that cannot be written is skipped)."""
        if not self._dirty or self.problems is None:
            return
        now = int(time.time())
        for key, entry in list(self._pages.items()):
            if key in self._used:
                entry["t"] = now
            elif not isinstance(entry.get("t"), int) or now - entry["t"] > _KEEP_S:
                del self._pages[key]
        data = {"setup": self.setup, "problems": [list(p) for p in self.problems],
                "pages": self._pages}
        try:
            self._prepare()
            assert self.path is not None  # _prepare refuses otherwise
            fsio.replace_atomic(self.path, json.dumps(data).encode(), durable=False)
            self._dirty = False
        except OSError:
            pass

    def _prepare(self) -> None:
        if self.folder is None or self.path is None \
                or not _private(self.folder.parent.parent):
            raise OSError("this user has no cache folder of their own")
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        if not _trusted_folder(self.folder):
            raise OSError("the cache folder is not this user's alone")
        kept = sorted(((p.stat().st_mtime, p) for p in self.folder.glob("*.json")
                       if p != self.path), reverse=True)
        mine = [p for _, p in kept if p.name.startswith(self.site_key + "-")]
        others = [p for _, p in kept if not p.name.startswith(self.site_key + "-")]
        for old in mine[_KEEP_SETUPS:] + others[_KEEP_FILES:]:
            old.unlink(missing_ok=True)
