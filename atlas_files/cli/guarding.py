"""`atlas guard` and `atlas news`: the edit-time hooks, or the same questions by hand.

With ``--hook H`` each speaks harness H's tool-call hook protocol
(``atlas_files.hooks.tools``;
the entry point answers that exact command line itself, before click loads).
"""

from __future__ import annotations

import os
import sys

import click

from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json, print_warning
from atlas_files.facts.errors import BadInput, NotFound
from atlas_files.harness.registry import CHOICES, NAMES
from atlas_files.hooks import tools as tool_hooks


@click.command()
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option("--hook", type=click.Choice(NAMES), metavar=CHOICES,
              help="Run as that harness's pre-tool hook for its file-editing tools (JSON "
              "in, JSON out): refuse, stop for a person, or add context.")
@json_option
@pass_ctx
def guard(ctx: Invocation, paths: tuple[str, ...], hook: str | None, as_json: bool) -> None:
    """Before an edit: would changing PATH... run into something?

    For each file: a file of the record itself (a published version, the status, an
    entry, a lease generation, a live row) is refused, with the atlas command that does
    what the edit meant; a file under another identity's unexpired path lease is stopped
    for a person to decide, with the holder, why, the time left and what to do instead;
    commits by another author to the file on any branch within `guard.recent` (atlas.yaml,
    default 60m) are told, and the edit goes ahead. Exit 0 (nothing, or told), 4 (a lease
    of another covers a file), 1 (a file of the record).

    Limits: only the harness's file tools pass through the hook (a shell command that
    writes a file is not seen), a file no lease covers is not protected, and leases are
    advisory.
    """
    if hook is not None:
        tool_hooks.guard_hook(hook, ctx.record_path, ctx.identity, ctx.project)
        return
    if not paths:
        raise BadInput("name the files an edit would change",
                       hint="e.g. `atlas guard src/metrics.py`; as a harness hook: "
                       "`atlas guard --hook claude`")
    from atlas_files.api import editguard  # noqa: PLC0415 - by hand only

    verdict = editguard.check_edit(list(paths), identity=ctx.identity,
                                   record=ctx.record_path, cwd=os.getcwd())
    for note in verdict.notes:
        print_warning(note)
    if as_json:
        emit_json(verdict.to_json())
    elif verdict.findings:
        click.echo(verdict.text())
    else:
        where = "" if verdict.record else " (no record found: nothing was checked)"
        click.echo(f"nothing stands in the way of editing {', '.join(paths)}{where}.\n"
                   f"{editguard.LIMITS}")
    code = {editguard.REFUSED: 1, editguard.STOPPED: 4}.get(verdict.decision, 0)
    if code:
        sys.exit(code)


@click.command()
@click.option("--hook", type=click.Choice(NAMES), metavar=CHOICES,
              help="Run as that harness's post-tool (or prompt-submit) hook: at most once "
              "every `news.every`, say what is new as context.")
@json_option
@pass_ctx
def news(ctx: Invocation, hook: str | None, as_json: bool) -> None:
    """What changed while you worked, since your session began or last heard.

    Newer versions of topics you read (by whom), corrections and retractions of what you
    read or what a version you read links to, new path leases of others on files you
    edited, and the status moving. Only others' writes count; what is said here is not
    said again. Needs a session (`atlas begin`). As a hook it looks at most once every
    `news.every` (atlas.yaml, default 3m) and says at most `news.limit` characters (600),
    counting what it cut; by hand it looks now.
    """
    if hook is not None:
        tool_hooks.news_hook(hook, ctx.record_path, ctx.identity, ctx.project)
        return
    from atlas_files.api.news import after_tool  # noqa: PLC0415 - by hand only

    worker = ctx.worker
    result = after_tool(worker.record, worker.author, force=True)
    if result is None:
        raise NotFound(f"{worker.author} has no session here: news is measured from "
                       "`atlas begin`", hint=f"run `atlas --as {worker.author} begin` first")
    if as_json:
        emit_json(result.to_json())
    else:
        click.echo(result.text or f"nothing new since {result.since}.")
