"""`atlas status show | write | log | diff`: the status stream, read first and written last."""

from __future__ import annotations

import click

from atlas_files.api import status as api
from atlas_files.cli.app import Invocation, json_option, pass_ctx, sync_option
from atlas_files.cli.render import emit_json, print_warning, read_body
from atlas_files.cli.versions import print_diff, print_versions
from atlas_files.fast.status import show


@click.group()
def status() -> None:
    """The status stream: one short text per project saying where things stand.

    Read it first (`status show`), write it last (`status write`). Every version stays.
    """


@status.command("show")
@click.option("--version", "version", type=click.IntRange(min=1), help="An earlier version.")
@json_option
@pass_ctx
def status_show(ctx: Invocation, version: int | None, as_json: bool) -> None:
    """Show the project's current status, led by its version, author and age."""
    show(api.status_show(ctx.worker, version), as_json)


@status.command("write")
@click.option("-f", "--file", "file", metavar="FILE",
              help="Read the text from FILE ('-': stdin); at most body_limit bytes (atlas.yaml), "
              "and no more is read.")
@click.option("--expect", type=click.IntRange(min=0), metavar="N",
              help="The version you read (default: the newest you read or wrote).")
@click.option("--summary", metavar="TEXT", help="One line saying what changed.")
@click.option("--allow-empty", is_flag=True, help="Write an empty status (refused otherwise).")
@json_option
@sync_option
@pass_ctx
def status_write(ctx: Invocation, file: str | None, expect: int | None, summary: str | None,
                 allow_empty: bool, as_json: bool) -> None:
    """Write the next status version. Refused (exit 3) if someone wrote since you read.

    Receipts belong to an identity: sessions that share one --as share what "read"
    means. Give --expect N to state exactly which version this session read.
    """
    api.check_status_write(ctx.worker)
    body = read_body(file, ctx.record.config.body_limit, allow_empty)
    written = api.status_write(
        ctx.worker, body, expect=expect, summary=summary)
    for w in written.warnings or ():
        print_warning(w)
    if as_json:
        emit_json(written.to_json())
    else:
        click.echo(f"wrote status v{written.version} ({written.path})")


@status.command("log")
@json_option
@pass_ctx
def status_log(ctx: Invocation, as_json: bool) -> None:
    """Every status version, newest first."""
    print_versions(api.status_log(ctx.worker), as_json)


@status.command("diff")
@click.argument("old", required=False, type=click.IntRange(min=0))
@click.argument("new", required=False, type=click.IntRange(min=1))
@json_option
@pass_ctx
def status_diff(ctx: Invocation, old: int | None, new: int | None, as_json: bool) -> None:
    """Unified diff of two status versions (default: the latest against the one before)."""
    print_diff(api.status_diff(ctx.worker, old, new), as_json)
