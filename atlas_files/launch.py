"""The `atlas` command's entry point: the Stop hook's fast path, else the whole CLI.

`atlas end --hook H` runs after every turn of an agent, so it must cost little more than
starting Python. When the command line is exactly that (global options --record, --as,
--project or -p, then `end --hook H`), it is answered here, before click, the command
table and the API are imported. Any other command line, this one with anything added
(--help, a typo), goes to the full CLI, whose `end --hook` runs the same ``stop_hook``.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence

from atlas_files import hookio
from atlas_files.api import Worker
from atlas_files.api.stop import stop_check
from atlas_files.errors import AtlasError, NotFound
from atlas_files.names import is_name
from atlas_files.record import Record, locate
from atlas_files.text import escape_controls

# The global options as click reads them, with the environment variable behind each.
GLOBALS = {"--record": "record_path", "--as": "identity", "--project": "project",
           "-p": "project"}
ENVIRONMENT = {"record_path": "ATLAS_RECORD", "identity": "ATLAS_AS",
               "project": "ATLAS_PROJECT"}


def parse_stop_hook(args: Sequence[str]) -> dict[str, str | None] | None:
    """The options of an `[globals] end --hook H` command line; None for anything else."""
    found: dict[str, str | None] = {}
    i = 0
    while i < len(args):
        key, eq, value = args[i].partition("=")
        if key not in GLOBALS or (eq and key == "-p"):
            break
        if eq:
            i += 1
        elif i + 1 < len(args):
            value, i = args[i + 1], i + 2
        else:
            return None
        found[GLOBALS[key]] = value or None
    rest = list(args[i:])
    if rest[:1] != ["end"]:
        return None
    if len(rest) == 2 and rest[1].startswith("--hook="):
        rest = ["end", "--hook", rest[1].partition("=")[2]]
    if len(rest) != 3 or rest[1] != "--hook" or rest[2] not in hookio.HARNESSES:
        return None
    for key, variable in ENVIRONMENT.items():
        if key not in found:
            found[key] = os.environ.get(variable) or None
    found["harness"] = rest[2]
    return found


def _say(message: str) -> None:
    sys.stderr.write(f"atlas: {escape_controls(message)}\n")


def _out(text: str | None) -> None:
    if text is not None:
        sys.stdout.write(text + "\n")


def stop_hook(harness: str, record_path: str | None, identity: str | None,
              project: str | None) -> None:
    """Answer harness ``harness``'s turn-end hook: block a session that wrote something
    since its `atlas begin` but not the status; otherwise let it stop. Never anything
    else: outside a record, or when the check cannot be made, the stop is let through
    (and stderr says why), so a hook can never trap an agent."""
    event = hookio.read_event()
    if hookio.stop_hook_active(event):
        _out(hookio.allow(harness))  # already going on because of a block
        return
    where = hookio.cwd(event)
    try:
        root = locate(record_path, starts=[where] if where else [])
    except NotFound as exc:
        if record_path:  # a record was named and is not there: worth a word
            _say(f"{exc.message} (the hook did nothing)")
        _out(hookio.allow(harness))
        return
    if identity is not None and not is_name(identity):
        _say(f"--as {identity!r} is not an identity name: the stop was not checked")
        _out(hookio.allow(harness))
        return
    try:
        verdict = stop_check(Worker(Record(root), identity, project))
    except (AtlasError, OSError) as exc:
        _say(f"the stop was not checked: {exc}")
        _out(hookio.allow(harness))
        return
    if verdict.allow:
        if verdict.reason:
            _say(verdict.reason)
        _out(hookio.allow(harness))
    else:
        _out(hookio.block(harness, verdict.reason))


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    request = parse_stop_hook(args)
    if request is not None:
        harness = request.pop("harness") or ""
        stop_hook(harness, **request)
        sys.exit(0)
    # The CLI proper, loaded by name like the command table loads its commands: this
    # module must not import it, or the fast path would pay for all of it.
    cli_main: Callable[[list[str]], None] = importlib.import_module("atlas_files.cli").main
    cli_main(args)
