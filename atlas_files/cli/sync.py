"""`atlas sync`: the record and its git remote, one exchange; `atlas sync accept`."""

from __future__ import annotations

import os

import click

from atlas_files.api import syncing as api
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json, print_warning
from atlas_files.facts import layout
from atlas_files.facts.errors import BadInput
from atlas_files.storage.config import describe_sync
from atlas_files.sync import NOT_TRAVELLING
from atlas_files.sync.accepted import HINT
from atlas_files.sync.paths import kind, listing
from atlas_files.sync.run import Review, SyncReport

SYNC_HELP = f"""Sync the record with its git remote: commit what atlas wrote here, fetch,
integrate, push.

The record must be a git work tree: a repository of its own, or a branch of its own
checked out as a worktree beside a code repository (docs/sync.md). `sync:` in atlas.yaml
names the remote and branch (default: origin, and the branch checked out); with
`auto: true` every write fetches first and pushes after, and reads fetch when the last
fetch is older than `fetch_every` (default 30s).

atlas.yaml travels with the record, so its `sync:` block is acted on only once a person
on this clone has accepted it (`atlas sync accept`); a change that comes in from the
remote waits, and is said on every sync, until accepted. The remote must be one this
clone's git config defines (`git remote -v`), never a path or URL from the record.

Only what atlas writes inside the record is committed: versions, decisions, corrections,
lease generations, atlas.yaml, the README, the .gitignore. History is append-only: if
either side changed or deleted a published file, nothing is pushed (exit 1); so too when
the remote brings in what a record never holds (a symbolic link, a submodule, git
attributes, a git folder). A push never forces; a push that lost the race fetches and
tries again. A version written here that another machine published first is kept, byte
for byte, as a draft in .atlas-drafts/ (exit 3, naming the winner and the command to
write it again) until its writer writes that topic again here; a sync says how many
drafts wait. A lease change that lost exits 4.

{NOT_TRAVELLING}

Exit codes: 0 synced, 1 published history was changed or the remote brings in what a
record never holds (nothing pushed), 2 a git or setup problem, or a sync: block not
accepted here, 3 a version lost the race (kept as a draft), 4 a lease change lost the
race.
"""


def _files(paths: tuple[str, ...]) -> str:
    shown = [kind(p).describe() if kind(p).history else p for p in paths[:8]]
    more = f" and {len(paths) - 8} more" if len(paths) > 8 else ""
    return f"{len(paths)} file{'s' * (len(paths) != 1)}: {', '.join(shown)}{more}"


def _drafts(paths: tuple[str, ...]) -> str:
    """How many drafts, and the first few, named within the drafts folder."""
    inside = [os.path.relpath(p, layout.DRAFTS) for p in paths]
    return f"{len(paths)} draft{'s' * (len(paths) != 1)} ({listing(inside)})"


def _show(report: SyncReport) -> None:
    where = f"{report.remote}/{report.branch}"
    head = (report.head or "")[:12]
    if report.came_in or report.went_out:
        click.echo(f"synced with {where} (head {head})")
    else:
        click.echo(f"up to date with {where} (head {head})")
    if report.came_in:
        click.echo(f"came in: {_files(report.came_in)}")
    for change in report.config_changes:
        click.echo(f"atlas.yaml came in: {change.sentence()}")
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
    if report.drafts_removed:
        click.echo(f"removed {_drafts(report.drafts_removed)} that a later version by the "
                   "same writer, written here since, supersedes")
    if report.drafts:
        click.echo(f"{_drafts(report.drafts)} waiting in {report.drafts_folder} (never "
                   "pushed; merge each into its topic's latest version and write that, "
                   "then delete the draft)")


@click.group(help=SYNC_HELP, invoke_without_command=True)
@json_option
@click.pass_context
def sync(click_ctx: click.Context, as_json: bool) -> None:
    if click_ctx.invoked_subcommand is not None:
        return
    invocation = click_ctx.find_object(Invocation)
    assert invocation is not None  # the top-level group always makes one
    report = api.sync(invocation.worker)
    if report.pending is not None:
        print_warning(f"{report.pending.sentence()}: {HINT}")
    if as_json:
        emit_json(report.to_json())
    else:
        _show(report)


def _lines(seen: Review) -> list[str]:
    lines = [f"atlas.yaml's sync: block for {seen.root}:",
             f"  {describe_sync(seen.in_atlas_yaml)}"]
    remote = (seen.in_atlas_yaml or {}).get("remote", "origin")
    lines.append(f"  the remote {remote} is, in this clone's git config: {seen.remote_url}")
    if not seen.ever_accepted:
        lines.append("accepted on this clone until now: nothing")
    else:
        lines.append(f"accepted on this clone until now: {describe_sync(seen.accepted)}")
        lines += [f"  change: {d}" for d in seen.differences()]
    return lines


@sync.command("accept")
@click.option("--yes", is_flag=True,
              help="Accept without asking (for a script run by a person who has read the "
              "settings).")
@json_option
@pass_ctx
def accept(ctx: Invocation, yes: bool, as_json: bool) -> None:
    """Accept atlas.yaml's sync: block on this clone, so that syncs act on it.

    atlas.yaml travels with the record: anyone who can push to the remote can change
    where this clone's writes go (another of its remotes, another branch) and whether
    writes sync by themselves. So a sync acts only on settings a person on this clone
    accepted, for this record: until then, a changed block waits (the accepted one stays
    in effect and every sync says what waits), and a block never accepted here makes
    `atlas sync` stop with exit 2. This shows the block, the URL its remote has in this
    clone's git config and what changes, asks, and keeps the acceptance in your own
    ~/.config/atlas/accepted-sync.json (outside the record; never shared). A remote the
    clone's git config does not define cannot be accepted. An agent should leave this to
    the person who runs the clone.
    """
    seen = api.review(ctx.worker)
    if not seen.needed:
        if as_json:
            emit_json(seen.to_json())
        else:
            click.echo(f"already accepted on this clone: {describe_sync(seen.in_atlas_yaml)}")
        return
    if not as_json:
        click.echo("\n".join(_lines(seen)))
    if not yes:
        try:
            ok = click.confirm("Act on these settings whenever atlas syncs this clone?",
                               default=False, err=as_json)
        except click.Abort:
            ok = False
        if not ok:
            raise BadInput("the sync settings were not accepted; nothing written",
                           hint="run it again and answer y, or pass --yes after reading "
                           "the settings")
    done = api.accept(ctx.worker)
    if as_json:
        emit_json(done.to_json())
    else:
        click.echo(f"accepted (kept in {done.kept_in})")
