"""`atlas check`: what a hand edit got wrong, as findings (never an abort per file)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from atlas_files import check as checkmod
from atlas_files.check import Finding, Report
from atlas_files.errors import BadInput

MODES = ("record", "links", "versions")

__all__ = ["MODES", "Finding", "Report", "check"]


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
    ``run_site_hooks`` (links only): run the MkDocs sites' hooks' page events as MkDocs
    does, for a repository whose hooks the caller trusts; never implied by mkdocs.yml.
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
