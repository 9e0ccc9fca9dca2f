"""Reading the record's JSON files (lease generations, telemetry rows, read receipts) as
what they may be: damaged by a hand edit, a bad merge, a full disk or a hostile writer.

Every such file is read through ``loads``/``read``, and every field a reader relies on
through the typed checks below, so that damage surfaces as one exception, ``JSONDamage``
(a ValueError whose text says what is wrong, in words), and never as whatever the JSON
parser or a later ``int()`` happens to raise: ``[`` nested 100,000 deep raises
RecursionError inside the parser, ``1e999`` reads as a float infinity that ``int()``
refuses with OverflowError, and ``true`` passes every ``isinstance(x, int)`` check.
Each reader turns a ``JSONDamage`` into its own kind of report (a damaged lease row, a
telemetry row with an error, a warning), so one damaged file never hides its neighbours.
"""

from __future__ import annotations

import errno
import json
import math
from pathlib import Path
from typing import Any

from atlas_files.storage import fsio

# Deeper than any file the record writes (a lease's `previous`, a GPU's processes: 3 or
# 4 levels) and far below the interpreter's recursion limit, so a value that passes can
# be printed, compared and re-encoded without recursing into a crash.
MAX_DEPTH = 32
# A generation or a telemetry row is a few KiB; a receipt row holds one line per topic
# read. A file far larger was not written by atlas and is refused unread.
DEFAULT_LIMIT = 16 << 20


class JSONDamage(ValueError):
    """A JSON record file, or one of its fields, that cannot be read as its kind."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONDamage(f"the number {text[:24]} is out of range (it reads as infinity)")
    return value


def _constant(name: str) -> float:
    # NaN and Infinity are Python's extensions to JSON; no writer of the record uses them.
    raise JSONDamage(f"{name} is not a JSON number")


def _check_depth(value: Any) -> None:
    """Walk ``value`` without recursion; refuse it if it nests deeper than MAX_DEPTH."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise JSONDamage(f"it nests more than {MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


# One decoder for every file: json.loads with these options would build one per call.
_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_constant)


def loads(data: bytes | str) -> Any:
    """The JSON value in ``data``; JSONDamage if it is not UTF-8 JSON of sane shape."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONDamage(f"it is not UTF-8 text (byte {exc.start})") from None
    try:
        value = _DECODER.decode(data)
    except JSONDamage:
        raise
    except RecursionError:
        raise JSONDamage("it nests too deeply to be read") from None
    except json.JSONDecodeError as exc:
        raise JSONDamage(f"it is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except (ValueError, OverflowError) as exc:  # e.g. an integer of 5,000 digits
        raise JSONDamage(f"it is not readable JSON ({str(exc)[:120]})") from None
    # Each level of nesting opens with a bracket, so text with few of them cannot nest
    # deeper than the limit: counted in C, this spares the walk for nearly every file.
    if data.count("{") + data.count("[") > MAX_DEPTH:
        _check_depth(value)
    return value


def read_bytes(path: Path | str, limit: int = DEFAULT_LIMIT, *,
               dir_fd: int | None = None) -> bytes:
    """The bytes of the record file at ``path`` (a name in the open folder ``dir_fd``
    when given), never following a symlink.

    FileNotFoundError and NotADirectoryError pass through (the caller knows what a
    missing file means); a symlink, a folder or anything but a plain file in the file's
    place, or a file over ``limit`` bytes, is JSONDamage; any other OSError (no
    permission) passes through.
    """
    try:
        return fsio.read_nofollow(path if dir_fd is not None else Path(path), limit,
                                  dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        raise
    except fsio.FileTooLarge as exc:
        raise JSONDamage(f"it is {exc.size} bytes, more than such a file ever holds "
                         f"({exc.limit})") from None
    except (IsADirectoryError, fsio.NotAFile) as exc:
        raise JSONDamage(exc.strerror or "it is not a plain file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise JSONDamage("it is a symlink, and the record never follows one") from None
        raise


def read(path: Path | str, limit: int = DEFAULT_LIMIT) -> Any:
    """The JSON value in the file at ``path`` (see ``read_bytes`` and ``loads``)."""
    return loads(read_bytes(path, limit))


def _kind(value: Any) -> str:
    # Never repr() a container: it may be large, and printing it costs a reader's screen.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) or (isinstance(value, int) and -10**30 < value < 10**30):
        return f"the number {value}"
    if isinstance(value, int):
        return "a number of more than 30 digits"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "an object"


def need_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise JSONDamage(f"{what} should be a JSON object, not {_kind(value)}")
    return value


def need_int(value: Any, what: str) -> int:
    """A whole number; ``true`` and ``1.0`` are not (bool is an int to Python)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise JSONDamage(f"{what} should be a whole number, not {_kind(value)}")
    return value


def need_number(value: Any, what: str) -> float:
    """A finite number (loads refuses infinities already; a caller's dict may not)."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise JSONDamage(f"{what} should be a number, not {_kind(value)}")
    return float(value)


def opt_str(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise JSONDamage(f"{what} should be text or null, not {_kind(value)}")
    return value
