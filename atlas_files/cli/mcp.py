"""`atlas mcp`: the record as an MCP server, and `atlas mcp token add|revoke|ls`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from atlas_files.cli.app import Invocation, json_option
from atlas_files.cli.render import emit_json
from atlas_files.errors import BadInput, NotFound
from atlas_files.mcp import serve, tokens
from atlas_files.mcp.server import Served

MCP_HELP = """Serve the record to MCP clients (chat and desktop apps, agents without a shell).

Over stdio (the default) the server acts as one identity, --as NAME or ATLAS_AS, required
here; a client starts it as `atlas --record PATH --as NAME mcp`. With --http HOST:PORT it
serves Streamable HTTP at /mcp to many clients, each presenting `Authorization: Bearer
TOKEN`; the token decides the identity (--as is not used), and a missing, wrong or revoked
token gets 401. HTTP needs --tokens FILE (made with `atlas mcp token add`), outside the
record and readable by you alone. Off loopback, put TLS in front.

The tools return exactly what `atlas ... --json` prints. Errors come back as tool errors
starting `stop:` (someone wrote since you read), `held:` (a lease), `bad input:` or `not
found:`, with the message and hint the CLI gives. --read-only serves only the tools that
write no document, entry or lease.
"""

TOKENS_HELP = ("The tokens file ($ATLAS_MCP_TOKENS): outside the record, mode 600; it "
               "holds only hashes.")


def _tokens_option(required: bool) -> Callable[[Any], Any]:
    return click.option("--tokens", "tokens_file", envvar="ATLAS_MCP_TOKENS", metavar="FILE",
                        required=required, type=click.Path(dir_okay=False), help=TOKENS_HELP)


def _invocation(ctx: click.Context) -> Invocation:
    inv = ctx.find_object(Invocation)
    assert inv is not None  # the top-level group always sets it
    return inv


@click.group(help=MCP_HELP, invoke_without_command=True)
@click.option("--read-only", is_flag=True,
              help="Serve only tools that write no document, entry or lease (begin, "
              "status_read, get, feed, topics, decisions, telemetry, check, and lease with "
              "list and show).")
@click.option("--http", "address", metavar="HOST:PORT",
              help="Serve Streamable HTTP at http://HOST:PORT/mcp (port 0: a free one, "
              "printed on stderr) instead of stdio. Needs --tokens.")
@_tokens_option(required=False)
@click.pass_context
def mcp(ctx: click.Context, read_only: bool, address: str | None,
        tokens_file: str | None) -> None:
    if ctx.invoked_subcommand is not None:
        if read_only or address:
            raise BadInput("--read-only and --http belong to the server, not to "
                           f"`atlas mcp {ctx.invoked_subcommand}`",
                           hint="run the server as `atlas mcp [--read-only] [--http ...]`")
        return
    inv = _invocation(ctx)
    worker = inv.worker
    project = worker.project_name  # an unknown project stops here, not at the first call
    if address is None:
        if not worker.identity:
            raise BadInput("over stdio the server acts as one identity, and none was given",
                           hint="pass --as NAME (before `mcp`) or set ATLAS_AS=NAME")
        serve.stdio(Served(str(worker.record.root), project, worker.identity, read_only))
        return
    if not tokens_file:
        raise BadInput("serving HTTP needs a tokens file: without one anyone who can reach "
                       "the port could write as anyone",
                       hint="create one with `atlas mcp token add NAME --tokens FILE`, then "
                       "pass --tokens FILE")
    served = Served(str(worker.record.root), project, None, read_only)
    serve.http(served, address, Path(tokens_file),
               lambda line: click.echo(line, err=True))


@mcp.group("token")
def token() -> None:
    """Bearer tokens for `atlas mcp --http`: each grants one identity."""


def _record_root(ctx: click.Context) -> Path | None:
    try:
        return _invocation(ctx).record.root
    except NotFound:
        return None  # no record around: nothing the file could be inside of


@token.command("add")
@click.argument("name")
@_tokens_option(required=True)
@json_option
@click.pass_context
def token_add(ctx: click.Context, name: str, tokens_file: str, as_json: bool) -> None:
    """Create a token that acts as NAME, print it once, store only its hash.

    With --json: {"identity": NAME, "token": TOKEN}. Adding a second token for NAME keeps
    the first; `atlas mcp token revoke NAME` ends all of NAME's.
    """
    secret = tokens.add(Path(tokens_file), name, _record_root(ctx))
    if as_json:
        emit_json({"identity": name, "token": secret})
        return
    click.echo(f"token for {name}, shown this once (only its hash is kept in {tokens_file}):",
               err=True)
    click.echo(secret)


@token.command("revoke")
@click.argument("name")
@_tokens_option(required=True)
@json_option
def token_revoke(name: str, tokens_file: str, as_json: bool) -> None:
    """Revoke every token of NAME; a running server refuses them from the next request."""
    count = tokens.revoke(Path(tokens_file), name)
    if as_json:
        emit_json({"identity": name, "revoked": count})
    else:
        click.echo(f"revoked {count} token{'' if count == 1 else 's'} of {name}")


@token.command("ls")
@_tokens_option(required=True)
@json_option
def token_ls(tokens_file: str, as_json: bool) -> None:
    """Who holds a token: identity, token id (the start of its hash), when it was made."""
    grants = tokens.load(Path(tokens_file))
    if as_json:
        emit_json({"tokens": [g.to_json() for g in grants]})
        return
    if not grants:
        click.echo(f"no tokens in {tokens_file}")
    for g in grants:
        click.echo(f"{g.identity:<24} {g.id}  made {g.created_at}")
