"""`atlas begin` and `atlas end`: the session ritual, by hand or from a harness's hooks.

With ``--hook H`` the command speaks harness H's hook protocol (``atlas_files.harness``):
JSON on
stdin, JSON only on stdout, exit 0. A hook never breaks the harness: outside a record it
does nothing, and a failure is said on stderr and lets the session go on.
"""

from __future__ import annotations

import sys

import click

from atlas_files.api import ritual
from atlas_files.cli.app import Invocation, json_option, pass_ctx, sync_option
from atlas_files.cli.render import emit_json, print_warning, read_body
from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput
from atlas_files.facts.text import field
from atlas_files.harness.registry import CHOICES, NAMES
from atlas_files.hooks import session as session_hooks


@click.command()
@click.option("--max-chars", type=click.IntRange(min=ritual.MIN_CHARS), default=6000,
              show_default=True,
              metavar="N", help="The briefing's size at most; what is cut is counted and "
              "named, with the command that lists it.")
@click.option("--hook", type=click.Choice(NAMES), metavar=CHOICES,
              help="Run as that harness's session-start hook (JSON in, JSON out).")
@json_option
@pass_ctx
def begin(ctx: Invocation, max_chars: int, hook: str | None, as_json: bool) -> None:
    """Begin a session: everything to read before acting, most urgent first.

    The project's status (read in full, and marked read), then what is new to you since
    your last session: corrections and retractions (first those of versions you read),
    topics and proposals others wrote, proposals waiting for acceptance, decisions,
    leases held now, machines whose telemetry is stale or unreachable and GPUs busy
    without a lease. Records a session row (sessions/<identity>.json, kept out of git)
    that `atlas end` and the Stop hook compare the record with.
    """
    if hook is not None:
        _begin_hook(ctx, hook, max_chars)
        return
    result = ritual.begin(ctx.worker, max_chars=max_chars)
    if as_json:
        emit_json(result.to_json())
    else:
        click.echo(result.text, nl=False)


def _begin_hook(ctx: Invocation, harness: str, max_chars: int) -> None:
    # The same answer as the entry point's fast path gives (see atlas_files.launch).
    session_hooks.start_hook(harness, ctx.record_path, ctx.identity, ctx.project,
                         max_chars=max_chars)


@click.command()
@click.option("-f", "--file", "file", metavar="FILE",
              help="Write the status from FILE ('-': stdin) first; at most body_limit bytes.")
@click.option("--status", "text", metavar="TEXT", help="Write this status first.")
@click.option("--summary", metavar="TEXT", help="One line saying what changed (with a status).")
@click.option("--release-leases", is_flag=True,
              help="Release the leases you hold, once the session ends.")
@click.option("--hook", type=click.Choice(NAMES), metavar=CHOICES,
              help="Run as that harness's turn-end (Stop) hook: block a stop after writes "
              "without a status.")
@json_option
@sync_option
@pass_ctx
def end(ctx: Invocation, file: str | None, text: str | None, summary: str | None,
        release_leases: bool, hook: str | None, as_json: bool) -> None:
    """End a session: write the status (with -f or --status), then check it was written.

    The status write is under the stop sign: if the status moved since you read it, exit
    3 and nothing is written. Exit 0 if you wrote the project's status since your `atlas
    begin`, else exit 1 with what to do. Either way it lists what others wrote while you
    worked, the leases you still hold and your open proposals.
    """
    if hook is not None:
        _end_hook(ctx, hook)
        return
    if file is not None and text is not None:
        raise BadInput("give the status either with -f FILE or with --status TEXT",
                       hint="not both")
    worker = ctx.worker
    body = text if text is not None else (
        read_body(file, worker.record.config.body_limit) if file is not None else None)
    if body is not None:
        worker.author  # noqa: B018 -- refuse a missing identity before anything is written
    result = ritual.end(
        worker, status=body, summary=summary, release_leases=release_leases)
    for note in result.warnings:
        print_warning(note)
    if as_json:
        emit_json(result.to_json())
    else:
        click.echo("\n".join(_end_lines(result)))
    if not result.ok:
        sys.exit(1)


def _end_lines(result: ritual.Ending) -> list[str]:
    if result.ok:
        what = (f"wrote status v{result.written['version']}; " if result.written else "")
        lines = [f"session of {result.identity} on {result.project} ended: {what}the status "
                 "is written"]
    else:
        lines = [f"not ended: {result.todo}"]
    if result.wrote:
        lines.append(field("you wrote: " + ", ".join(w.label for w in result.wrote)))
    if result.others:
        # Authors, summaries and a lease's action are what the files say: one line each.
        lines.append("written by others while you worked (read it before you go):")
        lines += [field(f"  {w.label} by {w.author}, {timeutil.age_of(w.at)}: {w.summary}"
                        if w.kind in ("status", "put") else f"  {w.label} by {w.author}")
                  for w in result.others]
    for lease in result.leases_released:
        lines.append(f"released lease {lease.resource}")
    if result.leases_held:
        lines.append("leases you still hold (`--release-leases` gives them back): "
                     + ", ".join(lease.resource for lease in result.leases_held))
    if result.tasks_held:
        lines.append("tasks you still hold (`atlas task done ID` or `atlas task release ID`; "
                     "a claim you leave expires by itself): "
                     + ", ".join(c.text() for c in result.tasks_held))
    if result.proposals_open:
        lines.append("your proposals waiting for acceptance: "
                     + ", ".join(f"{t.name}@v{t.version}" for t in result.proposals_open))
    if result.told_lines:
        lines.append("what the edit guard and the news hook told this session (the next "
                     "`atlas begin` says it again):")
        lines += [f"  {line}" for line in result.told_lines]
    return lines


def _end_hook(ctx: Invocation, harness: str) -> None:
    # The same answer as the entry point's fast path gives (see atlas_files.launch).
    session_hooks.stop_hook(harness, ctx.record_path, ctx.identity, ctx.project)
