"""`atlas check`: report what a hand edit got wrong, like a linter (exit 1 on any error)."""

from __future__ import annotations

import sys
from typing import Any

import click

from atlas_files.api import checks as api
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json
from atlas_files.errors import BadInput


def _print(finding: Any) -> None:
    click.echo(finding.line_text())
    click.echo(f"    {finding.severity}; hint: {finding.hint}")


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@click.option("--staged", is_flag=True,
              help="Check the commit being made (git's index): only what it changes, plus "
              "edits, deletions and renames of immutable files, and moved Markdown that is "
              "still linked. For pre-commit hooks.")
@click.option("--fix", is_flag=True,
              help="Do what is safe: stamp the digest of a hand-written version or entry "
              "that has none (and make it read-only), remove a byte-order mark from one, "
              "remove crash debris older than an hour.")
@click.option("--links-only", is_flag=True,
              help="Only broken relative links and #anchors, in any Markdown files among "
              "PATHs (default: this folder's tree), record or not.")
@click.option("--versions-only", is_flag=True,
              help="Only version skips in any *.vN.* file family among PATHs (default: this "
              "folder's tree), record or not; with --staged also edits of committed ones.")
@click.option("--mkdocs", "mkdocs", metavar="FILE", type=click.Path(),
              help="With --links-only: judge links as the MkDocs site of this mkdocs.yml will "
              "build them (default: the mkdocs.yml found upward from each file, if any).")
@click.option("--run-site-hooks", is_flag=True,
              help="With --links-only: run the MkDocs site's hooks (its hooks: files) as "
              "MkDocs does before it checks links, so pages they change are judged as built. "
              "This runs the repository's code: give it only for a repository whose hooks "
              "you trust (in its own pre-commit config), never on someone else's.")
@json_option
@pass_ctx
def check(ctx: Invocation, paths: tuple[str, ...], staged: bool, fix: bool, links_only: bool,
          versions_only: bool, mkdocs: str | None, run_site_hooks: bool, as_json: bool) -> None:
    """Check the record (or PATHs in it) for what a hand edit gets wrong.

    Each finding is one line `path:line: CODE message`, then its severity and a hint.
    Exit 1 if any finding is an error; warnings alone exit 0. Codes are stable (ATL001...);
    the table is in the docs (check.md). Links in a MkDocs site's docs_dir are judged as
    the site's mkdocs.yml builds them. Limits: links are checked offline, so links with
    a scheme (https:) and site-absolute links (/x) are skipped; links in superseded
    versions are history and are not checked; leases are judged by the writer's
    timestamps and this machine's clock; a version larger than body_limit is measured,
    not read, so its digest and links are not judged. What cannot be read (a file, a
    folder) is a finding on it, and the rest of the record is still checked.
    """
    if links_only and versions_only:
        raise BadInput("--links-only and --versions-only exclude each other",
                       hint="run the two checks one after the other")
    mode = "links" if links_only else "versions" if versions_only else "record"
    report = api.check(ctx.record_path, paths, mode=mode, staged=staged, fix=fix,
                       on_finding=None if as_json else _print, mkdocs=mkdocs,
                       run_site_hooks=run_site_hooks)
    if as_json:
        emit_json(report.to_json())
    else:
        for line in report.fixed:
            click.echo(f"fixed: {line}")
        click.echo(_summary(report))
    sys.exit(0 if report.ok else 1)


def _summary(report: Any) -> str:
    files = f"{report.files} file{'' if report.files == 1 else 's'}"
    if not report.findings:
        return f"atlas check: no findings in {files}"
    e, w = report.errors, report.warnings
    return (f"atlas check: {e} error{'' if e == 1 else 's'}, {w} warning{'' if w == 1 else 's'} "
            f"in {files}")
