"""Tool results: the document `atlas ... --json` prints, or an error the model can act on.

A success carries the document twice, as MCP asks: structured (checked by the client
against the tool's output schema) and as JSON text for clients that read only text. The
library's warnings (a retracted link, a long status, a damaged file left out) follow as
further text blocks, as the CLI prints them on stderr.

A failure is an ``isError`` result whose text starts with what kind of stop it is
(``stop:``, ``held:``, ``bad input:``, ``not found:``), then the CLI's message and hint. A
model reads the first word and knows what to do next: read and merge, wait, fix the call,
or look again. A failure carries no structured content: a client that checks structured
content against the tool's output schema (the TypeScript SDK's does) would report the
schema's missing keys instead of the refusal. The document `atlas ... --json` prints on
failure travels in the result's ``_meta`` under ``atlas/error``, for a script that wants
the kind and exit code.
"""

from __future__ import annotations

import contextvars
import json
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from mcp_types import CallToolResult, ContentBlock, TextContent

from atlas_files.facts.errors import AtlasError, AtlasWarning, document
from atlas_files.facts.text import escape_breaks, field

T = TypeVar("T")

# Where a failure's `atlas ... --json` document travels (a `_meta` key: prefix "atlas/").
ERROR_META = "atlas/error"

# The first word of a failure's text, by the error's kind ("error" for the others). A
# damaged file is said as bad input, the four words a model is told to expect: its message
# says the record needs fixing, not the call.
_WORDS = {"version_conflict": "stop", "lease_held": "held", "not_found": "not found",
          "bad_input": "bad input", "damaged": "bad input"}

# The warnings of the call running in this context; None outside a tool call.
_CAUGHT: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "atlas_mcp_warnings", default=None)
_lock = threading.Lock()


def _json_safe(doc: Any) -> Any:
    # The same values the CLI prints (its json.dumps uses default=str for paths).
    return json.loads(json.dumps(doc, default=str))


def ok(doc: Any, notes: list[str] | tuple[str, ...] = ()) -> CallToolResult:
    data = _json_safe(doc)
    # Record text is in the document: JSON escapes its newlines, and escape_breaks the
    # characters JSON leaves raw that a reader may still take for a line break.
    text = escape_breaks(json.dumps(data, ensure_ascii=False))
    content: list[ContentBlock] = [TextContent(type="text", text=text)]
    # A warning may quote a damaged file: one line of atlas's, whatever the file holds.
    content += [TextContent(type="text", text=f"warning: {field(n)}")
                for n in dict.fromkeys(notes)]
    return CallToolResult(content=content, structured_content=data)


def failure(kind: str, message: str, hint: str | None, exit_code: int = 2) -> CallToolResult:
    """An ``isError`` result: the text a model reads, and the CLI's error document (the
    same `kind`, message, hint and exit code) in ``_meta``."""
    word = _WORDS.get(kind, "error")
    # The stop sign's own message already starts with "stop:".
    lead = message if message.startswith(f"{word}:") else f"{word}: {message}"
    # The stop sign names authors, a damaged file's message quotes it: escaped, neither
    # can add a line, so the first word stays the only thing a model reads first.
    text = field(lead) + (f"\nhint: {field(hint)}" if hint else "")
    content: list[ContentBlock] = [TextContent(type="text", text=text)]
    return CallToolResult(content=content, is_error=True,
                          _meta={ERROR_META: document(kind, message, hint, exit_code)})


def from_error(exc: AtlasError) -> CallToolResult:
    return failure(exc.kind, exc.message, exc.hint, exc.exit_code)


def from_os_error(exc: OSError) -> CallToolResult:
    """The environment refused (permissions, a full disk): nothing half-done is left."""
    where = f": {exc.filename}" if exc.filename else ""
    return failure("environment", f"{exc.strerror or exc}{where}",
                   "check that the record's folders exist, are writable by the server, and "
                   "that the disk has room")


def bad_input(message: str, hint: str | None = None) -> CallToolResult:
    return failure("bad_input", message, hint)


def install_warning_capture() -> None:
    """Route the library's warnings to the tool call that raised them (a context variable
    follows each call into its worker thread); other warnings go where they went.

    Checked at every call, not set once: whoever else sets ``warnings.showwarning`` or the
    filters later (a test runner, ``catch_warnings``) would otherwise take them away."""
    with _lock:
        if not getattr(warnings.showwarning, "atlas_mcp", False):
            shown = warnings.showwarning

            def show(message: Warning | str, category: type[Warning], filename: str,
                     lineno: int, file: Any = None, line: str | None = None) -> None:
                caught = _CAUGHT.get()
                if caught is not None and issubclass(category, AtlasWarning):
                    caught.append(str(message))
                else:
                    shown(message, category, filename, lineno, file, line)

            show.atlas_mcp = True  # type: ignore[attr-defined]
            warnings.showwarning = show
        if _first_action() != "always":  # each call hears its own warnings, not once
            warnings.simplefilter("always", AtlasWarning)


def _first_action() -> str | None:
    for action, message, category, module, lineno in warnings.filters:
        if issubclass(AtlasWarning, category) and message is None and module is None \
                and not lineno:
            return action
    return None


def capturing(call: Callable[[], T]) -> Callable[[], tuple[T, list[str]]]:
    """``call`` made to return what it warned, too (run it in the call's own context)."""

    def run() -> tuple[T, list[str]]:
        install_warning_capture()
        caught: list[str] = []
        token = _CAUGHT.set(caught)
        try:
            return call(), caught
        finally:
            _CAUGHT.reset(token)

    return run
