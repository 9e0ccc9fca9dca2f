"""The two validators of each kind's schema: jsonschema-rs for the verdict, jsonschema for
the messages.

Nearly every file a check reads is valid, so the verdict must be fast: jsonschema-rs
(Draft 2020-12, formats checked) answers it. Only a file it finds invalid is given to
python-jsonschema, which writes the messages and has the final word: a file is reported
only where jsonschema finds an error, so the fast path can cost time, never a finding that
is not there.

The two must judge alike, and they read regular expressions in different dialects:

* ``\\s`` and ``\\S`` are Python's (``str.isspace``) for jsonschema, ECMA-262's for
  jsonschema-rs (which differ on U+001C-U+001F, U+0085 and U+FEFF). Each pattern given to
  jsonschema-rs has them spelled out as Python's classes, so both read one pattern alike.
* The schemas end names with ``$(?!\\n)``: Python's ``$`` also matches before a trailing
  newline, and the look-ahead refuses one. jsonschema-rs's ``$`` is the end of the text
  only, and its look-ahead is then always true: both refuse ``"plan\\n"``.
* ``format: date-time`` is checked by jsonschema-rs itself; python-jsonschema checks it only
  with an optional package, so it is given ``is_date_time`` below, which accepts what
  jsonschema-rs accepts (RFC 3339, a leap second only at 23:59:60 UTC).

tests/check/test_check_schema.py holds the property test that they never disagree.
"""

from __future__ import annotations

import calendar
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import atlas_files
from atlas_files.facts.errors import BrokenInstall
from atlas_files.storage import schemas

# Python's whitespace (what ``\s`` matches in a str pattern), spelled out for jsonschema-rs.
_PY_SPACE = "".join(f"\\u{ord(c):04x}" for c in map(chr, range(0x3001)) if c.isspace())
_CLASS_ESCAPE_RE = re.compile(r"\\(.)")

_DATE_TIME_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?"
    r"(?:[Zz]|([+-])(\d{2}):(\d{2}))", re.ASCII)
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def rust_pattern(pattern: str) -> str:
    """``pattern`` with ``\\s`` and ``\\S`` written as the classes Python means by them
    (outside a character class; inside one they are rare and left as they are)."""
    out: list[str] = []
    depth = 0  # inside [...]
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\" and at + 1 < len(pattern):
            escaped = pattern[at + 1]
            if depth == 0 and escaped == "s":
                out.append(f"[{_PY_SPACE}]")
            elif depth == 0 and escaped == "S":
                out.append(f"[^{_PY_SPACE}]")
            else:
                out.append(pattern[at:at + 2])
            at += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        out.append(char)
        at += 1
    return "".join(out)


def _rewrite(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: (rust_pattern(v) if k == "pattern" and isinstance(v, str) else _rewrite(v))
                for k, v in schema.items()}
    if isinstance(schema, list):
        return [_rewrite(v) for v in schema]
    return schema


def is_date_time(value: object) -> bool:
    """RFC 3339 date-time as jsonschema-rs reads it (True for a non-string: formats only
    judge strings)."""
    if not isinstance(value, str):
        return True
    m = _DATE_TIME_RE.fullmatch(value)
    if m is None:
        return False
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    days = _DAYS[month - 1] + (month == 2 and calendar.isleap(year)) if 1 <= month <= 12 else 0
    if not 1 <= day <= days:
        return False
    if hour > 23 or minute > 59 or second > 60:
        return False
    if m.group(7):
        off_h, off_m = int(m.group(8)), int(m.group(9))
        if off_h > 23 or off_m > 59:
            return False
        if second == 60:
            sign = 1 if m.group(7) == "+" else -1
            utc = (hour * 60 + minute - sign * (off_h * 60 + off_m)) % (24 * 60)
            return utc == 23 * 60 + 59
    return second < 60 or (hour, minute) == (23, 59)


def load(kind: str) -> dict[str, Any]:
    # The file beside the package first: importlib.resources costs more to import than a
    # one-file commit check spends on everything else.
    path = Path(atlas_files.__file__).parent / "schemas" / f"{kind}.schema.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    except OSError:
        return schemas.load(kind)


@cache
def fast(kind: str) -> Any:
    """The jsonschema-rs validator of ``kind`` (its ``is_valid`` is the verdict)."""
    # Measured: 13-45 ms to import on a shared two-core machine, a tenth of a one-file
    # commit check; a commit of Markdown alone never validates a schema.
    try:
        import jsonschema_rs  # noqa: PLC0415 - see above
    except ImportError as exc:
        # Said once for the run, not as a finding on every file.
        raise BrokenInstall(
            f"jsonschema-rs, which atlas check validates the record with, cannot be "
            f"imported here: {exc}",
            hint="reinstall atlas-files with its dependencies (`pip install atlas-files`, "
            "without --no-deps)") from None

    return jsonschema_rs.Draft202012Validator(_rewrite(load(kind)), validate_formats=True)


@cache
def messages(kind: str) -> Any:
    """The python-jsonschema validator of ``kind``, with the same date-time check."""
    # jsonschema costs ~60 ms to import; only a file found invalid pays for it.
    import jsonschema  # noqa: PLC0415 - see above

    cls = jsonschema.Draft202012Validator
    checker = jsonschema.FormatChecker()
    for name, func in cls.FORMAT_CHECKER.checkers.items():
        checker.checkers[name] = func
    checker.checkers["date-time"] = (is_date_time, ())
    return cls(load(kind), format_checker=checker)


def fast_verdict(kind: str, instance: Any) -> bool:
    """True if jsonschema-rs finds ``instance`` valid; False if not, or if it cannot take
    the instance (a lone surrogate, a key that is not a string: not JSON)."""
    try:
        return bool(fast(kind).is_valid(instance))
    except (ValueError, TypeError, OverflowError, RecursionError):
        return False
