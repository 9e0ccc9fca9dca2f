"""Validation of names and references, done before any file is touched."""

from __future__ import annotations

import re
from dataclasses import dataclass

from atlas_files.errors import BadInput

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"
_NAME_RE = re.compile(NAME_PATTERN)
NAME_RULE = (
    "names are 1-100 characters of a-z, 0-9, '.', '_' and '-', start with a letter or "
    "digit, and never contain '..'"
)

# Entry ids: time-ordered plus random, so no counter is shared between writers.
ENTRY_ID_PATTERN = r"^(dec|cor)-\d{8}t\d{12}z-[0-9a-f]{8}$"
_ENTRY_ID_RE = re.compile(ENTRY_ID_PATTERN)
_VERSION_REF_RE = re.compile(r"^(?P<name>[^@]+)@v(?P<version>\d+)$")


def is_name(value: str) -> bool:
    return bool(_NAME_RE.match(value)) and ".." not in value


def check_name(value: str | None, kind: str = "name") -> str:
    """Return ``value`` if it is a valid name, else raise BadInput naming the rule."""
    if value is None or value == "":
        raise BadInput(f"the {kind} is empty", hint=NAME_RULE)
    if not is_name(value):
        shown = value if len(value) <= 60 else value[:57] + "..."
        raise BadInput(f"bad {kind} {shown!r}: {NAME_RULE}", hint=f"choose another {kind}")
    return value


def is_entry_id(value: str) -> bool:
    return bool(_ENTRY_ID_RE.match(value))


@dataclass(frozen=True)
class VersionRef:
    """``NAME@vN`` (an artifact version) or ``status@vN`` (a status version)."""

    name: str
    version: int

    @property
    def is_status(self) -> bool:
        return self.name == "status"

    def __str__(self) -> str:
        return f"{self.name}@v{self.version}"


def parse_version_ref(value: str) -> VersionRef | None:
    """Parse ``NAME@vN``; None if the text is not of that shape."""
    m = _VERSION_REF_RE.match(value.strip())
    if not m:
        return None
    name = check_name(m.group("name"), "topic name")
    version = int(m.group("version"))
    if version < 1:
        raise BadInput(f"bad reference {value!r}: versions start at 1")
    return VersionRef(name, version)


def parse_ref(value: str) -> VersionRef | str:
    """A reference: ``NAME@vN``, ``status@vN`` or an entry id (returned as str)."""
    text = value.strip()
    if is_entry_id(text):
        return text
    ref = parse_version_ref(text)
    if ref is None:
        raise BadInput(
            f"bad reference {value!r}: expected NAME@vN, status@vN or an entry id "
            "such as dec-20261129t110512123456z-1a2b3c4d",
            hint="`atlas ls` and `atlas decisions` show what can be referenced",
        )
    return ref
