"""Just enough Markdown reading for link checks: the links a file makes, the anchors it has.

Anchors are the ids Python-Markdown's ``toc`` extension gives headings (what MkDocs
uses): the heading's visible text, NFKD-folded to ASCII, everything but word characters,
spaces and hyphens dropped, lowercased, runs of spaces and hyphens joined by one ``-``; a
repeated anchor gets ``_1``, ``_2``; an explicit ``{#id}`` (attr_list) wins. A plain-text
heading is slugified here; one with inline markup (emphasis, code, links, escapes,
``{...}``) is rendered by Python-Markdown itself, so its id is exactly the site's. HTML
``id``/``name`` attributes count as anchors too. Fenced code blocks and inline code are
skipped for both links and headings. Limits: indented code blocks are read as text, a
heading inside a list item is not seen, and links written as raw HTML (``<a href>``) are
not checked.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})")
_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
_INLINE_LINK_RE = re.compile(
    r"\]\(\s*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
)
_REF_DEF_RE = re.compile(r"^ {0,3}\[([^\]^][^\]]*)\]:\s*(<[^<>\n]*>|\S+)")
# As Python-Markdown reads it: no space needed after the hashes, and a heading cannot end
# in an unescaped backslash.
_ATX_RE = re.compile(r"^(#{1,6})((?:\\.|[^\\])*?)#*$")
_SETEXT_RE = re.compile(r"^(=+|-+)[ ]*$")
_ATTR_ID_RE = re.compile(r"(?:^|\s)#([^\s}#]+)")
_HTML_ID_RE = re.compile(r"<[a-zA-Z][^<>]*?\s(?:id|name)\s*=\s*[\"']([^\"'<>]+)[\"']")
_UNIQUE_RE = re.compile(r"^(.*)_([0-9]+)$")


@dataclass(frozen=True)
class Link:
    line: int
    target: str  # as written, without <> around it


def _blank_code_spans(text: str) -> str:
    """Replace inline code with spaces of the same length, so columns stay put."""
    if "`" not in text:
        return text
    return _CODE_SPAN_RE.sub(lambda m: " " * len(m.group(0)), text)


def _lines_outside_code(text: str, first_line: int = 1) -> Iterator[tuple[int, str]]:
    """(line number, line) for each line that is not inside a fenced code block."""
    fence: str | None = None
    for number, line in enumerate(text.split("\n"), start=first_line):
        m = _FENCE_RE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                if not line.strip()[len(m.group(1)):].strip():
                    fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        yield number, line.rstrip("\r")


def links(text: str, first_line: int = 1) -> list[Link]:
    """Every inline link, image and reference definition outside code, in order."""
    found: list[Link] = []
    for number, line in _lines_outside_code(text, first_line):
        if "](" not in line and "]:" not in line:
            continue
        plain = _blank_code_spans(line)
        m = _REF_DEF_RE.match(plain)
        if m:
            found.append(Link(number, m.group(2).strip("<>")))
            continue
        for m in _INLINE_LINK_RE.finditer(plain):
            target = m.group(1)
            if target.startswith("<"):
                target = target[1:-1]
            found.append(Link(number, target))
    return found


def slugify(value: str, separator: str = "-") -> str:
    folded = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    kept = re.sub(r"[^\w\s-]", "", folded).strip().lower()
    return re.sub(rf"[{re.escape(separator)}\s]+", separator, kept)


def _unique(slug: str, used: set[str]) -> str:
    while slug in used or not slug:
        m = _UNIQUE_RE.match(slug)
        slug = f"{m.group(1)}_{int(m.group(2)) + 1}" if m else f"{slug}_1"
    used.add(slug)
    return slug


def anchors(text: str) -> set[str]:
    """The ids a rendered page of this Markdown has: headings, ``{#id}``, HTML id/name."""
    headings: list[tuple[int, str]] = []  # (level, heading source)
    reserved: set[str] = set()  # ids set by attr_list on other blocks: toc avoids them
    html_ids: set[str] = set()
    previous = ""
    before_previous_blank = True
    for _, line in _lines_outside_code(text):
        while line.startswith(">"):  # block quotes hold headings too
            line = line[1:].lstrip(" ")
        if "id" in line or "name" in line:
            html_ids.update(_HTML_ID_RE.findall(_blank_code_spans(line)))
        m = _ATX_RE.match(line)
        setext = (
            _SETEXT_RE.match(line) and previous.strip() and before_previous_blank
            and not _ATX_RE.match(previous)
        )
        if m:
            headings.append((len(m.group(1)), m.group(2)))
        elif setext:
            headings.append((1 if line.startswith("=") else 2, previous))
        else:
            attrs = _BLOCK_ATTR_RE.match(line)
            if attrs:
                named = _ATTR_ID_RE.search(attrs.group(1))
                if named:
                    reserved.add(named.group(1))
        before_previous_blank = not previous.strip()
        previous = "" if m or setext else line
    if any(not _MARKUP.isdisjoint(raw) for _, raw in headings):
        ids = _rendered_ids(headings, reserved)
        if ids is not None:
            return ids | reserved | html_ids
    used = set(reserved)
    for _, raw in headings:
        _unique(slugify(raw.strip()), used)
    return used | html_ids


# Characters that can make a heading's visible text, or its id, differ from its source.
_MARKUP = set("*_`[]<>&\\!{}")
_BLOCK_ATTR_RE = re.compile(r"^[ ]*\{:?[ ]*([^}\n ][^\n]*)\}[ ]*$")


def _rendered_ids(headings: list[tuple[int, str]], reserved: set[str]) -> set[str] | None:
    """The heading ids Python-Markdown itself gives (the renderer MkDocs uses, so emphasis,
    code, escapes and attr_list come out exactly as on the site), from a document holding
    just the headings. None if Python-Markdown is missing or a source does not render as
    one heading."""
    import html

    try:
        md = _renderer()
    except ImportError:  # pragma: no cover - markdown comes with mkdocs
        return None
    parts = [f"x\n{{: #{ident} }}" for ident in sorted(reserved)]
    parts += ["#" * level + " " + " ".join(raw.split("\n")) for level, raw in headings]
    md.reset()
    md.convert("\n\n".join(parts))
    ids: set[str] = set()
    count = 0
    stack = list(getattr(md, "toc_tokens", []))
    while stack:
        token = stack.pop()
        ids.add(html.unescape(token["id"]))
        count += 1
        stack.extend(token.get("children", []))
    return ids if count == len(headings) else None


@functools.cache
def _renderer() -> Any:
    import markdown

    return markdown.Markdown(extensions=["toc", "attr_list"])


def split_front_matter(text: str) -> tuple[str, int]:
    """The text after a leading ``---`` front matter block, and its first line's number."""
    if not text.startswith("---"):
        return text, 1
    lines = text.split("\n")
    if lines[0].rstrip("\r") != "---":
        return text, 1
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") in ("---", "..."):
            return "\n".join(lines[index + 1:]), index + 2
    return text, 1
