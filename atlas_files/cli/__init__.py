"""The ``atlas`` command. Each command parses, calls one library function, renders, exits.

``main`` is the one top-level handler: an AtlasError becomes one or two plain lines on
stderr and its exit code; click's usage errors exit 2; anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

import sys

import click

from atlas_files.errors import AtlasError


def main(argv: list[str] | None = None) -> None:
    from atlas_files.cli.app import cli

    try:
        cli.main(args=argv, prog_name="atlas", standalone_mode=False)
    except AtlasError as exc:
        click.echo(f"atlas: error: {exc.message}", err=True)
        if exc.hint:
            click.echo(f"atlas: hint: {exc.hint}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("atlas: interrupted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        # Two plain lines like every other user error, not click's four-line block.
        command = exc.ctx.command_path if exc.ctx is not None else "atlas"
        click.echo(f"atlas: error: {exc.format_message()}", err=True)
        click.echo(f"atlas: hint: see `{command} --help`", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"atlas: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("atlas: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        # The reader (`atlas ls | head`) went away; that is not an error of ours.
        sys.stderr.close()
        sys.exit(0)
    sys.exit(0)
