"""JSON Schemas of the record's kinds, shipped as package data (schemas/*.schema.json).

jsonschema is imported here only, and only when a file is validated: it costs more at
import than the rest of the CLI together.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

# Package data beside this module. A plain path, not importlib.resources: that import
# costs a few milliseconds of every command's cold start (entries load this module), and
# the package is never run from a zip file.
FOLDER = Path(__file__).parents[1] / "schemas"
KINDS = (
    "version", "config", "receipt", "lease", "decision", "correction", "telemetry", "session",
    "task",
)


@cache
def load(kind: str) -> dict[str, Any]:
    """The schema of ``kind`` (e.g. "version", "lease") as a dict."""
    text = (FOLDER / f"{kind}.schema.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def validator(kind: str) -> Any:
    """A compiled validator for ``kind`` (jsonschema Draft 2020-12, formats checked)."""
    # jsonschema costs more at import than the rest of a read command together; only
    # the prober and `atlas check` validate, and only when they have a file to judge.
    import jsonschema  # noqa: PLC0415 - see above

    schema = load(kind)
    cls = jsonschema.Draft202012Validator
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def errors(kind: str, instance: Any) -> list[tuple[str, str]]:
    """(JSON path, message) for each way ``instance`` fails the schema of ``kind``."""
    out = []
    for err in sorted(validator(kind).iter_errors(instance), key=lambda e: list(e.path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(top)"
        out.append((where, err.message))
    return out
