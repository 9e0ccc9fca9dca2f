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

Every file read here is untrusted, so every scan is linear in the length of the text: no
regular expression may backtrack over a line (a line of 16,000 backticks once took a
minute and a half). Python-Markdown itself is not linear on some heading sources (a
heading of many ``[`` is quadratic), so it renders a page's headings only when there are
at most ``MAX_RENDERED_HEADINGS`` of at most ``MAX_RENDERED_CHARS`` characters each;
beyond that, headings are slugified here (the same ids, except where inline markup would
change the visible text) and ``anchors`` says the result is approximate.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})")
_BACKTICKS_RE = re.compile(r"`+")
# Possessive quantifiers (*+, ++): whitespace can be matched one way only, so a failed
# match never retries every split of a run of spaces.
_INLINE_LINK_RE = re.compile(
    r"\]\(\s*+(<[^<>\n]*>|[^\s()<>]*+(?:\([^\s()]*+\)[^\s()]*+)*+)"
    r"(?:\s++(?:\"[^\"]*+\"|'[^']*+'|\([^()]*+\)))?\s*+\)"
)
_REF_DEF_RE = re.compile(r"^ {0,3}\[([^\]^][^\]]*)\]:\s*(<[^<>\n]*>|\S+)")
MAX_RENDERED_HEADINGS = 500
MAX_RENDERED_CHARS = 200
_QUOTES_RE = re.compile(r"^(?:>[ ]*+)++")
_SETEXT_RE = re.compile(r"^(=+|-+)[ ]*$")
_ATTR_ID_RE = re.compile(r"(?:^|\s)#([^\s}#]+)")
_HTML_ID_RE = re.compile(r"<[a-zA-Z][^<>]*?\s(?:id|name)\s*=\s*[\"']([^\"'<>]+)[\"']")
_UNIQUE_RE = re.compile(r"^(.*)_([0-9]+)$")


@dataclass(frozen=True)
class Link:
    line: int
    target: str  # as written, without <> around it


def _blank_code_spans(text: str) -> str:
    """Replace inline code with spaces of the same length, so columns stay put.

    As Python-Markdown reads it: a span opens at a run of backticks (not after a
    backslash) and closes at a later run of exactly as many; if there is none, the opening
    run is cut shorter, down to one backtick, before the run counts as plain text. One
    pass: for each length, the runs of that length are visited in order, never twice.
    """
    if "`" not in text:
        return text
    runs = [(m.start(), m.end()) for m in _BACKTICKS_RE.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(index)
    cursor = dict.fromkeys(by_length, 0)  # per length: the first run not behind us

    def next_run(length: int, after: int) -> int | None:
        same = by_length.get(length)
        if same is None:
            return None
        at = cursor[length]
        while at < len(same) and same[at] <= after:
            at += 1
        cursor[length] = at
        return same[at] if at < len(same) else None

    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        start, end = runs[index]
        if start > 0 and text[start - 1] == "\\":
            start += 1  # an escaped backtick does not open; the rest of the run may
        closing = None
        for length in range(end - start, 0, -1):
            closing = next_run(length, index)
            if closing is not None:
                break
        if closing is None:
            index += 1
            continue
        spans.append((start, runs[closing][1]))
        index = closing + 1
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts += [text[last:start], " " * (end - start)]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _atx(line: str) -> tuple[int, str] | None:
    """(level, source) of an ATX heading line, as Python-Markdown reads it: one to six
    hashes (no space needed after them), closing hashes dropped, and no heading if the
    text ends in an unescaped backslash. A scan, not a backtracking regex: a line of many
    hashes or spaces costs its length once."""
    if not line.startswith("#"):
        return None
    hashes = len(line) - len(line.lstrip("#"))
    level = min(hashes, 6)
    rest = line[level:]
    closing = len(rest.rstrip("#"))  # where the closing hashes begin
    # The heading's text ends at the first character boundary at or after ``closing``;
    # a backslash and the character after it are one unit.
    at = 0
    while at < closing:
        if rest[at] == "\\":
            if at + 1 >= len(rest):
                return None
            at += 2
        else:
            at += 1
    return level, rest[:at]


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


def _next_id(slug: str) -> str:
    m = _UNIQUE_RE.match(slug)
    return f"{m.group(1)}_{int(m.group(2)) + 1}" if m else f"{slug}_1"


def _unique(slug: str, used: set[str], skip: dict[str, str] | None = None) -> str:
    """The id toc gives a heading whose slug is ``slug``: the first of ``slug``, its
    ``_1``, ``_2``... not yet used. ``skip`` remembers, for each id tried, the first free
    one found after it, so a thousand equal headings cost a thousand steps, not half a
    million (every id skipped over stays used, so the jump is always right)."""
    skip = {} if skip is None else skip
    tried: list[str] = []
    while slug in used or not slug:
        tried.append(slug)
        slug = skip.get(slug) or _next_id(slug)
    for passed in tried:
        skip[passed] = slug
    used.add(slug)
    return slug


def anchors(text: str) -> set[str]:
    """The ids a rendered page of this Markdown has: headings, ``{#id}``, HTML id/name."""
    return anchors_exact(text)[0]


def anchors_exact(text: str) -> tuple[set[str], bool]:
    """``anchors``, and whether they are exact: False when the page's headings hold
    markup but are too many or too long to give to Python-Markdown (see the module's
    docstring), so that an anchor found missing is reported with that caveat."""
    headings: list[tuple[int, str]] = []  # (level, heading source)
    reserved: set[str] = set()  # ids set by attr_list on other blocks: toc avoids them
    html_ids: set[str] = set()
    previous = ""
    before_previous_blank = True
    for _, line in _lines_outside_code(text):
        if line.startswith(">"):  # block quotes hold headings too
            line = _QUOTES_RE.sub("", line, count=1)
        if "id" in line or "name" in line:
            html_ids.update(_HTML_ID_RE.findall(_blank_code_spans(line)))
        m = _atx(line)
        setext = (
            _SETEXT_RE.match(line) and previous.strip() and before_previous_blank
            and _atx(previous) is None
        )
        if m:
            headings.append(m)
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
    exact = True
    if any(not _MARKUP.isdisjoint(raw) for _, raw in headings):
        ids = _rendered_ids(headings, reserved) if renderable(headings) else None
        if ids is not None:
            return ids | reserved | html_ids, True
        exact = False
    used = set(reserved)
    skip: dict[str, str] = {}
    for _, raw in headings:
        _unique(slugify(raw.strip()), used, skip)
    return used | html_ids, exact


def renderable(headings: list[tuple[int, str]]) -> bool:
    """Whether Python-Markdown may render these headings: it is not linear in a heading's
    length, so only few and short ones are given to it."""
    return len(headings) <= MAX_RENDERED_HEADINGS and all(
        len(raw) <= MAX_RENDERED_CHARS for _, raw in headings)


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
