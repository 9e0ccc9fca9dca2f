"""JSON Schema validation of one file as findings, each pointing at the line of its key."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any

from atlas_files.check import validators
from atlas_files.facts import timeutil
from atlas_files.linkcheck.findings import Report

MAX_MESSAGE = 240
_KEY_LINE_RE = re.compile(r"^\s*[\"']?([A-Za-z0-9_.-]+)[\"']?\s*:")


_SCALARS = (str, int, float, bool, type(None))


def plain(value: Any) -> Any:
    """YAML may read a bare time or date as an object; the schema speaks of strings."""
    if type(value) in _SCALARS:
        return value
    if type(value) is dict and all(
            type(k) is str and type(v) in _SCALARS for k, v in value.items()):
        return value  # the common case, a flat front matter: nothing to convert
    if isinstance(value, datetime):
        return timeutil.format_time(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def key_lines(lines: list[str], first_line: int = 1) -> dict[str, int]:
    """Top-level key -> its line number, for ``key: value`` (YAML) or ``"key": value``
    (JSON) text. The first occurrence wins."""
    out: dict[str, int] = {}
    for offset, line in enumerate(lines):
        m = _KEY_LINE_RE.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = first_line + offset
    return out


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def validate(
    report: Report,
    path: Path,
    kind: str,
    instance: Any,
    lines: Callable[[], dict[str, int]],
    default_line: int = 1,
) -> bool:
    """Report each way ``instance`` fails the schema of ``kind``; True if it passes.

    ``lines`` is called only when there is something to report, so a valid file never pays
    for finding line numbers.
    """
    instance = clip(kind, instance)
    if validators.fast_verdict(kind, instance):
        return True
    # Found invalid (or not JSON at all): jsonschema has the final word and the messages.
    errors = list(validators.messages(kind).iter_errors(instance))
    if not errors:
        return True
    where = lines()
    for err in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        steps = [str(p) for p in err.absolute_path]
        at = "/".join(steps) or "(top)"
        line = where.get(steps[0], default_line) if steps else default_line
        report.add(path, line, "ATL001", short(f"{kind} schema: {at}: {err.message}"))
    return False


def json_lines(text: str) -> Callable[[], dict[str, int]]:
    return lambda: key_lines(text.split("\n"))


def load_json(report: Report, path: Path, data: bytes, hint: str = "") -> Any | None:
    """The JSON value in ``data``, or None after reporting why it cannot be read (with
    ``hint``, if given, in place of the code's own)."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        report.add(path, 1, "ATL002", f"not UTF-8 text (byte {exc.start})", hint)
    except json.JSONDecodeError as exc:
        report.add(path, exc.lineno, "ATL002", short(f"not valid JSON: {exc.msg}"), hint)
    except RecursionError:
        report.add(path, 1, "ATL002", "not readable JSON: nested too deeply", hint)
    return None


@functools.cache
def _bounds(kind: str) -> dict[str, tuple[int | None, int | None, int | None]]:
    """Top-level key -> (maxLength, maxItems, the items' maxLength) from ``kind``'s schema."""
    props = validators.load(kind).get("properties") or {}
    out: dict[str, tuple[int | None, int | None, int | None]] = {}
    for key, sub in props.items():
        if not isinstance(sub, dict):
            continue
        items = sub.get("items")
        item_length = items.get("maxLength") if isinstance(items, dict) else None
        bounds = (sub.get("maxLength"), sub.get("maxItems"), item_length)
        if any(isinstance(b, int) for b in bounds):
            out[key] = bounds
    return out


def _cut(value: Any, most: int | None) -> Any:
    return value[: most + 1] if isinstance(most, int) and len(value) > most else value


def clip(kind: str, instance: Any) -> Any:
    """``instance`` with each string or list longer than its schema allows cut to one past
    the bound. Still invalid, so still reported, but a pattern is never run over a
    megabyte: some of the schemas' patterns (a decision's one-line topic) backtrack, and
    would take minutes on a long string where they take microseconds on a short one."""
    if type(instance) is not dict:
        return instance
    bounds = _bounds(kind)
    out = None
    for key, (max_length, max_items, item_length) in bounds.items():
        value = instance.get(key)
        new = value
        if isinstance(value, str):
            new = _cut(value, max_length)
        elif isinstance(value, list):
            new = [_cut(v, item_length) if isinstance(v, str) else v
                   for v in _cut(value, max_items)]
        if new is not value and new != value:
            out = dict(instance) if out is None else out
            out[key] = new
    return instance if out is None else out
