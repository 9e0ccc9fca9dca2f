"""`atlas mcp`: the record as an MCP server; `atlas mcp token add|revoke|ls`; and, for
OAuth connections, `atlas mcp pending|approve|deny`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from atlas_files.cli.app import Invocation, json_option
from atlas_files.cli.render import emit_json
from atlas_files.facts.errors import BadInput, NotFound
from atlas_files.facts.names import check_name
from atlas_files.harness import base as harness_base
from atlas_files.mcp import tokens, transports
from atlas_files.mcp.app import Served
from atlas_files.mcp.oauthstore import Store, iso, state_path

MCP_HELP = """Serve the record to MCP clients (chat and desktop apps, agents without a shell).

Over stdio (the default) the server acts as one identity, --as NAME or ATLAS_AS, required
here; a client starts it as `atlas --record PATH --as NAME mcp`. With --http HOST:PORT it
serves Streamable HTTP at /mcp to many clients, each presenting `Authorization: Bearer
TOKEN`; the token decides the identity (--as is not used), and a missing, wrong or revoked
token gets 401. HTTP needs --tokens FILE (made with `atlas mcp token add`), outside the
record and readable by you alone. Off loopback, put TLS in front.

With --oauth the server is also its own OAuth authorization server, for chat products in
a browser that cannot send a static token: each connection waits for a person, who
approves it on the server's consent page with the one-time code printed here, or with
`atlas mcp approve ID --as NAME`, and picks the identity it acts as. --public-url is the
https address clients reach (a tunnel or reverse proxy); its state lies beside --tokens.

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
@click.option("--oauth", is_flag=True,
              help="Also be an OAuth authorization server: chat products connect through "
              "the MCP authorization flow, each connection approved by a person. With "
              "--http; static tokens keep working.")
@click.option("--public-url", metavar="URL",
              help="With --oauth: the https address clients reach (scheme, host, port; no "
              "path). It is the issuer, and URL/mcp the resource. Default: the bound "
              "loopback address.")
@click.option("--redirect-uri", "redirect_uris", metavar="URI", multiple=True,
              help="With --oauth: also allow codes to be sent to URI (repeatable). Known "
              "chat products' callbacks and loopback are allowed already.")
@click.pass_context
def mcp(ctx: click.Context, read_only: bool, address: str | None,
        tokens_file: str | None, oauth: bool, public_url: str | None,
        redirect_uris: tuple[str, ...]) -> None:
    if ctx.invoked_subcommand is not None:
        if read_only or address or oauth or public_url or redirect_uris:
            raise BadInput("--read-only, --http and the OAuth options belong to the server, "
                           f"not to `atlas mcp {ctx.invoked_subcommand}`",
                           hint="run the server as `atlas mcp [--read-only] [--http ...]`")
        return
    if (public_url or redirect_uris) and not oauth:
        raise BadInput("--public-url and --redirect-uri go with --oauth",
                       hint="add --oauth, or leave them out")
    inv = _invocation(ctx)
    worker = inv.worker
    project = worker.project_name  # an unknown project stops here, not at the first call
    if address is None:
        if oauth:
            raise BadInput("--oauth serves over HTTP", hint="add --http HOST:PORT and --tokens")
        # A Claude Code plugin's server gets the identity configured for the plugin.
        identity = harness_base.identity(worker.identity)
        if not identity:
            raise BadInput("over stdio the server acts as one identity, and none was given",
                           hint="pass --as NAME (before `mcp`) or set ATLAS_AS=NAME")
        transports.stdio(Served(str(worker.record.root), project,
                           check_name(identity, "identity"), read_only))
        return
    if not tokens_file:
        raise BadInput("serving HTTP needs a tokens file: without one anyone who can reach "
                       "the port could write as anyone",
                       hint="create one with `atlas mcp token add NAME --tokens FILE`, then "
                       "pass --tokens FILE")
    served = Served(str(worker.record.root), project, None, read_only)
    options = transports.OAuth(public_url, redirect_uris) if oauth else None
    transports.http(served, address, Path(tokens_file),
               lambda line: click.echo(line, err=True), options)


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
    """Revoke every token of NAME, static and OAuth; a running server refuses them from
    the next request."""
    path = Path(tokens_file)
    count = tokens.revoke(path, name, missing_ok=True)
    state = state_path(path)
    count += Store(state).revoke_identity(name) if state.exists() else 0
    if count == 0:
        raise NotFound(f"{tokens_file} holds no token for {name}, and no OAuth grant",
                       hint=f"`atlas mcp token ls --tokens {tokens_file}` lists who has one")
    if as_json:
        emit_json({"identity": name, "revoked": count})
    else:
        click.echo(f"revoked {count} token{'' if count == 1 else 's'} of {name}")


@token.command("ls")
@_tokens_option(required=True)
@json_option
def token_ls(tokens_file: str, as_json: bool) -> None:
    """Who holds a token: identity, token id (the start of its hash), when it was made;
    then the OAuth grants: identity, grant id, client, when it was approved.

    With --json: {"tokens": [{"identity", "id", "created_at"}], "grants": [{"identity",
    "id", "created_at", "client_id", "client_name", "refresh_expires_at"}]}.
    """
    grants = tokens.load(Path(tokens_file))
    state = state_path(Path(tokens_file))
    oauth = Store(state).grants() if state.exists() else []
    if as_json:
        emit_json({"tokens": [g.to_json() for g in grants],
                   "grants": [g.to_json() for g in oauth]})
        return
    if not grants and not oauth:
        click.echo(f"no tokens in {tokens_file}")
    for g in grants:
        click.echo(f"{g.identity:<24} {g.id}  made {g.created_at}")
    for o in oauth:
        click.echo(f"{o.identity:<24} {o.id}  OAuth grant to {o.client_name[:60]!r}, "
                   f"approved {iso(o.created_at)}")


def _store(tokens_file: str) -> Store:
    path = Path(tokens_file)
    tokens.load(path)  # the tokens file must exist and be private, as for the server
    return Store(state_path(path))


@mcp.command("pending")
@_tokens_option(required=True)
@json_option
def pending(tokens_file: str, as_json: bool) -> None:
    """OAuth connection requests waiting for a person (each expires after 10 minutes).

    With --json: {"requests": [{"id", "client_name", "redirect_uri", "created_at"}]}.
    Approve only a request you started yourself: its consent page shows its id.
    """
    waiting = _store(tokens_file).pending()
    if as_json:
        emit_json({"requests": [r.to_json() for r in waiting]})
        return
    if not waiting:
        click.echo("no connection request is waiting")
    for r in waiting:
        click.echo(f"{r.id}  {r.client_name[:60]!r} -> {r.redirect_uri[:100]}  "
                   f"asked {iso(r.created_at)}")


@mcp.command("approve")
@click.argument("request_id", metavar="ID")
@click.option("--as", "identity", required=True, metavar="NAME",
              help="The identity the connection acts as (every tool call, every write).")
@_tokens_option(required=True)
@json_option
def approve(request_id: str, identity: str, tokens_file: str, as_json: bool) -> None:
    """Approve connection request ID as NAME; its consent page then sends the browser
    back to the client with a code.

    With --json: {"id", "identity", "client_name"}.
    """
    done = _store(tokens_file).approve(request_id, identity)
    if as_json:
        emit_json({"id": done.id, "identity": identity, "client_name": done.client_name})
    else:
        click.echo(f"approved {done.id}: {done.client_name[:60]!r} acts as {identity}")


@mcp.command("deny")
@click.argument("request_id", metavar="ID")
@_tokens_option(required=True)
@json_option
def deny(request_id: str, tokens_file: str, as_json: bool) -> None:
    """Refuse connection request ID; the client is told it was denied.

    With --json: {"id", "client_name", "denied": true}.
    """
    done = _store(tokens_file).deny(request_id)
    if as_json:
        emit_json({"id": done.id, "client_name": done.client_name, "denied": True})
    else:
        click.echo(f"denied {done.id}: {done.client_name[:60]!r}")
