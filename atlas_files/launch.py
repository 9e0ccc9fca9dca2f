"""The `atlas` command's entry point: the hooks' fast path, the commands of fast/, else
the whole CLI.

`atlas begin --hook H` runs at the start of every agent session, `atlas end --hook H`
after every turn, `atlas guard --hook H` before every edit and `atlas news --hook H` after
every tool call, so each must cost little more than starting Python. When the command
line is exactly one of them (global options --record, --as, --project or -p, then
`begin|end|guard|news --hook H`), it is answered here, before click and the command
table are imported. Any other command line, one of these with anything added (--help,
--max-chars, a typo), goes to the full CLI, whose `begin --hook`, `end --hook`, `guard
--hook` and `news --hook` run the same functions.

So are `atlas status show` (fast/status.py), `atlas task ls`, `atlas task next`
(fast/tasks.py) and the links pre-commit hook's `atlas check --links-only`
(fast/check.py), each only on exactly its own command lines and through the same library
functions and output as the CLI.
"""

from __future__ import annotations

import _signal
import _thread
import atexit
import gc
import importlib
import os
import sys
import time

# A command handed to the command server (server/client.py) never needs typing, nor the
# re, enum and functools it imports: these names are only for the type checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import NoReturn

# The global options as click reads them, with the environment variable behind each.
GLOBALS = {"--record": "record_path", "--as": "identity", "--project": "project",
           "-p": "project"}


def split_globals(args: Sequence[str]) -> tuple[dict[str, str | None], list[str]] | None:
    """The global options before the command (by their names in ``GLOBALS``), and the
    rest of the command line; None when the last option lacks its value."""
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
    return found, list(args[i:])


# The hooks answered here, before click: verb -> (module, function). Each runs around
# every turn or tool call of an agent, so each must cost little more than Python's start.
FAST_HOOKS = {"begin": ("atlas_files.hooks.session", "start_hook"),
              "end": ("atlas_files.hooks.session", "stop_hook"),
              "guard": ("atlas_files.hooks.tools", "guard_hook"),
              "news": ("atlas_files.hooks.tools", "news_hook")}


def parse_hook(args: Sequence[str]) -> dict[str, str | None] | None:
    """The options of an `[globals] begin|end|guard|news --hook H` command line (``verb`` and
    ``harness`` among them); None for anything else."""
    split = split_globals(args)
    if split is None:
        return None
    found, rest = split
    if not rest or rest[0] not in FAST_HOOKS:
        return None
    # Here, not at the top: the command server's client (server/client.py) runs without
    # json and typing.
    from atlas_files.facts import environment  # noqa: PLC0415 - see above
    from atlas_files.harness.registry import HARNESSES  # noqa: PLC0415 - idem
    if len(rest) == 2 and rest[1].startswith("--hook="):
        rest = [rest[0], "--hook", rest[1].partition("=")[2]]
    if len(rest) != 3 or rest[1] != "--hook" or rest[2] not in HARNESSES:
        return None
    found.update(environment.options(found))
    found["verb"] = rest[0]
    found["harness"] = rest[2]
    return found


# The commands answered before click when the command line is exactly theirs: first
# word -> the module whose parse() takes it and whose run() answers it (fast/).
FAST_COMMANDS = {"task": "atlas_files.fast.tasks", "check": "atlas_files.fast.check",
                 "status": "atlas_files.fast.status"}


def main(argv: Sequence[str] | None = None) -> None:
    """The `atlas` program (``argv`` None: the process's own command line). Ctrl-C at any
    moment from here on ends it with `atlas: interrupted` and exit 130, never a traceback:
    while its modules load as well as while the command runs."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:
        _signal.signal(_signal.SIGINT, _on_interrupt)
        sys.unraisablehook = _unraisable
    try:
        _start(args)
    except KeyboardInterrupt:
        # First, before any Python call (whose start is where a pending signal is
        # delivered): a second Ctrl-C while this one is said must not become a traceback.
        if argv is None:
            _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        interrupted(wants_json(args))
    except SystemExit:
        if argv is None:
            # The command is over and the interpreter only has to exit: a Ctrl-C now
            # (in threading's shutdown, in atexit) would print a traceback, so it ends
            # the process at once instead, as it does before Python is up.
            _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
        raise
    except Exception:
        # Some extensions turn a KeyboardInterrupt raised inside them into an error of
        # their own (pydantic-core's SchemaError while the MCP modules load): after a
        # Ctrl-C, that failure is the interrupt.
        if not _interrupts:
            raise
        if argv is None:
            _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        interrupted(wants_json(args))


# The Ctrl-Cs this process received (main's own handler counts them).
_interrupts = 0


def _on_interrupt(signum: int, frame: object) -> None:
    """Python's own answer to SIGINT (KeyboardInterrupt), counted."""
    global _interrupts
    _interrupts += 1
    raise KeyboardInterrupt


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """A Ctrl-C that landed in a callback Python cannot raise from (the cleanup of a
    module's import lock, while the command's modules load) would be printed as "Exception
    ignored ... KeyboardInterrupt" and lost: it is sent again, to reach the command. Not
    from here: Python runs a signal's handler at its next instruction, which may still be
    this hook's, and a KeyboardInterrupt raised inside the hook is itself printed as
    ignored (with a traceback). A thread sends it a moment later, once the hook has
    returned; `_thread` and `time` are built in, so nothing is imported under the import
    lock whose cleanup may be calling this."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _thread.start_new_thread(_send_interrupt_soon, ())
        return
    sys.__unraisablehook__(unraisable)


def _send_interrupt_soon() -> None:
    time.sleep(0.001)
    _signal.raise_signal(_signal.SIGINT)


def wants_json(args: Sequence[str]) -> bool:
    """Whether the caller asked for JSON: ``--json`` among the options (before ``--``)."""
    options = args[: list(args).index("--")] if "--" in args else args
    return "--json" in options


def interrupted(as_json: bool) -> NoReturn:
    """Ctrl-C outside the command's own handler (while atlas starts): the same answer the
    CLI gives, ``atlas: interrupted`` and exit 130, with --json also the error document."""
    try:
        if as_json:
            import json  # noqa: PLC0415 - only on this path; hooks never pay for it

            sys.stdout.write(json.dumps({"error": {
                "kind": "interrupted", "message": "interrupted", "hint": None,
                "exit_code": 130}}) + "\n")
            sys.stdout.flush()
        sys.stderr.write("atlas: interrupted\n")
        sys.stderr.flush()
    except OSError:
        pass  # the terminal is gone too; the exit status still says it
    sys.exit(130)


def _start(args: list[str]) -> None:
    split = split_globals(args)
    if os.environ.get("ATLAS_SERVER") and (split is None or split[1][:1] != ["server"]):
        # A warm server of this install runs the command, if one answers (server/).
        from atlas_files.server import client  # noqa: PLC0415 - only with ATLAS_SERVER

        status = client.forward(args)
        if status is not None:
            client.exit_like(status)
    # Start-up (importing the CLI and the command's module) allocates tens of thousands
    # of objects and frees almost none, so the collector's passes over them during the
    # imports find nothing: it is off until the command's module is in, about 3 ms of
    # every command (measured with bench/bench_core.py).
    gc.disable()
    # The interpreter's exit ends with a full garbage collection over every object the
    # imports made (click, yaml, the API): about 7 of the 10 ms a command spends exiting.
    # Frozen at exit, they are skipped. What that gives up: finalizers of objects caught
    # in reference cycles at exit, which Python never promised to run (atlas closes its
    # files with `with`, and the standard streams are flushed regardless).
    atexit.register(gc.freeze)
    run(args)


def run(args: list[str]) -> None:
    """Run one command line: the Stop hook's fast path, else the whole CLI. Exits."""
    split = split_globals(args)
    if split is not None and not split[1]:
        # Bare `atlas` (global options at most): where to start, at once and exit 0,
        # rather than click's usage error and every command's help (which loads them all).
        from atlas_files.facts.guide import START  # noqa: PLC0415 - only here

        gc.enable()
        sys.stdout.write(START)
        sys.exit(0)
    request = parse_hook(args)
    if request is not None:
        harness = request.pop("harness") or ""
        module, function = FAST_HOOKS[request.pop("verb") or "end"]
        # Loaded by name, like the command table loads its commands: this module must
        # import neither the hook's machinery nor the CLI, or each would pay for the other
        # (and `atlas --version` for both).
        hook: Callable[..., None] = getattr(importlib.import_module(module), function)
        gc.enable()
        hook(harness, **request)
        sys.exit(0)
    # Commands agents and pre-commit run over and over, answered without click when the
    # command line is exactly theirs (fast/); any other goes on to the CLI.
    fast = FAST_COMMANDS.get(split[1][0]) if split is not None and split[1] else None
    if fast is not None:
        assert split is not None
        answering = importlib.import_module(fast)
        request = answering.parse(*split)
        if request is not None:
            gc.enable()
            answering.run(request)  # exits, or returns for the CLI to say it its way
    cli_main: Callable[[list[str]], None] = importlib.import_module("atlas_files.cli").main
    if split is not None and split[1]:
        # The command's module, loaded now so that its import is part of start-up; click
        # finds it imported. A name that is no command is left to click to refuse.
        app = importlib.import_module("atlas_files.cli.app")
        if split[1][0] in app.COMMANDS:
            app.load_command(split[1][0])
    gc.enable()
    cli_main(args)
