"""Fitting a briefing into ``max_chars``: what is cut is counted and named, never dropped
without a word.

The status comes first and may take up to half the room (its body is cut, with a note,
only past that). Every section then gets its first few items, most urgent section first;
what room is left goes to the sections in the same order. A section that could not show
everything ends with a line counting what it left out, naming as many of those items as
fit in a line, and giving the command that lists them all.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from atlas_files.api.briefing import Section, StatusPart
from atlas_files.facts.text import fence

STATUS_SHARE = 0.5  # of max_chars, for the status before its body is cut
FIRST_ITEMS = 3  # each section's share before any section gets more
NAMES_CHARS = 160  # the names listed in a section's cut line
JSON_NAMES = 100  # the names listed in the JSON `truncated`


class Fitted(NamedTuple):
    text: str
    shown: dict[str, int]  # section key -> items shown
    body_chars: int  # of the status body, shown
    truncated: tuple[dict[str, Any], ...]


def _cut_line(section: Section, shown: int, with_names: bool) -> str:
    left = section.items[shown:]
    line = f"… {len(left)} more not shown"
    if with_names:
        names: list[str] = []
        used = 0
        for item in left:
            if used + len(item.name) + 2 > NAMES_CHARS:
                break
            names.append(item.name)
            used += len(item.name) + 2
        if names:
            line += ": " + ", ".join(names) + (", …" if len(names) < len(left) else "")
    return line + f" (`{section.see}` lists them)"


def _body_note(body: str, chars: int) -> str:
    return (f"[… the status body is cut here: {len(body) - chars} of {len(body)} characters "
            "not shown; `atlas status show` prints it whole]")


def render(header: list[str], status: StatusPart, sections: list[Section], tail: list[str],
           shown: dict[str, int], body_chars: int, with_names: bool = True) -> str:
    lines = list(header)
    lines += ["", *status.head]
    if status.body:
        # Fenced and labelled: the body is another writer's text, never atlas's words.
        lines.append("")
        if body_chars:
            lines.append(fence(status.body[:body_chars], status.label))
        if body_chars < len(status.body):
            lines.append(_body_note(status.body, body_chars))
    for s in sections:
        if not s.items:
            if s.empty is not None:
                lines += ["", f"{s.title}: {s.empty}"]
                if s.footer:
                    lines.append(s.footer)
            continue
        k = shown[s.key]
        lines += ["", f"{s.title} ({len(s.items)}):"]
        lines += [f"- {item.line}" for item in s.items[:k]]
        if k < len(s.items):
            lines.append(_cut_line(s, k, with_names))
        if s.footer:
            lines.append(s.footer)
    if tail:
        lines += ["", *tail]
    return "\n".join(lines) + "\n"


def fit(header: list[str], status: StatusPart, sections: list[Section], tail: list[str],
        max_chars: int) -> Fitted:
    """The briefing at its largest that stays within ``max_chars`` characters."""
    full = {s.key: len(s.items) for s in sections}
    body = len(status.body)

    def size(shown: dict[str, int], chars: int, names: bool = True) -> int:
        return len(render(header, status, sections, tail, shown, chars, names))

    # Each item is a line of at least "- " and its end: past max_chars / 3 items the whole
    # cannot fit, and rendering ten thousand items to learn so costs more than the rest.
    if sum(full.values()) * 3 <= max_chars and size(full, body) <= max_chars:
        return _done(header, status, sections, tail, full, body, True)
    share = int(max_chars * STATUS_SHARE) - sum(len(h) + 1 for h in status.head) \
        - len(_body_note(status.body, 0))
    chars = max(0, min(body, share))
    shown = {k: min(FIRST_ITEMS, n) for k, n in full.items()}
    # Too little room even for the first items: give them up from the least urgent
    # section back, then cut the status body further, then the names in the cut lines.
    for key in reversed(list(full)):
        while shown[key] and size(shown, chars) > max_chars:
            shown[key] -= 1
    while chars and size(shown, chars) > max_chars:
        chars //= 2
    names = size(shown, chars) <= max_chars
    # Then grow, most urgent section first, as long as the whole still fits.
    for key in full:
        while shown[key] < full[key]:
            shown[key] += 1
            if size(shown, chars, names) > max_chars:
                shown[key] -= 1
                break
    if chars < body:  # room left over goes back to the status body
        grown = min(body, chars + max_chars - size(shown, chars, names))
        while grown > chars and size(shown, grown, names) > max_chars:
            grown -= max(1, (grown - chars) // 2)
        chars = max(chars, grown)
    return _done(header, status, sections, tail, shown, chars, names, max_chars)


def _done(header: list[str], status: StatusPart, sections: list[Section], tail: list[str],
          shown: dict[str, int], chars: int, names: bool, limit: int | None = None) -> Fitted:
    text = render(header, status, sections, tail, shown, chars, names)
    if limit is not None and len(text) > limit:
        # Only a max_chars smaller than the briefing's fixed lines gets here: say so.
        note = "\n[… cut at --max-chars]\n"
        text = text[: max(0, limit - len(note))] + note
        text = text[:limit]
    cut: list[dict[str, Any]] = []
    if chars < len(status.body):
        cut.append({"section": "status", "shown_chars": chars,
                    "cut_chars": len(status.body) - chars, "see": "atlas status show"})
    for s in sections:
        k = shown[s.key]
        if k < len(s.items):
            left = [item.name for item in s.items[k:]]
            cut.append({"section": s.key, "shown": k, "cut": len(left),
                        "names": left[:JSON_NAMES], "see": s.see})
    return Fitted(text, shown, chars, tuple(cut))
