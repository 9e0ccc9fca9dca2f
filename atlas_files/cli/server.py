"""`atlas server start | stop | status`: the warm command server (atlas_files/server/)."""

from __future__ import annotations

from typing import Any

import click

from atlas_files.cli.app import json_option
from atlas_files.cli.render import emit_json
from atlas_files.server import serve

socket_option = click.option(
    "--socket", "socket_path", metavar="PATH",
    help="The server's socket. Default: the one ATLAS_SERVER names, else this install's "
    "own (one per Python and atlas install).")


@click.group()
def server() -> None:
    """A warm server that runs atlas commands without starting Python each time.

    Every `atlas` call starts Python and imports atlas before it does anything, which
    costs more than most commands then do; hooks and auto-synced writes pay that hundreds
    of times a session. With ATLAS_SERVER=1 in the environment, `atlas` hands its command
    line, environment, folder and standard streams to the server of its install, which
    forks a worker that already has everything imported; the command's output, exit
    status and effects are the same as without it. The first call with no server running
    runs as usual and starts one in the background; it exits after --idle seconds with no
    command.

    What it does not change: every command still reads and writes the record's files
    (nothing is cached between commands), and killing `atlas` kills the command. Only
    your own user can use the server (its socket lives in a folder only you can open).
    Linux only. ATLAS_SERVER=0, or unset, turns it off; ATLAS_SERVER=PATH names the
    socket.
    """


@server.command("start")
@click.option("--foreground", is_flag=True,
              help="Serve from this process until stopped or idle, instead of in the "
              "background.")
@click.option("--idle", type=click.IntRange(min=1), default=serve.IDLE, show_default=True,
              metavar="SECONDS", help="Exit after this long with no command.")
@socket_option
@json_option
def start(foreground: bool, idle: int, socket_path: str | None, as_json: bool) -> None:
    """Start the command server (nothing happens if one already answers)."""
    result = serve.start(socket_path, idle, foreground)
    if foreground and result["started"]:
        return  # served until stopped: nothing left to say
    _render(result, as_json, "started" if result["started"] else "already running")


@server.command("stop")
@socket_option
@json_option
def stop(socket_path: str | None, as_json: bool) -> None:
    """Stop the command server; the commands it is running finish first."""
    result = serve.stop(socket_path)
    if as_json:
        emit_json(result)
    elif result["stopped"]:
        click.echo(f"atlas server: stopped (pid {result['pid']}), socket {result['socket']}")
    else:
        click.echo(f"atlas server: none was running on {result['socket']}")


@server.command("status")
@socket_option
@json_option
def status(socket_path: str | None, as_json: bool) -> None:
    """Say whether a command server answers, and what it has done."""
    _render(serve.status(socket_path), as_json, "running")


def _render(result: dict[str, Any], as_json: bool, what: str) -> None:
    if as_json:
        emit_json(result)
    elif not result["running"]:
        click.echo(f"atlas server: not running (socket {result['socket']})")
    else:
        click.echo(f"atlas server: {what} (pid {result['pid']}, since {result['started_at']}"
                   f", {result['served']} commands served), socket {result['socket']}")
