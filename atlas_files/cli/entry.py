"""The ``atlas`` command. Each command parses, calls one library function, renders, exits.

``main`` is the one top-level handler: an AtlasError becomes one or two plain lines on
stderr and its exit code; click's usage errors exit 2; anything else is a bug and keeps
its traceback. With ``--json`` among the arguments, a failure also prints one JSON
document on stdout, ``{"error": {"kind", "message", "hint", "exit_code"}}``, so a program
reading stdout never gets nothing. Everything printed passes the terminal filter
(``cli.terminal``): stored text is shown, never obeyed.
"""

from __future__ import annotations

import os
import sys
import warnings

import click

from atlas_files.cli import app, terminal
from atlas_files.cli.app import cli
from atlas_files.cli.render import emit_json
from atlas_files.facts.errors import AtlasError, AtlasWarning, document
from atlas_files.launch import wants_json


def _say(line: str) -> None:
    # color=True: click would otherwise strip CSI codes from text sent to a pipe, hiding
    # them; the filter shows them escaped instead, as it does on a terminal.
    click.echo(line, err=True, color=True)


def _show_warning(message: Warning | str, category: type[Warning], filename: str,
                  lineno: int, file: object = None, line: str | None = None) -> None:
    _say(f"atlas: warning: {message}")


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    saved = terminal.install()
    try:
        _main(args, wants_json(args))
    finally:
        terminal.restore(saved)


def _fail(kind: str, message: str, hint: str | None, exit_code: int, as_json: bool,
          line: str | None = None) -> None:
    """Report a failure (two plain lines on stderr, or ``line``; with --json also one
    document on stdout) and exit with ``exit_code``."""
    if as_json:
        try:
            emit_json(document(kind, message, hint, exit_code))
        except OSError:
            pass  # stdout itself is what failed; stderr still says why
    _say(line or f"atlas: error: {message}")
    if hint and line is None:
        _say(f"atlas: hint: {hint}")
    sys.exit(exit_code)


def _main(args: list[str], as_json: bool) -> None:
    # Restored on the way out, so a host process (a test, an embedding program) keeps its
    # own warning settings.
    with warnings.catch_warnings():
        warnings.simplefilter("always", AtlasWarning)
        warnings.showwarning = _show_warning
        _run(args, as_json)


def _run(args: list[str], as_json: bool) -> None:
    app.current = None
    try:
        try:
            cli.main(args=args, prog_name="atlas", standalone_mode=False)
        except (AtlasError, OSError) as exc:
            # A read that found nothing because the record moved away says so.
            raise (app.current.explain(exc) if app.current else exc) from None
    except AtlasError as exc:
        _fail(exc.kind, exc.message, exc.hint, exc.exit_code, as_json)
    except click.exceptions.Abort:
        _fail("interrupted", "interrupted", None, 130, as_json, "atlas: interrupted")
    except click.UsageError as exc:
        # Two plain lines like every other user error, not click's four-line block.
        command = exc.ctx.command_path if exc.ctx is not None else "atlas"
        _fail("usage", exc.format_message(), f"see `{command} --help`", 2, as_json)
    except click.ClickException as exc:
        _fail("bad_input", exc.format_message(), None, exc.exit_code, as_json)
    except KeyboardInterrupt:
        _fail("interrupted", "interrupted", None, 130, as_json, "atlas: interrupted")
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
        if isinstance(exc, FileNotFoundError) and _cwd_gone():
            _fail("environment", "the current folder no longer exists (it was deleted or "
                  "moved while this shell was in it)",
                  "cd to a folder that exists, then run the command again", 2, as_json)
        where = f": {exc.filename}" if exc.filename else ""
        _fail("environment", f"{exc.strerror or exc}{where}",
              "check that the record's folders exist, are writable by you, and that the "
              "disk has room", 2, as_json)
    sys.exit(0)


def _cwd_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


def _quiet_broken_pipe() -> None:
    # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)
