"""One rule for the free text a user gives: a lease's why, a decision's fields, a
correction's text. Every such field is checked by ``clean_text`` so the same input is
accepted or refused the same way by every command.
"""

from __future__ import annotations

import unicodedata

from atlas_files.errors import BadInput

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
