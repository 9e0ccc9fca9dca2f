"""`atlas status show`, answered before click is imported.

The status is what every session reads first, and click's import is about a third of
the start-up floor it is measured against (bench/bench_startup.py). ``parse`` takes
exactly the command lines this answers: the global options, then `status show` with
`--json` and `--version N` at most. Anything else (`--help`, a global option after the
command, `--version` without a whole number) goes to the full CLI (cli/status.py), whose
`status show` prints through ``show`` here, so both give the same output, errors and exit
codes.
"""

from __future__ import annotations

from typing import NamedTuple

from atlas_files.api import status as api
from atlas_files.facts import environment
from atlas_files.fast import output
from atlas_files.fast.answer import answer
from atlas_files.fast.versions import header, warn_digest


class Request(NamedTuple):
    """A command line this module answers."""

    record_path: str | None
    identity: str | None
    project: str | None
    version: int | None
    as_json: bool


def parse(found: dict[str, str | None], rest: list[str]) -> Request | None:
    """``rest`` after the global options ``found`` (launch.split_globals), if it is a
    command line of this module's; else None."""
    if rest[:2] != ["status", "show"]:
        return None
    as_json, version = False, None
    args = rest[2:]
    i = 0
    while i < len(args):
        arg, value = args[i], None
        if arg == "--json" and not as_json:
            as_json = True
        elif arg.startswith("--version=") and version is None:
            value = arg[len("--version="):]
        elif arg == "--version" and version is None and i + 1 < len(args):
            value = args[i + 1]
            i += 1
        else:
            return None
        if value is not None:
            # What click's IntRange(min=1) takes; anything else is the CLI's to refuse.
            if not (value.isascii() and value.isdigit()) or int(value) < 1:
                return None
            version = int(value)
        i += 1
    given = environment.options(found)
    return Request(given["record_path"], given["identity"], given["project"], version,
                   as_json)


def run(request: Request) -> None:
    """Answer ``request`` as the full CLI would, and exit."""
    answer(request.record_path, request.identity, request.project, None,
           lambda worker: show(api.status_show(worker, request.version), request.as_json),
           request.as_json)


def show(view: api.StatusView, as_json: bool) -> None:
    """What `atlas status show` prints, from either front end."""
    if as_json:
        output.emit_json(view.to_json())
        return
    if view.doc is None:
        output.echo(f"project {view.project} has no status yet; write the first with "
                    "`atlas status write`")
        return
    warn_digest(view.doc)
    output.echo("\n".join([*header(f"status of {view.project}:", view.doc, view.marks),
                           ""]))
    body = view.doc.body
    output.echo(body[:-1] if body.endswith("\n") else body)
