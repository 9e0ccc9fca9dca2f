"""One output filter for everything `atlas` prints: text written by agents is shown, never
obeyed.

Any worker can put anything into a record file by hand: an OSC 52 sequence that writes
the reader's clipboard, an OSC 8 link whose text lies about its target, a screen clear, a
bidi override that reverses what a line seems to say. ``main`` installs ``install()``
around every command, so stdout and stderr (results, warnings, errors, the names they
quote) pass through ``escape_controls`` whatever printed them.

The filter is on whether or not the stream is a terminal: a pipe often ends in one
(`atlas ls | head`, a CI log, `less -R`). The exact bytes are for programs, which get
them from ``--json`` (valid JSON with the same values) or from `atlas get NAME
--body-only` into a pipe or file (``echo_body`` of cli/render.py); stored files are never
changed.
"""

from __future__ import annotations

import codecs
import sys
from typing import Any, TextIO

from atlas_files.facts.text import escape_controls


class EscapingStream:
    """A text stream whose every write goes through ``escape_controls``.

    A thin proxy, not a second TextIOWrapper over the same buffer: nothing is buffered
    here, so the wrapped stream can be put back at any moment without a flush.
    """

    def __init__(self, stream: TextIO) -> None:
        self.unfiltered = stream

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            # click probes with b"" to learn whether a stream is binary; it is not.
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.unfiltered.write(escape_controls(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unfiltered, name)


def install() -> tuple[TextIO | None, TextIO | None]:
    """Filter ``sys.stdout`` and ``sys.stderr``; returns what ``restore`` puts back."""
    saved = (sys.stdout, sys.stderr)
    sys.stdout = _filtered(sys.stdout)
    sys.stderr = _filtered(sys.stderr)
    return saved


def restore(saved: tuple[TextIO | None, TextIO | None]) -> None:
    sys.stdout, sys.stderr = saved


def _filtered(stream: TextIO | None) -> TextIO | EscapingStream | None:
    if stream is None or isinstance(stream, EscapingStream):
        return stream
    encoding = getattr(stream, "encoding", None) or ""
    if _is_ascii(encoding) and hasattr(stream, "reconfigure"):
        # click would bypass a stream it finds set to ASCII (PYTHONIOENCODING=ascii) and
        # write UTF-8 to the bytes beneath, past this filter; switch it as click would.
        stream.reconfigure(encoding="utf-8", errors="replace")
    return EscapingStream(stream)


def _is_ascii(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "ascii"
    except LookupError:
        return False


def unfiltered(stream: TextIO) -> TextIO:
    """The stream beneath the filter, for output of our own that must stay as it is (a
    progress bar's carriage returns and cursor codes); never for stored text."""
    return stream.unfiltered if isinstance(stream, EscapingStream) else stream
