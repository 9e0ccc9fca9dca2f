"""`atlas check`: report what a hand edit got wrong, like a linter (exit 1 on any error)."""

from __future__ import annotations

import sys
from typing import Any

import click

from atlas_files.api import checks as api
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json
from atlas_files.facts.errors import BadInput


def _print(finding: Any) -> None:
    click.echo(finding.shown())


class _CheckGroup(click.Group):
    """`atlas check [PATH]...`, and `atlas check accept`: a first word that names a
    subcommand runs it, any other is a path (`./accept` checks a folder of that name)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args[:1] and args[0] in self.commands:
            ctx.meta["atlas.check.sub"] = args
            args = []
        return click.Command.parse_args(self, ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        args = ctx.meta.pop("atlas.check.sub", None)
        if args is None:
            return click.Command.invoke(self, ctx)
        sub = self.commands[args[0]]
        with sub.make_context(args[0], args[1:], parent=ctx) as sub_ctx:
            return sub.invoke(sub_ctx)


@click.group(cls=_CheckGroup, invoke_without_command=True,
             subcommand_metavar="| accept [PATH] [--yes]")
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
              help="With --links-only: run the MkDocs site's own code (its hooks: files, its "
              "macros module) for this one check, accepted or not. `atlas check accept` "
              "runs it in every check of this clone instead, while it stays as you read it.")
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
        click.echo(report.summary())
    sys.exit(0 if report.ok else 1)


@check.command("accept")
@click.argument("path", required=False, type=click.Path(), metavar="[PATH]")
@click.option("--yes", is_flag=True,
              help="Accept without asking (for a person who has read the files).")
@json_option
def accept(path: str | None, yes: bool, as_json: bool) -> None:
    """Run this clone's own MkDocs site code in every links check: accept it by content.

    A site's hooks (mkdocs.yml's hooks:) and its macros module (the macros plugin's
    module_name) are the repository's code, and they change the pages MkDocs validates.
    This shows them, and every module of the repository they import, each with its
    SHA-256, asks, and keeps the acceptance in your own ~/.config/atlas/
    accepted-site-code.json (outside the repository; never shared), for the repository
    at its real path. From then on `atlas check` and the pre-commit hooks run exactly
    that code, in capped children under the page deadline, while every digest matches;
    a changed or newly imported file stops it until you accept again. PATH: the site's
    mkdocs.yml, or a folder it is found upward from (default: here). --json prints what
    is accepted. An agent should leave this to the person who runs the clone.
    """
    seen = api.review_site_code(path)
    if not seen.files:
        raise BadInput(f"the site of {seen.mkdocs} has no code of its own to accept (no "
                       "hooks:, no macros module)", hint="nothing to do: its links are "
                       "checked without running anything")
    if not seen.needed:
        if as_json:
            emit_json(seen.to_json())
        else:
            click.echo(f"already accepted on this clone: {len(seen.files)} file(s) of "
                       f"{seen.mkdocs}")
        return
    show = click.echo if not as_json else (lambda line: click.echo(line, err=True))
    show(f"The site of {seen.mkdocs} runs this code of its repository ({seen.repository}):")
    for f in seen.files:
        mark = " (changed since you accepted)" if f in seen.changed and seen.accepted \
            else ""
        show(f"  {f.rel}  {f.role}  sha256:{f.digest or '(unreadable: ' + str(f.why) + ')'}"
             f"{mark}")
    show("Accepted, it runs with your rights (capped in memory and time) in every links "
         "check of this clone while these files stay as they are.")
    if not yes:
        if not sys.stdin.isatty():
            raise BadInput("the site's code was not accepted: there is no terminal to ask "
                           "on; nothing written", hint="read the files, then run `atlas "
                           "check accept --yes`")
        try:
            ok = click.confirm("Run this code in this clone's links checks?", default=False,
                               err=as_json)
        except click.Abort:
            ok = False
        if not ok:
            raise BadInput("the site's code was not accepted; nothing written",
                           hint="run it again and answer y, or pass --yes after reading "
                           "the files")
    done = api.accept_site_code(path, seen)
    if as_json:
        emit_json(done.to_json())
    else:
        click.echo(f"accepted (kept in {done.kept_in})")
