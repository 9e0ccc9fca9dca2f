"""`atlas task`: add, ls, show, claim, next, done, drop, release."""

from __future__ import annotations

import click

from atlas_files.api import tasks as api
from atlas_files.api.tasks import ADVISORY
from atlas_files.cli.app import Invocation, json_option, pass_ctx, sync_option
from atlas_files.fast.tasks import line, report, show_list

TASK_HELP = f"""Work items: a ready queue of tasks whose claims are leases.

Take work with `atlas task next --for 2h` (the oldest ready task), finish it with
`atlas task done ID`. A task names what it waits for (`--after ID`): it stays blocked until
those are done. Any unique prefix of an id names a task.

{ADVISORY}

Exit codes: 2 bad input, an unknown or ambiguous id, or a blocked task (nothing written);
3 the task is done or dropped (someone finished it while you were thinking); 4 another
holds it (naming who and until when).
"""

WHEN = "DURATION"


@click.group(help=TASK_HELP)
def task() -> None:
    pass


@task.command("add")
@click.argument("title")
@click.option("--why", metavar="TEXT", help="Why it needs doing.")
@click.option("--after", multiple=True, metavar="ID",
              help="A task this one waits for (repeatable): it is blocked until that is done.")
@click.option("--paths", multiple=True, metavar="GLOB",
              help="A repository path the task touches (repeatable): leased with its claim, "
              "so the edit and commit guards protect it.")
@json_option
@sync_option
@pass_ctx
def add(ctx: Invocation, title: str, why: str | None, after: tuple[str, ...],
        paths: tuple[str, ...], as_json: bool) -> None:
    """Add a task titled TITLE (one line); prints its id."""
    view = api.add(ctx.worker, title, why, after, paths)
    report(view.state, as_json, view.to_json())


@task.command("ls")
@click.option("--ready", is_flag=True, help="Only the tasks ready to claim.")
@click.option("--all", "all_", is_flag=True, help="Done and dropped tasks too.")
@click.option("--mine", is_flag=True, help="Only the tasks you hold.")
@json_option
@pass_ctx
def ls(ctx: Invocation, ready: bool, all_: bool, mine: bool, as_json: bool) -> None:
    """The project's tasks, oldest first: by default every one not done or dropped."""
    show_list(api.ls(ctx.worker, ready=ready, all_=all_, mine=mine), ready, as_json)


@task.command("show")
@click.argument("task_id", metavar="ID")
@json_option
@pass_ctx
def show(ctx: Invocation, task_id: str, as_json: bool) -> None:
    """The task ID with its history: each claim, renewal, release, expiry and entry."""
    view = api.show(ctx.worker, task_id)
    report(view.state, as_json, view.to_json())
    if not as_json:
        for row in view.history or ():
            who = row.get("who") or "?"
            more = f" ({line(row['why'])})" if row.get("why") else ""
            gen = f" generation {row['generation']}" if row.get("generation") else ""
            click.echo(f"  {row['at']}  {row['action']:<8} {who}{gen}{more}")


@task.command("claim")
@click.argument("task_id", metavar="ID")
@click.option("--for", "duration", required=True, metavar=WHEN,
              help="How long: 45s, 90m, 2h; at most the record's lease cap. Claim again to "
              "renew.")
@json_option
@sync_option
@pass_ctx
def claim(ctx: Invocation, task_id: str, duration: str, as_json: bool) -> None:
    """Claim the task ID. Exit 4 if another holds it, 3 if it is done or dropped, 2 if it
    is blocked (the message names what blocks it)."""
    view = api.claim(ctx.worker, task_id, duration)
    report(view.state, as_json, view.to_json())


@task.command("next")
@click.option("--for", "duration", required=True, metavar=WHEN,
              help="How long: 45s, 90m, 2h; at most the record's lease cap.")
@json_option
@sync_option
@pass_ctx
def next_(ctx: Invocation, duration: str, as_json: bool) -> None:
    """Claim the oldest ready task (the next one if another claimer wins the race). With
    nothing ready: exit 0, and `{"task": null}` with --json."""
    picked = api.next_(ctx.worker, duration)
    report(picked.state, as_json, picked.to_json())


@task.command("done")
@click.argument("task_id", metavar="ID")
@click.option("--why", metavar="TEXT", help="What was done, in a line.")
@click.option("--link", metavar="REF", help="Where the work is: NAME@vN.")
@json_option
@sync_option
@pass_ctx
def done(ctx: Invocation, task_id: str, why: str | None, link: str | None,
         as_json: bool) -> None:
    """Mark the task ID done (by its holder, or by anyone while it is unclaimed; exit 4
    while another holds it, 3 if it was done or dropped already)."""
    view = api.done(ctx.worker, task_id, why, link)
    report(view.state, as_json, view.to_json())


@task.command("drop")
@click.argument("task_id", metavar="ID")
@click.option("--why", required=True, metavar="TEXT", help="Why it will not be done.")
@click.option("--link", metavar="REF", help="What replaces it: NAME@vN.")
@json_option
@sync_option
@pass_ctx
def drop(ctx: Invocation, task_id: str, why: str, link: str | None, as_json: bool) -> None:
    """Drop the task ID: it will not be done; tasks waiting for it stay blocked, saying so."""
    view = api.drop(ctx.worker, task_id, why, link)
    report(view.state, as_json, view.to_json())


@task.command("release")
@click.argument("task_id", metavar="ID")
@json_option
@sync_option
@pass_ctx
def release(ctx: Invocation, task_id: str, as_json: bool) -> None:
    """Give your claim on the task ID back: it is ready for the next taker (exit 4 while
    another holds it)."""
    view = api.release(ctx.worker, task_id)
    report(view.state, as_json, view.to_json())
