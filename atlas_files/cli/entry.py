"""The ``atlas`` command. Each command parses, calls one library function, renders, exits.

``main`` is the one top-level handler: an AtlasError becomes one or two plain lines on
stderr and its exit code; click's usage errors exit 2; anything else is a bug and keeps
its traceback. With ``--json`` among the arguments, a failure also prints one JSON
document on stdout, ``{"error": {"kind", "message", "hint", "exit_code"}}``, so a program
reading stdout never gets nothing. Everything printed passes the terminal filter
(fast/terminal.py): stored text is shown, never obeyed.
"""

from __future__ import annotations

import sys
import warnings

import click

from atlas_files.cli import app
from atlas_files.cli.app import cli
from atlas_files.facts.errors import AtlasWarning
from atlas_files.fast import output, terminal
from atlas_files.launch import split_globals, wants_json


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    split = split_globals(args)
    if split is not None and split[1][:1] == ["task"]:
        # The same answer however atlas is entered: `task ls` and `task next` are answered
        # by fast/tasks.py, as the entry point does before click is imported.
        from atlas_files.fast import tasks as fast  # noqa: PLC0415 - only for `task`

        request = fast.parse(*split)
        if request is not None:
            fast.run(request)
    saved = terminal.install()
    try:
        _main(args, wants_json(args))
    finally:
        terminal.restore(saved)


def _main(args: list[str], as_json: bool) -> None:
    # Restored on the way out, so a host process (a test, an embedding program) keeps its
    # own warning settings.
    with warnings.catch_warnings():
        warnings.simplefilter("always", AtlasWarning)
        warnings.showwarning = output.show_warning
        _run(args, as_json)


def _run(args: list[str], as_json: bool) -> None:
    app.current = None

    def command() -> None:
        try:
            cli.main(args=args, prog_name="atlas", standalone_mode=False)
        except click.exceptions.Abort:
            output.fail("interrupted", "interrupted", None, 130, as_json, "atlas: interrupted")
        except click.UsageError as exc:
            # Two plain lines like every other user error, not click's four-line block.
            where = exc.ctx.command_path if exc.ctx is not None else "atlas"
            output.fail("usage", exc.format_message(), f"see `{where} --help`", 2, as_json)
        except click.ClickException as exc:
            output.fail("bad_input", exc.format_message(), None, exc.exit_code, as_json)
        except SystemExit as exc:
            # click turns a closed stdout (`atlas history plan | head -1`) into exit 1,
            # which here would mean "check found problems"; the reader leaving is no
            # error of ours.
            if exc.code == 1 and type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):
                output.quiet_broken_pipe()
            raise

    # A read that found nothing because the record moved away says so.
    output.guarded(command, as_json,
                  lambda exc: app.current.explain(exc) if app.current else exc)
