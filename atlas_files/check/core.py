"""`atlas check`: find what a hand edit got wrong, in a record or in any repository.

Four entry points, one report format (see findings.py for the codes):

* ``check_record``: the whole record, or some PATHs of it, read from disk. ``fix`` stamps
  missing digests and removes crash debris, nothing else.
* ``check_staged``: for a commit (git's index): the record checks on the changed files of
  any record in the repository, immutable files changed, deleted or renamed, and Markdown
  moved or deleted while still linked.
* ``check_links``: broken relative links and anchors in any Markdown files, judged as
  the MkDocs site that governs them will build them, where one does.
* ``check_versions``: version skips in any ``*.vN.*`` family (and, staged, edits to them).

Every check reads one file at a time and turns what it cannot read into a finding: one
broken file never hides the findings in the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from atlas_files.check.routing import Links
from atlas_files.facts.errors import BadInput, NotFound
from atlas_files.linkcheck.boundary import Boundary, root_of
from atlas_files.linkcheck.filesources import DiskSource
from atlas_files.linkcheck.findings import CODES, ERROR, WARNING, Finding, Report
from atlas_files.linkcheck.links import is_markdown

# The record checks (walk, run, machines) and the commit checks (staged, gitmodes) are
# imported by the functions that use them: a links check, a pre-commit hook's most
# frequent run, spends 30 ms less on imports without them.

__all__ = [
    "CODES", "ERROR", "WARNING", "Finding", "Report", "check_links", "check_record",
    "check_staged", "check_versions", "find_record",
]

OnFinding = Callable[[Finding], None] | None


def _abs(path: str | os.PathLike[str]) -> Path:
    return Path(path).resolve()


def _given(path: str | os.PathLike[str]) -> Path:
    """A PATH as given, its folders resolved but not its last part: a PATH that is itself
    a symlink (a topic folder linked elsewhere) is checked, and reported, as that symlink,
    not as whatever it leads to."""
    plain = Path(os.path.abspath(path))
    if plain.parent == plain:
        return plain
    return plain.parent.resolve() / plain.name


def find_record(record_path: str | None = None, paths: Sequence[str] = ()) -> Path:
    """The record to check, found as every command finds it, starting from the first PATH
    (then the current folder); not opened, so a damaged atlas.yaml is a finding."""
    from atlas_files.storage.record import locate  # noqa: PLC0415 - see the imports

    try:
        return _abs(locate(record_path, starts=paths[:1]))
    except NotFound as exc:
        raise NotFound(exc.message, hint=f"{exc.hint}; to check links or version names "
                       "anywhere, use --links-only or --versions-only") from None


def check_record(
    root: Path, paths: Sequence[str | os.PathLike[str]] = (), *, fix: bool = False,
    on_finding: OnFinding = None, base: Path | None = None,
) -> Report:
    root = _abs(root)
    wanted = [_given(p) for p in paths]
    for p in wanted:
        if p != root and root not in p.parents:
            raise BadInput(f"{p} is not inside the record at {root}",
                           hint="to check links or version names outside a record, use "
                           "--links-only or --versions-only")
        if not os.path.lexists(p):
            raise NotFound(f"{p} does not exist", hint="check the path")
    from atlas_files.check import machines  # noqa: PLC0415 - see the imports
    from atlas_files.check.run import start_run  # noqa: PLC0415 - idem
    from atlas_files.check.walk import Scope, check_tree  # noqa: PLC0415 - idem

    report = Report(base=base, on_finding=on_finding)
    within = Boundary([root_of(root)])
    check_tree(start_run(root, report, DiskSource(nofollow=True, within=within), fix),
               Scope(wanted or None))
    machines.check_worktree(report, root, wanted)
    return report


def _expand(paths: Iterable[Path], keep: Callable[[str], bool]) -> list[Path]:
    """Files among ``paths``, folders walked (hidden folders such as .git skipped)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                out.extend(Path(folder) / f for f in sorted(files) if keep(f))
        elif path.exists():
            out.append(path)
        else:
            raise NotFound(f"{path} does not exist", hint="check the path")
    return out


def check_links(paths: Sequence[str | os.PathLike[str]] = (), *, on_finding: OnFinding = None,
                base: Path | None = None, mkdocs: Path | None = None,
                run_site_hooks: bool = False) -> Report:
    """Broken relative links and anchors in the Markdown files among ``paths`` (default:
    the current folder's tree), record or not; in a MkDocs site's docs_dir, as the site
    (its mkdocs.yml found upward, or ``mkdocs``) will build them. ``run_site_hooks``: run
    the sites' hooks' page events, as MkDocs does (the caller's decision, sitehooks.py)."""
    report = Report(base=base, on_finding=on_finding)
    given = [_abs(p) for p in paths] or [Path.cwd().resolve()]
    files = _expand(given, is_markdown)
    source = DiskSource(within=Boundary(root_of(p) for p in given))
    Links(report, source, mkdocs=_site_config(mkdocs), run_hooks=run_site_hooks).check_files(
        f for f in files if is_markdown(f))
    return report


def _site_config(mkdocs: Path | None) -> Path | None:
    if mkdocs is None:
        return None
    config = _abs(mkdocs)
    if not config.is_file():
        raise NotFound(f"{config} does not exist", hint="name a MkDocs configuration file "
                       "(mkdocs.yml); without --mkdocs it is found upward from each file")
    return config


def check_versions(paths: Sequence[str | os.PathLike[str]] = (), *,
                   on_finding: OnFinding = None, base: Path | None = None) -> Report:
    """Version skips in the ``*.vN.*`` families of the files among ``paths``."""
    from atlas_files.check.families import check_families, is_versioned  # noqa: PLC0415 - see the imports

    report = Report(base=base, on_finding=on_finding)
    given = [_abs(p) for p in paths] or [Path.cwd().resolve()]
    files = _expand(given, is_versioned)
    check_families(report, DiskSource(within=Boundary(root_of(p) for p in given)), files)
    return report


def check_staged(
    cwd: Path | None = None, *, mode: str = "record", record_path: str | None = None,
    paths: Sequence[str | os.PathLike[str]] = (), on_finding: OnFinding = None,
    base: Path | None = None, mkdocs: Path | None = None, run_site_hooks: bool = False,
) -> Report:
    """What the commit being made (git's index) gets wrong. ``mode``: "record" (the record
    checks on changed files, immutable files, moved links), "links" (links in ``paths`` or
    the staged Markdown, moved links) or "versions" (``*.vN.*`` families)."""
    from atlas_files.check import gitmodes, machines, staged  # noqa: PLC0415 - see the imports

    here = (cwd or Path.cwd()).resolve()
    repo = staged.repo_root(here)
    report = Report(base=base, on_finding=on_finding)
    changes = staged.staged_changes(repo)
    given = [_abs(p) for p in paths]
    if mode == "links":
        gitmodes.staged_links(report, repo, changes, given, _site_config(mkdocs),
                              run_site_hooks)
    elif mode == "versions":
        gitmodes.staged_versions(report, repo, changes, given)
    else:
        explicit = find_record(record_path) if record_path else None
        gitmodes.staged_record(report, repo, changes, given, explicit)
        machines.check_staged(report, repo, changes, given, explicit)
    return report
