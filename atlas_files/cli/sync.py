"""`atlas sync`: the record and its git remote, one exchange."""

from __future__ import annotations

import click

from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json
from atlas_files.sync import NOT_TRAVELLING
from atlas_files.sync.paths import kind
from atlas_files.sync.run import sync as run_sync

SYNC_HELP = f"""Sync the record with its git remote: commit what atlas wrote here, fetch,
integrate, push.

The record must be a git work tree: a repository of its own, or a branch of its own
checked out as a worktree beside a code repository (docs/sync.md). `sync:` in atlas.yaml
names the remote and branch (default: origin, and the branch checked out); with
`auto: true` every write fetches first and pushes after, and reads fetch when the last
fetch is older than `fetch_every` (default 30s).

Only what atlas writes inside the record is committed: versions, decisions, corrections,
lease generations, atlas.yaml, the README, the .gitignore. History is append-only: if
either side changed or deleted a published file, nothing is pushed (exit 1). A push never
forces; a push that lost the race fetches and tries again. A version written here that
another machine published first is kept, byte for byte, as a draft in .atlas-drafts/
(exit 3, naming the winner and the command to write it again); a lease change that lost
exits 4.

{NOT_TRAVELLING}

Exit codes: 0 synced, 1 published history was changed (nothing pushed), 2 a git or setup
problem, 3 a version lost the race (kept as a draft), 4 a lease change lost the race.
"""


def _files(paths: tuple[str, ...]) -> str:
    shown = [kind(p).describe() if kind(p).history else p for p in paths[:8]]
    more = f" and {len(paths) - 8} more" if len(paths) > 8 else ""
    return f"{len(paths)} file{'s' * (len(paths) != 1)}: {', '.join(shown)}{more}"


@click.command(help=SYNC_HELP)
@json_option
@pass_ctx
def sync(ctx: Invocation, as_json: bool) -> None:
    report = run_sync(ctx.worker)
    if as_json:
        emit_json(report.to_json())
        return
    where = f"{report.remote}/{report.branch}"
    head = (report.head or "")[:12]
    if report.came_in or report.went_out:
        click.echo(f"synced with {where} (head {head})")
    else:
        click.echo(f"up to date with {where} (head {head})")
    if report.came_in:
        click.echo(f"came in: {_files(report.came_in)}")
    if report.went_out:
        click.echo(f"went out: {_files(report.went_out)}")
    if report.retries:
        click.echo(f"{report.retries} push(es) lost the race and were tried again")
    for note in report.recovered:
        click.echo(f"recovered from a sync that was killed: {note}")
    if report.left_out:
        click.echo(f"not synced (not written by atlas): {', '.join(report.left_out[:8])}"
                   + (f" and {len(report.left_out) - 8} more" if len(report.left_out) > 8
                      else ""))
    if report.drafts:
        click.echo(f"drafts waiting (never pushed; merge and write them, then delete): "
                   f"{', '.join(report.drafts)}")
