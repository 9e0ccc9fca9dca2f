"""Which reader judges a Markdown file's links: the MkDocs site that governs it (its
``mkdocs.yml`` found upward, or the one named with ``--mkdocs``: sitelinks.py), or, outside
every site's ``docs_dir``, atlas's own reader (links.py)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files.linkcheck import siteconfig
from atlas_files.linkcheck.filesources import Source
from atlas_files.linkcheck.findings import Report
from atlas_files.linkcheck.links import LinkChecker, TargetHook

if TYPE_CHECKING:
    from atlas_files.linkcheck.sitelinks import SiteLinks


class Links:
    """Each file to the MkDocs site that governs it (its mkdocs.yml found upward, or the
    one named), or to atlas's own reader."""

    def __init__(self, report: Report, source: Source | None = None,
                 on_target: TargetHook | None = None, mkdocs: Path | None = None,
                 sites: bool = True, run_hooks: bool = False) -> None:
        self.report = report
        self.run_hooks = run_hooks
        self.fast = LinkChecker(report, source, on_target)
        self.mkdocs = mkdocs
        self.sites = sites or mkdocs is not None
        self._found: dict[Path, Path | None] = {}
        self._loaded: dict[Path, SiteLinks | None] = {}

    def _config(self, path: Path) -> Path | None:
        if not self.sites:
            return None
        return self.mkdocs or siteconfig.find(path.parent, self._found)

    def site_for(self, path: Path) -> SiteLinks | None:
        config = self._config(path)
        if config is None:
            return None
        if config not in self._loaded:
            self._loaded[config] = self._load(config)
        site = self._loaded[config]
        return site if site is not None and site.contains(path) else None

    def _load(self, config: Path) -> SiteLinks | None:
        # Python-Markdown and its extensions cost ~150 ms to import: only a check that
        # meets a mkdocs.yml pays for them.
        from atlas_files.linkcheck.sitelinks import SiteLinks  # noqa: PLC0415 - see above

        within = getattr(self.fast.source, "within", None)
        try:
            site = siteconfig.load(config, within)
        except (OSError, ValueError, RecursionError) as exc:
            self.report.add(config, 1, "ATL018", f"this MkDocs configuration cannot be read "
                            f"({exc}); the links of its pages were checked without it"[:400],
                            "make it a file MkDocs can read, naming only files inside the "
                            "repository (atlas check reads nothing else)")
            return None
        if within is not None:  # the site's own folder may be read, as far as its repository
            within.add(site.repository)
        return SiteLinks(site, self.report, self.fast.source, self.fast, self.run_hooks)

    def check_file(self, path: Path) -> None:
        site = self.site_for(path)
        if site is not None:
            site.check_file(path)
        else:
            self.fast.check_file(path)

    def check_files(self, paths: Iterable[Path]) -> None:
        paths = list(paths)
        prefetched: set[Path] = set()
        try:
            for at, path in enumerate(paths):
                self.report.files += 1
                config = self._config(path)
                site = self.site_for(path)
                if site is not None and config is not None and config not in prefetched:
                    # The site's pages that this check will render, rendered at once (in
                    # several processes where that pays) when the site is first met.
                    prefetched.add(config)
                    site.prefetch([p for p in paths[at:] if self._config(p) == config
                                   and site.contains(p)])
                self.check_file(path)
        finally:
            for site in self._loaded.values():
                if site is not None:
                    site.finish()
