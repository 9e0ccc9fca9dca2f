"""One rule for the free text a user gives: a lease's why, a decision's fields, a
correction's text. Every such field is checked by ``clean_text`` so the same input is
accepted or refused the same way by every command.

And one rule for text on its way out: ``escape_controls`` shows what a terminal would act
on (an agent can write anything into a file by hand) as visible escapes.

And one rule for record text on its way to a model (a briefing, the edit guard, news, the
Stop hook, an MCP result): it never speaks in atlas's voice. ``field`` and ``quoted`` put
one-line record text (an author, a summary, a lease's why, a file name) inside atlas's own
line, every line break and control shown as an escape; ``fence`` shows text of many lines
(a status body, a note kept in a session row) as a block labelled with who wrote it and
where, which nothing inside can close. docs/security.md says why it holds.
"""

from __future__ import annotations

import re
import unicodedata

from atlas_files.facts.errors import BadInput

# Unicode categories refused everywhere: control characters (BEL, ESC, NUL, ...: a
# terminal acts on them, so a stored one can rewrite what a later reader sees) and lone
# surrogates (bytes of a command line that were not UTF-8; they cannot be stored).
REFUSED_CATEGORIES = ("Cc", "Cs")


def clean_text(value: str | None, what: str, *, one_line: bool, limit: int,
               elsewhere: str = "a topic version linked with --link NAME@vN") -> str:
    """``value`` stripped; refuse it empty, too long, not UTF-8, or with control characters.

    ``one_line`` text may hold no line break of any kind; other text may hold newlines
    and tabs, and nothing else below the printable range. ``elsewhere`` says, in the
    hint, where text that does not fit belongs.
    """
    if value is None or not value.strip():
        raise BadInput(f"{what} is empty; it is required", hint=f"give {what} as text")
    text = value.strip().replace("\r\n", "\n")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(
            f"{what} is not valid UTF-8 text", hint=f"write {what} again as UTF-8 text"
        ) from None
    if one_line and len(text.splitlines()) > 1:
        raise BadInput(f"{what} must be one line",
                       hint=f"keep it to one line; put the rest in {elsewhere}")

    allowed = "" if one_line else "\n\t"
    for ch in text:
        if ch not in allowed and unicodedata.category(ch) in REFUSED_CATEGORIES:
            raise BadInput(
                f"{what} contains the control character {ch!r}",
                hint=f"write {what} without control characters",
            )
    if len(text) > limit:
        raise BadInput(
            f"{what} is {len(text)} characters, over the limit of {limit}",
            hint=f"shorten it; put the rest in {elsewhere}",
        )
    return text


# What a terminal acts on instead of showing: C0 controls but newline and tab (a carriage
# return only where it does not end a line, as "\r\n" cannot hide anything), DEL, the C1
# controls (U+009B is a one-character CSI on many terminals), the bidi overrides and
# isolates that make text read in another order than it runs (U+202A-E, U+2066-9), and
# lone surrogates (bytes that were not UTF-8, written back out raw by surrogateescape).
_UNSAFE_PATTERN = (
    "\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_UNSAFE: re.Pattern[str] | None = None


def _escaped(match: re.Match[str]) -> str:
    ch = match.group()
    # C0 in the form people know (\x1b); the rest as \uXXXX, which is also a JSON string
    # escape of the same character, so a JSON document stays valid and equal once passed
    # through (json.dumps itself escapes every C0 control, never these).
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x20 else f"\\u{ord(ch):04x}"


def escape_controls(text: str) -> str:
    """``text`` with every character a terminal would act on shown escaped (``\\x1b``,
    ``\\u202e``); newlines and tabs stay. For display only: stored text keeps its bytes."""
    global _UNSAFE
    # Every character escaped here is one str.isprintable refuses, so most output (plain
    # lines) is passed on without compiling or running the pattern.
    if text.replace("\n", "").replace("\t", "").isprintable():
        return text
    if _UNSAFE is None:
        _UNSAFE = re.compile(_UNSAFE_PATTERN)
    return _UNSAFE.sub(_escaped, text)


def decode_body(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(
            f"{source} is not UTF-8 text (byte {exc.start} cannot be decoded)",
            hint="convert it to UTF-8 and write it again",
        ) from None


# -- record text shown to a model ------------------------------------------------------------

# Everything that can end a line for some reader (str.splitlines breaks at \v, \f,
# \x1c-\x1e, \x85, U+2028 and U+2029 as well as \n and \r) and every character
# escape_controls escapes: none of them may reach a model inside one line of atlas's.
_BREAK_PATTERN = "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
_BREAKS: re.Pattern[str] | None = None
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
FENCE = "```"  # the shortest fence; a longer one where the text holds a run this long


def _escaped_break(match: re.Match[str]) -> str:
    ch = match.group()
    return _NAMED.get(ch) or _escaped(match)


def field(value: object, limit: int | None = None) -> str:
    """``value``, one line of record text, as it may stand inside a line atlas writes:
    every line break and control character shown as an escape (``\\n``, ``\\x1b``,
    ``\\u2028``), so it can never start a line of its own; cut to ``limit`` characters
    with "…"."""
    global _BREAKS
    text = str(value)
    if not text.isprintable():  # every character escaped here is one this refuses
        if _BREAKS is None:
            _BREAKS = re.compile(_BREAK_PATTERN)
        text = _BREAKS.sub(_escaped_break, text)
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    return text


def quoted(value: object, limit: int | None = None) -> str:
    """``value`` as ``field`` shows it, between double quotes it cannot close: a quote or
    a backslash inside is escaped (``\\"``, ``\\\\``), as in a JSON string."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{field(text, limit)}"'


def escape_breaks(text: str) -> str:
    """``text`` as ``escape_controls`` shows it, and U+2028 and U+2029 (line and paragraph
    separators) escaped too: its only line breaks are its newlines. A JSON document stays
    valid and equal (both are string escapes, and neither can stand outside a string)."""
    text = escape_controls(text)
    if "\u2028" in text or "\u2029" in text:
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text


def fence(text: str, label: str) -> str:
    """``text``, record text of any number of lines, as a block a model cannot take for
    atlas's own words: the line ``label:`` (shown as ``field``: name who wrote it and
    where, as ``status v3 by mallory``), then the text between two fences of backticks
    longer than any run of backticks inside it, so no line of the text can close the
    block. Controls and line breaks other than \\n are shown as escapes, so the lines
    inside are the lines the fence counts."""
    body = escape_breaks(text.replace("\r\n", "\n"))
    run = max((len(r) for r in re.findall("`+", body)), default=0) if "`" in body else 0
    mark = "`" * max(len(FENCE), run + 1)
    return f"{field(label)}:\n{mark}\n{body.rstrip(chr(10))}\n{mark}"
