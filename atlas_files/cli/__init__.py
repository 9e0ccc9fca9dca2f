"""The ``atlas`` command. Each command parses, calls one library function, renders, exits.

``main`` is the one top-level handler: an AtlasError becomes one or two plain lines on
stderr and its exit code; click's usage errors exit 2; anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

import sys

import click

from atlas_files.errors import AtlasError


def _show_warning(message: Warning | str, category: type[Warning], filename: str,
                  lineno: int, file: object = None, line: str | None = None) -> None:
    click.echo(f"atlas: warning: {message}", err=True)


def main(argv: list[str] | None = None) -> None:
    import warnings

    from atlas_files.cli.app import cli
    from atlas_files.errors import AtlasWarning

    warnings.simplefilter("always", AtlasWarning)
    warnings.showwarning = _show_warning
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
        _quiet_broken_pipe()
    except SystemExit as exc:
        # click turns a closed stdout (`atlas history plan | head -1`) into exit 1, which
        # here would mean "check found problems"; the reader leaving is no error of ours.
        if exc.code == 1 and type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):
            _quiet_broken_pipe()
        raise
    except OSError as exc:
        # The environment refused (read-only or full disk, permissions, a file where a
        # folder should be): not a bug, and nothing half-done is left behind.
        where = f": {exc.filename}" if exc.filename else ""
        click.echo(f"atlas: error: {exc.strerror or exc}{where}", err=True)
        click.echo("atlas: hint: check that the record's folders exist, are writable by "
                   "you, and that the disk has room", err=True)
        sys.exit(2)
    sys.exit(0)


def _quiet_broken_pipe() -> None:
    import os

    # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)
