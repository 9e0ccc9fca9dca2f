"""What every command prints and how it fails, without click: the full CLI
(cli/entry.py) and the commands answered before click is imported (fast/) share it.

A failure is one or two plain lines on stderr (``atlas: error: ...``, ``atlas: hint:
...``) and its exit code; with ``--json`` also one document on stdout, ``{"error":
{"kind", "message", "hint", "exit_code"}}``, so a program reading stdout never gets
nothing. Both streams pass the terminal filter (fast/terminal.py) while a command runs.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from atlas_files.facts.errors import AtlasError, document
from atlas_files.facts.text import escape_controls


def echo(text: str, err: bool = False) -> None:
    """``text`` and a newline on stdout (``err``: stderr), flushed at once."""
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def emit_json(data: Any) -> None:
    """One JSON document on stdout. json.dumps escapes C0 controls but passes DEL, C1
    controls, bidi overrides and lone surrogates raw; ``escape_controls`` writes those as
    ``\\uXXXX``, which is the same value in JSON, so the document is safe on a terminal
    wherever it is printed from (the filter of ``main`` is not the only way in)."""
    echo(escape_controls(json.dumps(data, indent=2, ensure_ascii=False, default=str)))


def say(line: str) -> None:
    echo(line, err=True)


def show_warning(message: Warning | str, category: type[Warning], filename: str,
                 lineno: int, file: object = None, line: str | None = None) -> None:
    say(f"atlas: warning: {message}")


def fail(kind: str, message: str, hint: str | None, exit_code: int, as_json: bool,
         line: str | None = None) -> NoReturn:
    """Report a failure (two plain lines on stderr, or ``line``; with --json also one
    document on stdout) and exit with ``exit_code``."""
    if as_json:
        try:
            emit_json(document(kind, message, hint, exit_code))
        except OSError:
            pass  # stdout itself is what failed; stderr still says why
    say(line or f"atlas: error: {message}")
    if hint and line is None:
        say(f"atlas: hint: {hint}")
    sys.exit(exit_code)


def guarded(command: Callable[[], None], as_json: bool,
            explain: Callable[[BaseException], BaseException]) -> NoReturn:
    """Run ``command`` and exit: 0, or the failure it raised as the user sees it. An
    AtlasError is its own exit code; an OSError is the environment's refusal (read-only
    or full disk, permissions), not a bug; anything else keeps its traceback.
    ``explain``: the error a failure stands for (a record that moved meanwhile)."""
    try:
        try:
            command()
        except (AtlasError, OSError) as exc:
            raise explain(exc) from None
    except AtlasError as exc:
        fail(exc.kind, exc.message, exc.hint, exc.exit_code, as_json)
    except KeyboardInterrupt:
        fail("interrupted", "interrupted", None, 130, as_json, "atlas: interrupted")
    except BrokenPipeError:
        quiet_broken_pipe()
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) and _cwd_gone():
            fail("environment", "the current folder no longer exists (it was deleted or "
                 "moved while this shell was in it)",
                 "cd to a folder that exists, then run the command again", 2, as_json)
        where = f": {exc.filename}" if exc.filename else ""
        fail("environment", f"{exc.strerror or exc}{where}",
             "check that the record's folders exist, are writable by you, and that the "
             "disk has room", 2, as_json)
    sys.exit(0)


def _cwd_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


def quiet_broken_pipe() -> NoReturn:
    """The reader of stdout left (`atlas task ls | head -1`): no error of ours. stdout
    goes to /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)
