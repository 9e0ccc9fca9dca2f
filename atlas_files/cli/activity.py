"""`atlas activity`: recent commits on every branch of the code repository, and the path
leases around them."""

from __future__ import annotations

from typing import Any

import click

from atlas_files.api import Worker
from atlas_files.api import activity as api
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json, print_warning
from atlas_files.facts import timeutil
from atlas_files.facts.errors import NotFound


def _worker(ctx: Invocation) -> Worker | None:
    """The record is optional here: without one, commits are still worth seeing. One that
    was named (--record, ATLAS_RECORD) and is missing is still an error."""
    try:
        return ctx.worker
    except NotFound:
        if ctx.record_path:
            raise
        return None


@click.command()
@click.option("--paths", "paths", multiple=True, metavar="GLOB",
              help="Only commits touching these paths (repeatable; relative to the "
              "repository root: a file, a folder, or a glob like src/**/*.py), and the "
              "leases covering them.")
@click.option("--since", default=api.DEFAULT_SINCE, show_default=True, metavar="DURATION",
              help="How far back: 90m, 24h, 7d.")
@click.option("--repo", metavar="DIR",
              help="The git repository (default: the one holding the current folder).")
@click.option("--limit", type=click.IntRange(min=0), default=api.DEFAULT_LIMIT,
              show_default=True, metavar="N", help="Commits listed (0: all); `total` counts all.")
@json_option
@pass_ctx
def activity(ctx: Invocation, paths: tuple[str, ...], since: str, repo: str | None,
             limit: int, as_json: bool) -> None:
    """Who committed what lately, on every branch, and who holds leases on which paths.

    Commits on all refs (other branches count: the other session is rarely on yours)
    within --since, newest first, with author, age, subject and files; with --paths only
    those touching them, plus the unexpired leases covering them (from the record, if one
    is found). Uses the `git` command line and your git config. Limits: a session that
    took no lease and has not committed yet is invisible here; so are branches this clone
    has not fetched.
    """
    result = api.activity(_worker(ctx), paths=paths, since=since, repo=repo, limit=limit)
    if as_json:
        emit_json(result.to_json())
        return
    data = result.to_json()
    for problem in result.problems:
        print_warning(problem)
    where = f" touching {', '.join(result.paths)}" if result.paths else ""
    click.echo(f"{data['total']} commit(s) on all branches of {result.repo} in the last "
               f"{since}{where}, newest first:")
    for c in data["commits"]:
        _commit(c)
    if data["total"] > data["shown"]:
        click.echo(f"  and {data['total'] - data['shown']} older (--limit 0 lists all)")
    _leases(result)
    click.echo("")
    click.echo(click.wrap_text(api.LIMITS, 92))


def _commit(c: dict[str, Any]) -> None:
    age = timeutil.format_duration(max(0, c["age_s"]))
    click.echo(f"  {age:>6} ago  {c['author']} <{c['email']}>  on {c['ref']}  "
               f"{c['sha'][:10]}  {c['subject']}")
    more = f" (+{c['files_more']} more)" if c["files_more"] else ""
    if c["files"]:
        click.echo(f"           {', '.join(c['files'])}{more}")


def _leases(result: api.Activity) -> None:
    if result.leases is None:
        click.echo("no record found (--record, ATLAS_RECORD or an atlas.yaml above this "
                   "folder), so no leases are shown.")
        return
    what = "covering these paths" if result.paths else "on repository paths"
    if not result.leases:
        click.echo(f"no unexpired lease {what}.")
        return
    click.echo(f"unexpired leases {what}:")
    for lease in result.leases:
        left = timeutil.format_duration(lease.expires_in_s or 0)
        click.echo(f"  {lease.resource}: held by {lease.holder} for {left} more: {lease.why}")
        click.echo(f"      paths: {', '.join(lease.paths)}")
