"""Just enough Markdown reading for link checks, as Python-Markdown (what MkDocs uses)
reads it: the links a file makes, its headings, and the other ids its page will have.

The blocks come from blocks.py (containers, code, raw HTML and comments). On lines of
prose: inline links and images, reference definitions (a line that is nothing but
``[label]: target "title"``; of two definitions of one label the last counts), and which
labels are used; ATX and setext headings; ids set inline with attr_list (``{ #id }``);
footnote ids (``fn:LABEL``, ``fnref:LABEL``); HTML ``id`` attributes and ``<a name>``;
snippet includes (``--8<-- "file"``) and build-time directives (``::: package.module``,
mkdocstrings and mkdocs-click), whose content only the site build can see. Links written
as raw HTML (``<a href>``) are not checked, as MkDocs does not check them.

Every file read here is untrusted, so every scan is linear in the length of the text: no
regular expression may backtrack over a line (a line of 16,000 backticks once took a
minute and a half).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from atlas_files.linkcheck.blocks import RAW, TEXT, scan

_BACKTICKS_RE = re.compile(r"`+")
# Possessive quantifiers (*+, ++): whitespace can be matched one way only, so a failed
# match never retries every split of a run of spaces.
_INLINE_LINK_RE = re.compile(
    r"\]\(\s*+(<[^<>\n]*>|[^\s()<>]*+(?:\([^\s()]*+\)[^\s()]*+)*+)"
    r"(?:\s++(?:\"[^\"]*+\"|'[^']*+'|\([^()]*+\)))?\s*+\)"
)
_REF_DEF_RE = re.compile(r" {0,3}\[([^\[\]\n]*+)\]:[ ]*+(<[^<>\n]*>|\S++)")
_FOOTNOTE_DEF_RE = re.compile(r" {0,3}\[\^([^\]\s]++)\]:")
_FOOTNOTE_REF_RE = re.compile(r"\[\^([^\]\s]++)\](?!:)")
_BRACKETS_RE = re.compile(r"\[([^\[\]\n]*+)\]")
_INLINE_ATTR_RE = re.compile(r"\{:?[ ]*+([^{}\n]*+)\}")
_ATTR_ID_RE = re.compile(r"(?:^|\s)#([^\s}#]++)")
_BLOCK_ATTR_RE = re.compile(r"[ ]*+\{:?[ ]*+([^}\n ][^\n}]*+)\}[ ]*+")
_HTML_ID_RE = re.compile(
    r"<([a-zA-Z][a-zA-Z0-9]*+)\b[^<>]*?\s(id|name)\s*=\s*[\"']([^\"'<>]+)[\"']")
_SETEXT_RE = re.compile(r"(=+|-+)[ ]*")
_SNIPPET_RE = re.compile(r"(;?)-{1,}8<-{1,}[ \t]*+(?:([\"'])([^\"'\n]*+)\2)?[ \t]*")
_DIRECTIVE_RE = re.compile(r":::[ \t]+(\S.*)")
_COMMENT_RE = re.compile(r"<!--.*?(?:-->|$)")
# A line without any character that starts a link, a heading, an id or a directive.
_PLAIN_PROSE_RE = re.compile(r"[^\[\]{#<:=\-8`]*+")


@dataclass(frozen=True)
class Link:
    line: int
    target: str  # as written, without <> around it
    definition: bool = False  # a reference definition, not an inline link
    used: bool = True  # for a definition: whether a link uses it (the last of its label)


@dataclass
class Page:
    """What one Markdown text holds, as far as links and ids go."""

    links: list[Link] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)  # (level, source)
    reserved: set[str] = field(default_factory=set)  # attr_list ids on other blocks
    ids: set[str] = field(default_factory=set)  # inline attr_list, footnote and HTML ids
    snippets: list[tuple[int, str]] = field(default_factory=list)  # (line, file named)
    directives: list[tuple[int, str]] = field(default_factory=list)  # (line, `::: x`)


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


def _blank_comments(line: str) -> str:
    """Inline HTML comments replaced by spaces (what they hold is not rendered)."""
    if "<!--" not in line:
        return line
    return _COMMENT_RE.sub(lambda m: " " * len(m.group(0)), line)


def label_key(label: str) -> str:
    """A reference label as Python-Markdown compares them: case and runs of spaces aside."""
    return " ".join(label.split()).lower()


def _definition(plain: str) -> tuple[str, str] | None:
    """(label, target) if the line is a reference definition and nothing else: a wrapped
    paragraph line that merely starts with ``[text]: words`` is prose."""
    m = _REF_DEF_RE.match(plain)
    if m is None or m.group(1).startswith("^"):
        return None
    rest = plain[m.end():].strip()
    if rest and not (len(rest) >= 2 and (
            (rest[0] in "\"'" and rest[-1] == rest[0]) or (rest[0] == "(" and rest[-1] == ")"))):
        return None
    return m.group(1), m.group(2).strip("<>")


def _uses(plain: str, used: set[str]) -> None:
    """Note the labels this line's reference links use: ``[text][label]``, ``[label][]``
    and ``[label]`` alone (more than are used, never fewer: an unused definition is only
    ever let off more lightly)."""
    for m in _BRACKETS_RE.finditer(plain):
        after = plain[m.end():m.end() + 1]
        if after != "(":
            used.add(label_key(m.group(1)))


def _html_ids(line: str, ids: set[str]) -> None:
    if "id" not in line and "name" not in line:
        return
    for tag, attr, value in _HTML_ID_RE.findall(line):
        if attr.lower() == "id" or tag.lower() == "a":
            ids.add(value)


def read(text: str, first_line: int = 1) -> Page:
    """One pass over ``text``: its links, headings and ids."""
    page = Page()
    definitions: list[tuple[int, str, str]] = []  # (line, label key, target)
    used: set[str] = set()
    footnotes: list[str] = []
    references: Counter[str] = Counter()
    previous = ""  # the prose line before, if it could be a setext heading's text
    snippet_block = False  # between two lines of --8<--: one file named per line
    for line in scan(text, first_line):
        if line.kind == RAW:
            _html_ids(line.text, page.ids)
        if line.kind != TEXT:
            previous = ""
            continue
        content = line.text
        if not content.strip():
            previous = ""
            continue
        if snippet_block:
            if _SNIPPET_RE.fullmatch(content.strip()):
                snippet_block = False
            elif not content.lstrip().startswith(";"):
                page.snippets.append((line.number, content.strip()))
            continue
        if _PLAIN_PROSE_RE.fullmatch(content):  # most lines: nothing to find in them
            previous = content if line.after_blank else ""
            continue
        plain = _blank_comments(_blank_code_spans(content)) if "`" in content or "<!--" in \
            content else content
        _html_ids(plain, page.ids)
        heading = _atx(content)
        if heading is not None:
            page.headings.append(heading)
            previous = ""
            continue
        if previous and _SETEXT_RE.fullmatch(content):
            page.headings.append((1 if content.startswith("=") else 2, previous))
            previous = ""
            continue
        previous = content if line.after_blank else ""
        block_attr = _BLOCK_ATTR_RE.fullmatch(plain)
        if block_attr:
            page.reserved.update(_ATTR_ID_RE.findall(block_attr.group(1)))
            continue
        if "{" in plain:
            for attrs in _INLINE_ATTR_RE.findall(plain):
                page.ids.update(_ATTR_ID_RE.findall(attrs))
        if plain.startswith(":::"):
            m = _DIRECTIVE_RE.fullmatch(plain.rstrip())
            if m:
                page.directives.append((line.number, m.group(1).strip()))
                continue
        if "8<" in plain:
            m = _SNIPPET_RE.fullmatch(plain.strip())
            if m and not m.group(1):
                if m.group(3):
                    page.snippets.append((line.number, m.group(3).strip()))
                else:
                    snippet_block = True
                continue
        if "[^" in plain:
            m = _FOOTNOTE_DEF_RE.match(plain)
            if m:
                footnotes.append(m.group(1))
            for ref in _FOOTNOTE_REF_RE.findall(plain):
                references[ref] += 1
        if "](" not in plain and "]:" not in plain and "[" not in plain:
            continue
        found = _definition(plain)
        if found is not None:
            definitions.append((line.number, label_key(found[0]), found[1]))
            continue
        if "[" in plain:
            _uses(plain, used)
        if "](" in plain:
            for m in _INLINE_LINK_RE.finditer(plain):
                target = m.group(1)
                if target.startswith("<"):
                    target = target[1:-1]
                page.links.append(Link(line.number, target))
    for label in footnotes:
        page.ids.add(f"fn:{label}")
        for n in range(1, min(references[label], 1000) + 1):
            page.ids.add(f"fnref{'' if n == 1 else n}:{label}")
    last = {label: number for number, label, _ in definitions}
    for number, label, target in definitions:
        live = last[label] == number and label in used
        page.links.append(Link(number, target, definition=True, used=live))
    page.links.sort(key=lambda link: link.line)
    return page


def links(text: str, first_line: int = 1) -> list[Link]:
    """Every inline link, image and reference definition outside code, in order."""
    return read(text, first_line).links


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
