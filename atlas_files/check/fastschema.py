"""A fast yes-or-unsure answer to "does this instance match the schema?".

Validating a hundred thousand small files with jsonschema costs most of a check's time,
and nearly every file is valid. So each schema is compiled once into plain Python
closures for the keywords the record's schemas use. A closure answers True only when it is
sure the instance is valid; anything else (a failure, a keyword it does not know, a
``format`` it does not check itself, a float where an integer is asked for) answers False,
and the caller then asks jsonschema, which has the final word and the error messages.
Being unsure costs time, never a missed finding.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any

Check = Callable[[Any], bool]

# Keywords that only annotate: they never make an instance invalid.
_ANNOTATIONS = {"$schema", "$id", "$comment", "title", "description", "default", "examples",
                "$defs", "definitions", "deprecated", "readOnly", "writeOnly"}
# RFC 3339 date-time (no leap second), then a real calendar date: at least as strict as
# jsonschema's format checker.
_DATE_TIME_RE = re.compile(
    r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:[0-5]\d"
    r"(\.\d{1,6})?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)


def _date_time(x: Any) -> bool:
    if type(x) is not str:
        return True
    if _DATE_TIME_RE.match(x) is None:
        return False
    try:
        datetime.fromisoformat(x[:-1] + "+00:00" if x[-1] in "Zz" else x)
    except ValueError:
        return False
    return True


def _never(_: Any) -> bool:
    return False


def _is_type(name: str) -> Check:
    if name == "object":
        return lambda x: type(x) is dict
    if name == "array":
        return lambda x: type(x) is list
    if name == "string":
        return lambda x: type(x) is str
    if name == "integer":
        return lambda x: type(x) is int
    if name == "number":
        return lambda x: type(x) is int or (type(x) is float and math.isfinite(x))
    if name == "boolean":
        return lambda x: type(x) is bool
    if name == "null":
        return lambda x: x is None
    return _never


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return lambda x: True
    if len(checks) == 1:
        return checks[0]

    def run(x: Any) -> bool:
        for check in checks:
            if not check(x):
                return False
        return True

    return run


def _scalar_equal(value: Any) -> Check | None:
    if type(value) in (str, int, bool) or value is None:
        return lambda x: type(x) is type(value) and x == value
    return None


_EXACT_TYPES = {"object", "array", "string", "boolean", "null"}


def _exact(schema: Any) -> bool:
    """True if the compiled check of ``schema`` answers exactly as jsonschema does (False
    then means "invalid", not "unsure"): keywords whose closures above are exact for every
    instance, with exact subschemas. Numbers are left out (1.0 is an integer to
    jsonschema; NaN compares false), and so is date-time (stricter here)."""
    if schema is True or schema is False:
        return True
    if not isinstance(schema, dict):
        return False
    for key, value in schema.items():
        if key in _ANNOTATIONS or key in ("pattern", "minLength", "maxLength", "required"):
            continue
        if key == "type":
            names = value if isinstance(value, list) else [value]
            if not set(names) <= _EXACT_TYPES:
                return False
        elif key in ("const", "enum"):
            options = value if key == "enum" else [value]
            if not isinstance(options, list) or not all(
                    type(v) in (str, bool) or v is None for v in options):
                return False
        elif key == "properties":
            if not all(_exact(v) for v in value.values()):
                return False
        elif key in ("items", "additionalProperties"):
            if not _exact(value):
                return False
        else:
            return False
    return True


class _Compiler:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def ref(self, target: str) -> Check:
        if target in self.refs:
            return lambda x: self.refs[target](x)
        if not target.startswith("#/"):
            return _never
        node: Any = self.root
        for step in target[2:].split("/"):
            if not isinstance(node, dict) or step not in node:
                return _never
            node = node[step]
        self.refs[target] = _never  # a cycle answers "unsure" until it is compiled
        self.refs[target] = self.compile(node)
        return self.refs[target]

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return lambda x: True
        if not isinstance(schema, dict):
            return _never
        checks: list[Check] = []
        for key, value in schema.items():
            if key in _ANNOTATIONS or key in ("then", "else"):
                continue
            if key == "additionalProperties":
                made = self.additional(value, schema)
            else:
                made = self.keyword(key, value, schema)
            if made is None:
                return _never
            checks.append(made)
        return _all_of(checks)

    def additional(self, value: Any, schema: dict[str, Any]) -> Check | None:
        if "patternProperties" in schema:
            return None
        known = set(schema.get("properties") or ())
        if value is True:
            return lambda x: True
        extra = self.compile(value)

        def additional(x: Any) -> bool:
            if type(x) is dict:
                for k, v in x.items():
                    if k not in known and not extra(v):
                        return False
            return True

        return additional

    def keyword(self, key: str, value: Any, schema: dict[str, Any]) -> Check | None:
        if key == "type":
            names = value if isinstance(value, list) else [value]
            tests = [_is_type(str(n)) for n in names]
            if len(tests) == 1:
                return tests[0]
            if len(tests) == 2:
                first, second = tests
                return lambda x: first(x) or second(x)
            return lambda x: any(t(x) for t in tests)
        if key == "const":
            return _scalar_equal(value)
        if key == "enum":
            options = [_scalar_equal(v) for v in value] if isinstance(value, list) else [None]
            if any(o is None for o in options):
                return None
            return lambda x: any(o(x) for o in options)  # type: ignore[misc]
        if key == "$ref":
            return self.ref(str(value))
        if key in ("allOf", "anyOf", "oneOf"):
            subs = [self.compile(s) for s in value]
            if key == "allOf":
                return _all_of(subs)
            if key == "anyOf":
                return lambda x: any(s(x) for s in subs)
            return lambda x: sum(1 for s in subs if s(x)) == 1
        if key == "not":
            if not _exact(value):
                return None  # "sure it does not match" cannot be told from "unsure"
            sub = self.compile(value)
            return lambda x: not sub(x)
        if key == "if":
            cond = self.compile(value)
            then = self.compile(schema.get("then", True))
            other = self.compile(schema.get("else", True))
            if _exact(value):
                return lambda x: then(x) if cond(x) else other(x)
            # Unsure about the condition: both branches must hold to be sure.
            return lambda x: (then(x) if cond(x) else (then(x) and other(x)))
        return self.typed(key, value)

    def typed(self, key: str, value: Any) -> Check | None:
        """Keywords that apply to one type of instance and let any other type pass."""
        if key == "pattern":
            rx = re.compile(value)
            return lambda x: type(x) is not str or rx.search(x) is not None
        if key == "minLength":
            return lambda x: type(x) is not str or len(x) >= value
        if key == "maxLength":
            return lambda x: type(x) is not str or len(x) <= value
        if key == "format":
            if value != "date-time":
                return None
            return _date_time
        if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            bound = value
            ops: dict[str, Callable[[Any], bool]] = {
                "minimum": lambda x: x >= bound, "maximum": lambda x: x <= bound,
                "exclusiveMinimum": lambda x: x > bound,
                "exclusiveMaximum": lambda x: x < bound}
            op = ops[key]
            return lambda x: type(x) not in (int, float) or (math.isfinite(x) and op(x))
        if key == "required":
            names = list(value)

            def required(x: Any) -> bool:
                if type(x) is dict:
                    for name in names:
                        if name not in x:
                            return False
                return True

            return required
        if key == "properties":
            props = {name: self.compile(sub) for name, sub in value.items()}

            def properties(x: Any) -> bool:
                if type(x) is dict:
                    for k, v in x.items():
                        check = props.get(k)
                        if check is not None and not check(v):
                            return False
                return True

            return properties
        if key == "propertyNames":
            names_ok = self.compile(value)
            return lambda x: type(x) is not dict or all(names_ok(k) for k in x)
        if key == "items":
            each = self.compile(value)

            def items(x: Any) -> bool:
                if type(x) is list:
                    for v in x:
                        if not each(v):
                            return False
                return True

            return items
        if key == "minItems":
            return lambda x: type(x) is not list or len(x) >= value
        if key == "maxItems":
            return lambda x: type(x) is not list or len(x) <= value
        if key == "uniqueItems":
            if not value:
                return lambda x: True
            return lambda x: type(x) is not list or (
                all(type(v) is str for v in x) and len(set(x)) == len(x))
        return None


@cache
def checker(kind: str) -> Check:
    """The compiled yes-or-unsure check of ``kind``'s schema."""
    root = _load(kind)
    return _Compiler(root).compile(root)


def _load(kind: str) -> dict[str, Any]:
    # The file beside the package first: importlib.resources costs more to import than a
    # one-file commit check spends on everything else.
    import json
    from pathlib import Path

    import atlas_files

    path = Path(atlas_files.__file__).parent / "schemas" / f"{kind}.schema.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    except OSError:
        from atlas_files import schemas

        return schemas.load(kind)
