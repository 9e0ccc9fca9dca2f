"""`atlas check`: what a hand edit got wrong, as findings (never an abort per file)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files import check as checkmod
from atlas_files.check import Finding, Report
from atlas_files.facts.errors import BadInput
from atlas_files.linkcheck import siteconfig

if TYPE_CHECKING:  # imported where used: a check spends nothing on it
    from atlas_files.linkcheck import sitecode

MODES = ("record", "links", "versions")

__all__ = ["MODES", "Finding", "Report", "SiteCode", "accept_site_code", "check",
           "review_site_code"]


def check(record_path: str | os.PathLike[str] | None = None, paths: Sequence[str] = (), *,
          mode: str = "record", staged: bool = False, fix: bool = False,
          on_finding: Callable[[Finding], None] | None = None,
          base: Path | None = None, mkdocs: str | os.PathLike[str] | None = None,
          run_site_hooks: bool = False) -> Report:
    """Check the record (or ``paths`` in it), or with ``mode`` "links"/"versions" any
    Markdown or version-named files; ``staged``: the commit being made (git's index).
    ``fix`` does what is safe (stamp digests, remove old crash debris), whole-record only.
    ``mkdocs`` (links only) names the MkDocs configuration that governs the files; without
    it, links in a site's docs_dir are judged by the mkdocs.yml found upward from them.
    ``run_site_hooks`` (links only): run the MkDocs sites' own code (hooks, macros module)
    for this check, accepted or not (`atlas check accept` accepts it for every check of
    this clone); never implied by mkdocs.yml.
    The report's ``to_json()`` is `atlas check --json`; ``report.ok`` is exit 0 or 1."""
    if mode not in MODES:
        raise BadInput(f"unknown check mode {mode!r}", hint=f"one of {', '.join(MODES)}")
    if fix and (staged or mode != "record"):
        raise BadInput("--fix changes files on disk, and only in a whole-record check",
                       hint="run `atlas check --fix`, then `git add` what it stamped")
    if mkdocs is not None and mode != "links":
        raise BadInput("--mkdocs names the site whose links to check: it goes with "
                       "--links-only", hint="run `atlas check --links-only --mkdocs FILE`")
    if run_site_hooks and mode != "links":
        raise BadInput("--run-site-hooks runs a MkDocs site's hooks to check its links: it "
                       "goes with --links-only",
                       hint="run `atlas check --links-only --run-site-hooks`")
    site = None if mkdocs is None else Path(mkdocs)
    base = base or Path.cwd().resolve()
    record = None if record_path is None else str(record_path)
    if staged:
        return checkmod.check_staged(mode=mode, record_path=record, paths=paths,
                                   on_finding=on_finding, base=base, mkdocs=site,
                                   run_site_hooks=run_site_hooks)
    if mode == "links":
        return checkmod.check_links(paths, on_finding=on_finding, base=base, mkdocs=site,
                                  run_site_hooks=run_site_hooks)
    if mode == "versions":
        return checkmod.check_versions(paths, on_finding=on_finding, base=base)
    root = checkmod.find_record(record, paths)
    return checkmod.check_record(root, paths, fix=fix, on_finding=on_finding, base=base)


@dataclass(frozen=True)
class SiteCode:
    """A MkDocs site's own code, as `atlas check accept` shows it, against what this
    clone accepted (sitecode.py)."""

    mkdocs: Path
    repository: str
    files: tuple[sitecode.CodeFile, ...]
    accepted: dict[str, str] | None
    changed: tuple[sitecode.CodeFile, ...]
    kept_in: Path | None

    @property
    def needed(self) -> bool:
        """Whether there is code that is not accepted as it is now."""
        return bool(self.files) and (self.accepted is None or bool(self.changed))

    def to_json(self) -> dict[str, Any]:
        return {"mkdocs": str(self.mkdocs), "repository": self.repository,
                "files": [f.to_json() for f in self.files],
                "accepted": self.accepted, "runs": bool(self.files) and not self.needed,
                "changed": [f.rel for f in self.changed],
                "kept_in": str(self.kept_in) if self.kept_in else None}


def _site(path: str | os.PathLike[str] | None) -> siteconfig.SiteConfig:
    where = Path(path or ".").resolve()
    config = where if where.is_file() else siteconfig.find(where, {})
    if config is None:
        raise BadInput(f"no mkdocs.yml at or above {where}",
                       hint="run it in the site's folder, or name its mkdocs.yml")
    try:
        return siteconfig.load(config)
    except (OSError, ValueError, RecursionError) as exc:
        raise BadInput(f"the MkDocs configuration {config} cannot be read ({exc})"[:400],
                       hint="make it a file MkDocs can read") from None


def review_site_code(path: str | os.PathLike[str] | None = None) -> SiteCode:
    """The code of the MkDocs site at ``path`` (its mkdocs.yml, or found upward from
    it) that a links check would run, and what of it this clone accepted."""
    from atlas_files.linkcheck import sitecode  # noqa: PLC0415 - see the imports

    site = _site(path)
    now = sitecode.standing(site)
    return SiteCode(site.path, os.path.realpath(site.repository), now.files, now.accepted,
                    now.changed, sitecode.store_path())


def accept_site_code(path: str | os.PathLike[str] | None = None,
                     shown: SiteCode | None = None) -> SiteCode:
    """Accept the site's code as ``shown`` (what the person read; else as it is now) for
    every links check of this clone. BadInput for a file that cannot be read."""
    from atlas_files.linkcheck import sitecode  # noqa: PLC0415 - see the imports

    site = _site(path)
    files = (shown or review_site_code(path)).files
    unreadable = [f for f in files if f.digest is None]
    if unreadable:
        raise BadInput(f"{unreadable[0].rel} cannot be accepted: {unreadable[0].why}",
                       hint="make it a plain file inside the repository, then accept again")
    sitecode.accept(site, list(files))
    return review_site_code(path)
