"""Relative Markdown links: the target must exist, and so must its ``#anchor``.

Anchors are always checked, offline: a link checker that skips fragments passes exactly
the links that break when a heading is renamed. Links with a scheme (``https:``,
``mailto:``) and site-absolute paths (``/x``) cannot be judged offline and are skipped.

Where a ``mkdocs.yml`` governs a file (found upward, or named), the file is judged the way
that site will be built (sitelinks.py; routing.py chooses). Elsewhere (a record, a plain
repository) this module's own reader judges it, as Python-Markdown reads it. There a link
to a folder is a warning (a file browser shows a folder; a site has no page there), a
broken link in a reference definition nothing uses is a warning, and an anchor on a page
that the build changes (a snippet not found, a ``::: directive``) cannot be checked from
source.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote

from atlas_files.linkcheck import anchors, markdown
from atlas_files.linkcheck.filesources import DiskSource, Source, read_page, why_unreadable
from atlas_files.linkcheck.findings import CODES, Report

_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
MARKDOWN_SUFFIXES = (".md", ".markdown")
PAGE_SUFFIXES = (".md", ".markdown", ".mdown", ".mkdn", ".mkd")
# (linking file, line, the link as written, the file it resolves to)
TargetHook = Callable[[Path, int, str, Path], None]
_MAX_SUGGEST_FROM = 2000
_MAX_SUGGEST_CHARS = 100
_MAX_SHOWN = 200
_MAX_SNIPPET_DEPTH = 4
_MAX_SNIPPET_CLIMB = 32


def cut(text: str) -> str:
    """A link as written, cut for a message: a megabyte of link is still one line."""
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN - 3] + "..."


def suggestion(fragment: str, known: Collection[str]) -> str:
    """ATL011's hint, with the closest anchor there is if one is close."""
    close: list[str] = []
    # difflib is quadratic in the words' lengths: suggest only among few, short ones.
    if len(known) <= _MAX_SUGGEST_FROM and len(fragment) <= _MAX_SUGGEST_CHARS:
        close = difflib.get_close_matches(fragment, sorted(known), n=1, cutoff=0.6)
    return CODES["ATL011"].hint + (f"; did you mean #{close[0]}?" if close else "")


def split_target(target: str) -> tuple[str, str | None] | None:
    """(path part, fragment or None) of a relative link; None if it cannot be judged."""
    if not target or target.startswith(("/", "\\")) or _SCHEME_RE.match(target):
        return None
    path_part, hashed, fragment = target.partition("#")
    path_part = path_part.partition("?")[0]
    return unquote(path_part), (unquote(fragment) if hashed and fragment else None)


def resolve(linking_file: Path, path_part: str) -> Path:
    """The file a relative link points at (normalised; symlinks are not followed)."""
    return Path(os.path.normpath(linking_file.parent / path_part))


def is_markdown(path: Path | str) -> bool:
    return str(path).lower().endswith(MARKDOWN_SUFFIXES)


@dataclass(frozen=True)
class Anchors:
    ids: frozenset[str]
    exact: bool  # False: headings too many or too long to render (see anchors.py)
    why: str | None  # why some ids cannot be seen from source, if so


class LinkChecker:
    """Checks the links of one file after another, caching each target's anchors."""

    def __init__(
        self, report: Report, source: Source | None = None, on_target: TargetHook | None = None,
        toc: anchors.Toc = anchors.DEFAULT_TOC,
    ) -> None:
        self.report = report
        self.toc = toc
        self.source: Source = source if source is not None else DiskSource()
        self.on_target = on_target
        self._anchors = lru_cache(maxsize=2048)(self._anchors_uncached)
        # A file read for its links is often read again as a link's target, or the other
        # way round: each is parsed once (only the reading is kept, never the text).
        self._read = lru_cache(maxsize=2048)(self._read_uncached)
        self._reading: set[Path] = set()  # snippets being followed (a cycle stops here)

    def _read_uncached(self, path: Path) -> markdown.Page:
        data = read_page(self.source, path)
        body, first = markdown.split_front_matter(data.decode("utf-8", "replace"))
        return markdown.read(body, first)

    def _anchors_uncached(self, path: Path) -> Anchors | None:
        try:
            page = self._read(path)
        except (OSError, ValueError):
            return None
        return self.anchors_of(path, page)

    def anchors_of(self, path: Path, page: markdown.Page) -> Anchors:
        """The ids of ``page`` (the text of ``path``), snippets it includes followed."""
        ids, exact = anchors.page_ids(page, self.toc)
        why = None
        if page.directives:
            line, what = page.directives[0]
            why = f"`::: {cut(what)}` (line {line}) is expanded when the site is built"
        if page.snippets and path not in self._reading and \
                len(self._reading) < _MAX_SNIPPET_DEPTH:
            self._reading.add(path)
            try:
                for line, name in page.snippets:
                    found = self._snippet(path, name)
                    included = self._anchors(found) if found is not None else None
                    if included is None:
                        why = why or f"the snippet {cut(name)!r} it includes (line {line}) " \
                                      "was not found"
                        continue
                    ids |= included.ids
                    exact = exact and included.exact
                    why = why or included.why
            finally:
                self._reading.discard(path)
        return Anchors(frozenset(ids), exact, why)

    def _snippet(self, path: Path, name: str) -> Path | None:
        """The file a ``--8<--`` include names: beside the page, or in a folder above it
        (pymdownx.snippets looks in its base_path, by default where the site is built)."""
        for candidate in (name, name.split(":")[0]):
            if not candidate or os.path.isabs(candidate):
                continue
            folder = path.parent
            within = getattr(self.source, "within", None)
            for _ in range(_MAX_SNIPPET_CLIMB):
                target = Path(os.path.normpath(folder / candidate))
                if self.source.is_file(target):
                    return target
                # Never above the repository checked (boundary.py), nor past the root.
                if folder.parent == folder or (within is not None
                                               and not within.holds(folder.parent)):
                    break
                folder = folder.parent
        return None

    def check_file(self, path: Path) -> None:
        """Read ``path`` (through the source) and check its links."""
        try:
            page = self._read(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            self.report.add(path, 1, "ATL002", f"cannot read this file: {why_unreadable(exc)}")
            return
        self.check_page(path, page)

    def check_text(self, path: Path, text: str, first_line: int = 1) -> None:
        self.check_page(path, markdown.read(text, first_line))

    def check_page(self, path: Path, page: markdown.Page) -> None:
        own: Anchors | None = None
        for link in page.links:
            parts = split_target(link.target)
            if parts is None:
                continue
            path_part, fragment = parts
            if not path_part:
                if fragment is None:
                    continue
                if own is None:
                    own = self.anchors_of(path, page)
                self._check_anchor(path, link, "this file", fragment, own)
                continue
            target = resolve(path, path_part)
            is_file = self.source.is_file(target)
            if not is_file and not self.source.is_dir(target):
                self._add(path, link, "ATL010", f"broken link '{cut(link.target)}': "
                          f"{cut(self._shown(target))} does not exist")
                continue
            if not is_file:
                if link.used:
                    self.report.add(path, link.line, "ATL019", f"link '{cut(link.target)}' "
                                    f"names the folder {cut(self._shown(target))}: a file "
                                    "browser shows it, a MkDocs site has no page there")
            elif fragment is not None and is_markdown(target):
                found = self._anchors(target)
                if found is not None:
                    self._check_anchor(path, link, self._shown(target), fragment, found)
            if self.on_target is not None and link.used:
                self.on_target(path, link.line, link.target, target)

    def check_files(self, paths: Iterable[Path]) -> None:
        for path in paths:
            self.report.files += 1
            self.check_file(path)

    def _shown(self, target: Path) -> str:
        return self.report.show(target)

    def _add(self, path: Path, link: markdown.Link, code: str, message: str,
             hint: str = "") -> None:
        if not link.used:  # a broken link nobody can follow: worth a warning, not an error
            self.report.add(path, link.line, "ATL016",
                            message + "; no link uses this definition")
        else:
            self.report.add(path, link.line, code, message, hint)

    def _check_anchor(self, path: Path, link: markdown.Link, where: str, fragment: str,
                      known: Anchors) -> None:
        if fragment in known.ids:
            return
        if known.why is not None:
            self.report.add(path, link.line, "ATL017", f"anchor '{cut(link.target)}' cannot "
                            f"be checked from source: {known.why}")
            return
        caveat = "" if known.exact else (
            f" (it has over {anchors.MAX_RENDERED_HEADINGS} headings, or one over "
            f"{anchors.MAX_RENDERED_CHARS} characters, with markup: too many to render, so "
            "its anchors were worked out from the plain text and may differ from the site's)")
        self._add(path, link, "ATL011",
                  f"broken anchor '{cut(link.target)}': {where} has no heading with anchor "
                  f"#{cut(fragment)}{caveat}", suggestion(fragment, known.ids))

