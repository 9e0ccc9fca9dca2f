"""Relative Markdown links: the target must exist, and so must its ``#anchor``.

Anchors are always checked, offline: a link checker that skips fragments passes exactly
the links that break when a heading is renamed. Links with a scheme (``https:``,
``mailto:``) and site-absolute paths (``/x``) cannot be judged offline and are skipped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterable
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote

from atlas_files.check import markdown
from atlas_files.check.findings import Report
from atlas_files.check.sources import DiskSource, Source, why_unreadable

_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
MARKDOWN_SUFFIXES = (".md", ".markdown")
# (linking file, line, the link as written, the file it resolves to)
TargetHook = Callable[[Path, int, str, Path], None]
_MAX_SUGGEST_FROM = 2000
_MAX_SUGGEST_CHARS = 100
_MAX_SHOWN = 200


def _cut(text: str) -> str:
    """A link as written, cut for a message: a megabyte of link is still one line."""
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN - 3] + "..."


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


class LinkChecker:
    """Checks the links of one file after another, caching each target's anchors."""

    def __init__(
        self, report: Report, source: Source | None = None, on_target: TargetHook | None = None
    ) -> None:
        self.report = report
        self.source: Source = source if source is not None else DiskSource()
        self.on_target = on_target
        self._anchors = lru_cache(maxsize=2048)(self._anchors_uncached)

    def _anchors_uncached(self, path: Path) -> tuple[frozenset[str], bool] | None:
        try:
            data = self.source.read(path)
        except (OSError, ValueError):
            return None
        body, _ = markdown.split_front_matter(data.decode("utf-8", "replace"))
        found, exact = markdown.anchors_exact(body)
        return frozenset(found), exact

    def check_file(self, path: Path) -> None:
        """Read ``path`` (through the source) and check its links."""
        try:
            data = self.source.read(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            self.report.add(path, 1, "ATL002", f"cannot read this file: {why_unreadable(exc)}")
            return
        text = data.decode("utf-8", "replace")
        body, first = markdown.split_front_matter(text)
        self.check_text(path, body, first)

    def check_text(self, path: Path, text: str, first_line: int = 1) -> None:
        own: tuple[set[str], bool] | None = None
        for link in markdown.links(text, first_line):
            parts = split_target(link.target)
            if parts is None:
                continue
            path_part, fragment = parts
            if not path_part:
                if fragment is None:
                    continue
                if own is None:
                    own = markdown.anchors_exact(text)
                if fragment not in own[0]:
                    self._bad_anchor(path, link, "this file", fragment, *own)
                continue
            target = resolve(path, path_part)
            if not (self.source.is_file(target) or self.source.is_dir(target)):
                self.report.add(
                    path, link.line, "ATL010",
                    f"broken link '{_cut(link.target)}': {_cut(self._shown(target))} does "
                    "not exist",
                )
                continue
            if fragment is not None and is_markdown(target) and self.source.is_file(target):
                found = self._anchors(target)
                if found is not None and fragment not in found[0]:
                    self._bad_anchor(path, link, self._shown(target), fragment, *found)
            if self.on_target is not None:
                self.on_target(path, link.line, link.target, target)

    def check_files(self, paths: Iterable[Path]) -> None:
        for path in paths:
            self.report.files += 1
            self.check_file(path)

    def _shown(self, target: Path) -> str:
        return self.report.show(target)

    def _bad_anchor(
        self, path: Path, link: markdown.Link, where: str, fragment: str,
        known: Collection[str], exact: bool = True,
    ) -> None:
        import difflib

        from atlas_files.check.findings import CODES

        close: list[str] = []
        # difflib is quadratic in the words' lengths: suggest only among few, short ones.
        if len(known) <= _MAX_SUGGEST_FROM and len(fragment) <= _MAX_SUGGEST_CHARS:
            close = difflib.get_close_matches(fragment, sorted(known), n=1, cutoff=0.6)
        hint = CODES["ATL011"].hint + (f"; did you mean #{close[0]}?" if close else "")
        caveat = "" if exact else (
            f" (it has over {markdown.MAX_RENDERED_HEADINGS} headings, or one over "
            f"{markdown.MAX_RENDERED_CHARS} characters, with markup: too many to render, so "
            "its anchors were worked out from the plain text and may differ from the site's)")
        self.report.add(
            path, link.line, "ATL011",
            f"broken anchor '{_cut(link.target)}': {where} has no heading with anchor "
            f"#{_cut(fragment)}{caveat}",
            hint,
        )
