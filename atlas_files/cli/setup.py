"""`atlas setup`: wire the session ritual into an agent harness's files."""

from __future__ import annotations

import click

from atlas_files.api import setup as api
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json


@click.command()
@click.argument("target", type=click.Choice(api.TARGETS), metavar="|".join(api.TARGETS))
@click.option("--as", "identity", metavar="NAME",
              help="The identity the hooks act as (default: the global --as; none: the "
              "hooks use $ATLAS_AS).")
@click.option("--dir", "directory", default=".", show_default=True, metavar="DIR",
              type=click.Path(file_okay=False), help="The project folder to set up.")
@click.option("--remove", is_flag=True, help="Take out only what setup wrote.")
@click.option("--trust", is_flag=True,
              help="codex: also have Codex record that you trust the two atlas hooks "
              "(through `codex app-server`, as its /hooks screen does), so `codex exec` "
              "runs them. The project itself must be trusted in Codex already.")
@json_option
@pass_ctx
def setup(ctx: Invocation, target: str, identity: str | None, directory: str, remove: bool,
          trust: bool, as_json: bool) -> None:
    """Hook the session ritual into an agent harness, and tell agents the protocol.

    For claude, codex, gemini and cursor: merges four hooks into DIR's
    .claude/settings.json, .codex/hooks.json, .gemini/settings.json or
    .cursor/hooks.json: `atlas begin --hook H` at session start, `atlas end --hook H` at
    each stop, `atlas guard --hook H` before each file edit and `atlas news --hook H`
    after each tool call (for codex with --as, also ATLAS_AS for its agent's shell in
    .codex/config.toml). Other settings and hooks stay as they are; running it twice
    changes nothing. A target that is a symlink leading outside DIR is refused. Every
    target also writes a marked section with the protocol into AGENTS.md, and a pointer
    to it into CLAUDE.md. With --remove, a harness loses only what setup wrote for it;
    `setup agents-md --remove` takes the sections out.

    No token or secret is written: only the commands, and the identity if given.
    """
    result = api.setup(target, directory=directory, identity=identity or ctx.identity,
                       remove=remove, trust=trust, record=ctx.record_path)
    if as_json:
        emit_json(result.to_json())
        return
    for change in result.changes:
        click.echo(f"{change.action:<9} {change.path}")
    for note in result.notes:
        click.echo(f"note: {note}")
