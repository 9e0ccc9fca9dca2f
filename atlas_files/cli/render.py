"""Output helpers shared by the command modules."""

from __future__ import annotations

import sys

import click

from atlas_files.facts.errors import BadInput
from atlas_files.facts.text import decode_body
from atlas_files.fast.output import emit_json
from atlas_files.storage import bodies
from atlas_files.storage.documents import FRONT_MATTER_ALLOWANCE

__all__ = ["echo_body", "emit_json", "print_warning", "read_body"]


def print_warning(message: str) -> None:
    click.echo(f"atlas: warning: {message}", err=True)


def read_body(file: str | None, limit: int, allow_empty: bool = False) -> str:
    """The body of a write: ``-f FILE``, ``-f -`` or piped stdin. Must be UTF-8, and at
    most ``limit`` bytes (the record's body_limit): reading stops one byte past it and the
    front matter a whole version file may carry (taken off by the write, which then judges
    the body to the byte).

    An empty body is refused unless asked for: a harness that runs commands with stdin at
    /dev/null would otherwise publish an empty, immutable version.
    """
    body = _read_body(file, limit)
    if not body.strip() and not allow_empty:
        source = "stdin" if file in (None, "-") else file
        raise BadInput(f"the body from {source} is empty; nothing was written",
                       hint="pass the text with -f FILE or on stdin (or --allow-empty)")
    return body


def _read_body(file: str | None, limit: int) -> str:
    if file in (None, "-"):
        if file is None and sys.stdin.isatty():
            raise BadInput(
                "no body given", hint="pass -f FILE, or pipe the text in on stdin (-f -)"
            )
        return decode_body(bodies.read_stdin(limit, slack=FRONT_MATTER_ALLOWANCE),
                           "the text on stdin")
    return decode_body(bodies.read_file(file, limit, slack=FRONT_MATTER_ALLOWANCE), file)


def echo_body(body: str, *, exact: bool) -> None:
    """Print a stored body, ending in a newline. ``exact`` (`--body-only`) into a pipe or
    file writes its bytes untouched, so `atlas get NAME --body-only > FILE` is the stored
    text; to a terminal it is filtered like everything else."""
    if exact and not sys.stdout.isatty():
        data = body.encode("utf-8", "surrogateescape")
        # bytes: click writes them to the binary stream beneath, unfiltered and without
        # stripping the ANSI codes it strips from text sent to a pipe.
        click.echo(data if body.endswith("\n") else data + b"\n", nl=False)
    else:
        click.echo(body, nl=not body.endswith("\n"))
