"""Markdown's blocks as Python-Markdown (the parser MkDocs uses) sees them, in one pass.

Each source line is classified: prose (``TEXT``, where links and headings are), code
(fenced, or indented four spaces after a blank line), a raw HTML block (``RAW``: Markdown
inside is not rendered, so it makes no links and no heading ids, unless its tag says
``markdown="1"``), or an HTML comment. Containers are followed: list items, admonitions
(``!!!``), details (``???``), content tabs (``===``) and block quotes hold headings and
links too, their content indented four spaces as Python-Markdown wants it; a line of
prose gives its text with the container's indentation and quote markers removed.

Every file read here is untrusted, so the pass is linear in the length of the text: each
line is looked at once, with scans that never backtrack.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

TEXT, CODE, RAW, COMMENT = "text", "code", "raw", "comment"
TAB = 4

_FENCE_RE = re.compile(r"(`{3,}|~{3,})")
_LIST_RE = re.compile(r"(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)")
_CONTAINER_RE = re.compile(r"(?:!!!|\?\?\?\+?|===[!+]?)[ \t]")
_FENCE_CHARS = frozenset("`~")
_LIST_CHARS = frozenset("-*+0123456789")
_CONTAINER_CHARS = frozenset("!?=")
_TAG_RE = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)(?=[\s/>]|$)")
# md_in_html: `markdown="1"`, "block" or "span", or the attribute alone (`<div markdown>`,
# which Python-Markdown takes for "1").
_MARKDOWN_ATTR_RE = re.compile(
    r"""\smarkdown(?:\s*=\s*["']?(?:1|block|span)|(?=[\s/>]|$))""", re.IGNORECASE)
# Python-Markdown's block-level elements: a line starting with one opens a raw HTML block.
BLOCK_TAGS = frozenset("""
address article aside blockquote body canvas center colgroup dd details dialog div dl dt
embed fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html
iframe li main map menu nav noscript object ol output p pre progress section script style
summary table tbody td template textarea tfoot th thead tr ul video math
""".split())


@dataclass(frozen=True)
class Line:
    number: int
    text: str  # the content, without the containers' indentation and quote markers
    kind: str
    top: bool  # outside every container
    after_blank: bool  # the line before (in the same flow) was blank


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _strip_quotes(text: str) -> tuple[str, bool]:
    quoted = False
    while text.startswith(">"):
        quoted = True
        text = text[1:]
        if text.startswith(" "):
            text = text[1:]
        text = text.lstrip(" ") if text.lstrip(" ").startswith(">") else text
    return text, quoted


class _Html:
    """A raw HTML block: the tag that opened it, and how deep we are in it."""

    def __init__(self, tag: str, markdown: bool) -> None:
        self.tag = tag
        self.markdown = markdown
        self.depth = 0
        self._open = re.compile(rf"<{tag}(?=[\s/>]|$)", re.IGNORECASE)
        self._close = re.compile(rf"</{tag}\s*>", re.IGNORECASE)

    def feed(self, line: str) -> bool:
        """Count the line's opening and closing tags; True when the block has ended."""
        self.depth += len(self._open.findall(line)) - len(self._close.findall(line))
        return self.depth <= 0


def scan(text: str, first_line: int = 1) -> Iterator[Line]:
    """Every line of ``text``, classified (see the module's docstring)."""
    stack: list[int] = []  # the content indentation of each open container
    fence: tuple[str, int] | None = None  # (fence, its container depth)
    html: _Html | None = None
    comment = False
    blank = True  # the previous line was blank (or there was none)
    in_code = False  # inside an indented code block
    for number, raw in enumerate(text.split("\n"), start=first_line):
        line = raw.rstrip("\r")
        if "\t" in line:
            line = line.expandtabs(TAB)
        stripped = line.strip()
        if comment:
            end = line.find("-->")
            if end < 0:
                yield Line(number, line, COMMENT, not stack, blank)
                continue
            comment = False
            rest = line[end + 3:]
            yield Line(number, rest, TEXT if rest.strip() else COMMENT, not stack, blank)
            blank = False
            continue
        if html is not None:
            done = html.feed(line)
            kind = TEXT if html.markdown and not done else RAW
            yield Line(number, line.strip() if kind == TEXT else line, kind, False, blank)
            if done:
                html = None
            blank = not stripped
            continue
        if fence is not None:
            m = _FENCE_RE.match(stripped)
            # Python-Markdown closes a fence only with the same fence (fenced_code and
            # pymdownx.superfences alike; CommonMark would take a longer one too).
            if m and m.group(1) == fence[0] and not stripped[len(m.group(1)):].strip():
                fence = None
            yield Line(number, line, CODE, not stack, blank)
            continue
        if not stripped:
            yield Line(number, "", TEXT, not stack, blank)
            blank = True
            continue
        indent = _indent(line)
        if blank:  # after a blank line, a container ends where its indentation does
            while stack and indent < stack[-1]:
                stack.pop()
        base = stack[-1] if stack else 0
        if in_code and indent >= base + TAB:
            yield Line(number, line, CODE, not stack, blank)
            blank = False
            continue
        in_code = False
        if blank and indent >= base + TAB:
            in_code = True
            yield Line(number, line, CODE, not stack, blank)
            blank = False
            continue
        content = line[indent:]
        quoted = False
        if content[0] == ">":
            content, quoted = _strip_quotes(content)
        first = content[:1]
        m = _FENCE_RE.match(content) if first in _FENCE_CHARS else None
        # A backtick after a fence of backticks on its line (```text one line```) makes it
        # no fence for Python-Markdown (fenced_code and superfences alike): inline code.
        if m and first == "`" and "`" in content[m.end():]:
            m = None
        if m:
            fence = (m.group(1), len(stack))
            yield Line(number, content, CODE, not stack, blank)
            blank = False
            continue
        opened = content.rfind("<!--") if "<" in content else -1
        # An ATX heading is one line: a comment it opens cannot run on past it, and
        # Python-Markdown shows the unclosed `<!--` as text.
        if (opened >= 0 and content.find("-->", opened + 4) < 0
                and not content.lstrip(" ").startswith("#")):
            # A comment that runs on: what stands before it is still read.
            comment = True
            head = content[:opened]
            yield Line(number, head, TEXT if head.strip() else COMMENT, not stack, blank)
            blank = False
            continue
        if not stack and not quoted and indent < TAB and content.startswith("<"):
            tag = _TAG_RE.match(content)
            if tag and tag.group(1).lower() in BLOCK_TAGS:
                block = _Html(tag.group(1), _MARKDOWN_ATTR_RE.search(content) is not None)
                if not block.feed(content):
                    html = block
                yield Line(number, content, RAW, True, blank)
                blank = False
                continue
        top = not stack and not quoted
        yield Line(number, content, TEXT, top, blank)
        if (first in _LIST_CHARS and _LIST_RE.match(content)) or (
                first in _CONTAINER_CHARS and _CONTAINER_RE.match(content)):
            stack.append((indent // TAB + 1) * TAB)
        blank = False
