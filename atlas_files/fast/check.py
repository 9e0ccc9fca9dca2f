"""`atlas check --links-only`, the links pre-commit hook's command, answered before click.

Click is a fifth of a warm links check of a small site (bench/bench_links.py). ``parse``
takes exactly `atlas check --links-only` with `--staged`, `--json` and paths at most, no
global option and no ``$ATLAS_RECORD``; anything else goes to the full CLI (cli/check.py).
``run`` calls the same library function and prints the same lines as the CLI; where that
function raises or warns, it returns and the full CLI runs the command again to say so its
own way, so only the time differs.
"""

from __future__ import annotations

import sys
import warnings
from typing import NamedTuple

from atlas_files.api import checks
from atlas_files.facts import environment
from atlas_files.facts.text import escape_controls
from atlas_files.fast import output

# The options of `atlas check` answered here (any other goes to the full CLI).
FLAGS = ("--links-only", "--staged", "--json")


class Request(NamedTuple):
    """A command line this module answers."""

    paths: list[str]
    staged: bool
    as_json: bool


def parse(found: dict[str, str | None], rest: list[str]) -> Request | None:
    """``rest`` after the global options ``found`` (launch.split_globals), if it is a
    command line of this module's; else None."""
    if found or rest[:1] != ["check"] or environment.record() is not None \
            or (sys.stdout.encoding or "").lower() not in ("utf-8", "utf8"):
        return None
    # Options before the paths, as click parses a group's: past the first path, an
    # option is a path too.
    count = next((i for i, a in enumerate(rest[1:]) if a not in FLAGS), len(rest) - 1)
    flags, paths = rest[1:1 + count], list(rest[1 + count:])
    if "--links-only" not in flags or paths[:1] == ["accept"] \
            or any(p.startswith("-") or not p for p in paths):
        return None  # a subcommand, an option of the full CLI's, or `--`
    return Request(paths, "--staged" in flags, "--json" in flags)


def run(request: Request) -> None:
    """Answer ``request`` and exit, unless the check raised or warned (then return)."""
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            report = checks.check(None, request.paths, mode="links", staged=request.staged)
    except Exception:  # noqa: BLE001 - the full CLI says what went wrong, its way
        return
    if said:
        return
    try:
        if request.as_json:
            output.emit_json(report.to_json())
        else:
            output.echo(escape_controls(
                "\n".join([*(f.shown() for f in report.findings), report.summary()])))
    except BrokenPipeError:  # the reader left (`| head`): no error of ours, as in the CLI
        output.quiet_broken_pipe()
    sys.exit(0 if report.ok else 1)


