"""Validation of names and references, done before any file is touched."""

from __future__ import annotations

import re
import reprlib
from typing import NamedTuple

from atlas_files.facts.errors import BadInput

# Every pattern here is applied with fullmatch: `$` alone also matches before a trailing
# newline, which let "plan\n" pass for a name.
NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"
_NAME_RE = re.compile(NAME_PATTERN)
NAME_RULE = (
    "names are 1-100 characters of a-z, 0-9, '.', '_' and '-', start with a letter or "
    "digit, and never contain '..'"
)

# Entry ids: time-ordered plus random, so no counter is shared between writers.
ENTRY_ID_PATTERN = r"^(dec|cor)-\d{8}t\d{12}z-[0-9a-f]{8}$"
# A version number in a reference: ASCII digits (``"١"`` is a digit to ``str.isdigit``), at
# most 12 of them, so that int() never refuses one or spends long on it.
_VERSION_DIGITS_MAX = 12


def quote(value: object, limit: int = 80) -> str:
    """``value`` as an error message shows it: its repr, at most ``limit`` characters.

    Every message that quotes a value read from a file or given by a user goes through
    here. A container is never stringified whole: reprlib looks at a few items of a few
    levels, so a huge value costs no more to quote than a small one.
    """
    shape = reprlib.Repr()
    shape.maxstring = shape.maxother = shape.maxlong = limit
    shape.maxlist = shape.maxtuple = shape.maxdict = shape.maxset = 4
    shape.maxlevel = 2
    try:
        text = shape.repr(value)
    except ValueError:  # an int past Python's digit limit refuses to be shown at all
        text = f"<a {type(value).__name__} too long to show>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_name(value: str) -> bool:
    return bool(_NAME_RE.fullmatch(value)) and ".." not in value


def check_name(value: str | None, kind: str = "name") -> str:
    """Return ``value`` if it is a valid name, else raise BadInput naming the rule."""
    if value is None or value == "":
        raise BadInput(f"the {kind} is empty", hint=NAME_RULE)
    if not isinstance(value, str) or not is_name(value):  # a YAML value may be anything
        raise BadInput(f"bad {kind} {quote(value, 60)}: {NAME_RULE}",
                       hint=f"choose another {kind}")
    return value


def is_entry_id(value: str) -> bool:
    return bool(re.fullmatch(ENTRY_ID_PATTERN, value))


class VersionRef(NamedTuple):
    """``NAME@vN`` (an artifact version) or ``status@vN`` (a status version)."""

    name: str
    version: int

    @property
    def is_status(self) -> bool:
        return self.name == "status"

    def __str__(self) -> str:
        return f"{self.name}@v{self.version}"


def split_version_ref(text: str) -> tuple[str, int] | None:
    """``NAME@vN`` as (NAME, N): the one reading of that shape, everywhere a reference is
    read. None if ``text`` is not of it; NAME is not checked (see ``parse_version_ref``)."""
    name, at, number = text.partition("@v")
    if not at or not name or "@" in name or not number.isascii() or not number.isdigit() \
            or len(number) > _VERSION_DIGITS_MAX:
        return None
    return name, int(number)


def parse_version_ref(value: str) -> VersionRef | None:
    """Parse ``NAME@vN``; None if the text is not of that shape."""
    split = split_version_ref(value.strip())
    if split is None:
        return None
    name = check_name(split[0], "topic name")
    version = split[1]
    if version < 1:
        raise BadInput(f"bad reference {quote(value)}: versions start at 1")
    return VersionRef(name, version)


def parse_ref(value: str) -> VersionRef | str:
    """A reference: ``NAME@vN``, ``status@vN`` or an entry id (returned as str)."""
    text = value.strip()
    if is_entry_id(text):
        return text
    ref = parse_version_ref(text)
    if ref is None:
        raise BadInput(
            f"bad reference {quote(value)}: expected NAME@vN, status@vN or an entry id "
            "such as dec-20261129t110512123456z-1a2b3c4d",
            hint="`atlas ls` and `atlas decisions` show what can be referenced",
        )
    return ref
