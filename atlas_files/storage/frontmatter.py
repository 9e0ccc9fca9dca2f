"""Markdown with YAML front matter, and the digest that makes in-place edits visible.

Front matter written here is one ``key: <JSON value>`` per line, which is valid YAML, so a
human or a hand-writing agent may use any YAML; reading tries the JSON-per-line form first
because it costs a fraction of a YAML parse and `atlas ls` reads one file per topic.

YAML anchors and aliases are refused wherever the record reads YAML (here and atlas.yaml):
a few hundred bytes of nested aliases expand to billions of values once loaded, and
nothing the record holds needs them.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

DELIMITER = "---"
BOM = b"\xef\xbb\xbf"


def digest_of(body: bytes) -> str:
    import hashlib  # noqa: PLC0415 - 3 ms of start-up that only a write or a check uses

    return "sha256:" + hashlib.sha256(body).hexdigest()


class FrontMatterError(ValueError):
    """The text has no readable front matter; ``line`` is where reading stopped."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


class Parsed(NamedTuple):
    meta: dict[str, Any]
    body: bytes
    body_line: int  # 1-based line number of the first body line

    @property
    def digest_ok(self) -> bool | None:
        """None when the file carries no digest (a hand-written version not yet stamped)."""
        stated = self.meta.get("digest")
        if stated is None:
            return None
        return bool(stated == digest_of(self.body))


def render(meta: dict[str, Any], body: bytes) -> bytes:
    lines = [DELIMITER]
    for key, value in meta.items():
        if value is None:
            continue
        lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    lines.append(DELIMITER)
    return ("\n".join(lines) + "\n").encode("utf-8") + body


def _load_fast(lines: list[str]) -> dict[str, Any] | None:
    """``key: <JSON>`` lines as one JSON object, decoded in one call; None if not that form."""
    parts = []
    for line in lines:
        key, sep, value = line.partition(": ")
        if not sep or not key.isidentifier():
            return None
        parts.append(f'"{key}": {value}')
    try:
        meta = json.loads("{" + ", ".join(parts) + "}")
    except (ValueError, RecursionError):  # the YAML reader then says what is wrong
        return None
    # A value that was not one JSON value (`a: 1, "b": 2`) would have smuggled in a key.
    return meta if isinstance(meta, dict) and len(meta) == len(parts) else None


class YamlError(ValueError):
    """YAML the record will not load; ``line`` (0-based in the text) is where."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


def load_yaml(text: str) -> Any:
    """``text`` as YAML, with the safe loader and without anchors or aliases.

    The events are scanned before anything is built (only where an ``&`` or ``*`` could
    start one), so an alias bomb costs what its few hundred bytes cost to parse. The scan
    works the same for the C loader, whose composer cannot be subclassed.
    """
    # Imported here: the JSON-per-line form and the cached atlas.yaml (yamlcache.py)
    # spare most commands PyYAML's 13 ms.
    import yaml  # noqa: PLC0415 - see above

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        if "&" in text or "*" in text:
            for event in yaml.parse(text, Loader=loader):
                if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                    mark = event.start_mark
                    raise YamlError(
                        "YAML anchors and aliases (&name, *name) are not allowed here: "
                        "write each value out in full",
                        mark.line if mark is not None else 0,
                    )
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # The problem alone: the full text spans several lines and repeats the position.
        problem = getattr(exc, "problem", None) or str(exc).partition("\n")[0]
        raise YamlError(f"not valid YAML: {problem or type(exc).__name__}",
                        mark.line if mark is not None else 0) from None
    except (ValueError, RecursionError, OverflowError) as exc:
        if isinstance(exc, YamlError):
            raise
        # A constructor refused a value: an integer past Python's digit limit, a date
        # that does not exist, nesting too deep.
        raise YamlError(f"not valid YAML: {str(exc)[:200]}") from None


def _load_yaml(text: str, first_line: int) -> dict[str, Any]:
    try:
        data = load_yaml(text)
    except YamlError as exc:
        message = str(exc)
        if message.startswith("not valid YAML"):
            message = "front matter is " + message
        raise FrontMatterError(message, first_line + exc.line) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontMatterError("front matter is not a mapping of keys to values", first_line)
    return {str(k): v for k, v in data.items()}


# The keys every version's front matter has (DESIGN.md): a text that starts with them is a
# whole version file (a sync draft, a copy of a published version), not a body.
VERSION_KEYS = frozenset({"name", "version", "based_on", "author", "written_at"})


def copied_version(body: str) -> tuple[str, dict[str, Any]] | None:
    """If ``body`` is a whole version file (front matter with every version key), its
    body and that front matter; else None. Front matter of any other shape (a page's own,
    for MkDocs) is left in the body, as written."""
    if not body.startswith(DELIMITER):
        return None
    try:
        parsed = parse(body.encode("utf-8"))
    except FrontMatterError:
        return None
    if not isinstance(parsed.meta, dict) or not VERSION_KEYS <= parsed.meta.keys():
        return None
    try:
        return parsed.body.decode("utf-8"), parsed.meta
    except UnicodeDecodeError:
        return None


def parse(data: bytes) -> Parsed:
    """Split ``data`` into front matter and body. Raises FrontMatterError."""
    delimiter = DELIMITER.encode()
    lines = data.split(b"\n")
    if lines[0].rstrip(b"\r") != delimiter:
        if data.startswith(BOM):
            raise FrontMatterError(
                "the file starts with a byte-order mark (BOM) before its '---' line; save "
                "it as UTF-8 without a BOM", 1)
        raise FrontMatterError("the file does not start with a '---' front matter line", 1)
    offset = len(lines[0]) + 1
    for index in range(1, len(lines)):
        raw = lines[index]
        if raw.rstrip(b"\r") == delimiter:
            body = data[offset + len(raw) + 1:]
            try:
                decoded = [line.decode("utf-8").rstrip("\r") for line in lines[1:index]]
            except UnicodeDecodeError:
                raise FrontMatterError("the front matter is not UTF-8", 2) from None
            meta = _load_fast(decoded)
            if meta is None:
                meta = _load_yaml("\n".join(decoded), 2)
            return Parsed(meta, body, index + 2)
        offset += len(raw) + 1
    raise FrontMatterError("the front matter has no closing '---' line", 1)
