"""Path globs of a lease: which repository paths it covers, and whether two globs meet.

A glob is written relative to the repository root with ``/`` between folders, as
``git ls-files`` prints paths. ``*`` matches any characters within one folder or file
name, ``?`` one character, ``[abc]``/``[a-z]``/``[!abc]`` one of (or none of) a set, and a
segment that is exactly ``**`` any number of folders, none included: ``src/**/*.py``
matches ``src/a.py`` and ``src/x/y/a.py``. Dot files get no special treatment.

A glob covers every path it matches **and everything under a folder it matches**, so
``src``, ``src/`` and ``src/**`` all cover ``src/x/y/a.py``, and ``src/*`` covers the
whole tree below ``src`` too (each folder directly in ``src`` matches ``src/*``).
Matching is case-sensitive, as git is on Linux; on a volume that folds case (macOS,
Windows, exFAT) the guards match as the volume does, case-insensitively (``fold``).

Written this way by hand rather than with ``fnmatch``: fnmatch's ``*`` crosses ``/``
(``src/*.py`` would match ``src/x/a.py``) and it knows no ``**``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Generic, TypeVar

from atlas_files.facts.errors import BadInput
from atlas_files.storage import volcase

T = TypeVar("T")

MAX_GLOB = 500  # characters of one glob
MAX_GLOBS = 100  # globs in one lease
WILD = frozenset("*?[")
_DRIVE = re.compile(r"[A-Za-z]:")
# Unicode's control characters (category Cc) and lone surrogates (Cs), as one C-speed search.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
HINT = ("write it relative to the repository root with / between folders, as "
        "`git ls-files` prints it: src/metrics.py, src/, src/**/*.py")


def _is_normal(text: str) -> bool:
    """Whether ``text`` is already in the form check_glob returns, and one that cannot fail
    to compile: no "/" at either end, no empty, "." or ".." segment, no set, no drive, no
    "~" folder, no backslash, no control character, at most MAX_GLOB characters. String
    methods only: compiling one more regex costs every run of the guard more than this."""
    if not text or len(text) > MAX_GLOB or text[0] == "/" or text[-1] == "/":
        return False
    if "\\" in text or "[" in text or "//" in text or _CONTROL.search(text):
        return False
    inner = f"/{text}/"
    if "/./" in inner or "/../" in inner or text.startswith("~/") or text == "~":
        return False
    return not (len(text) > 1 and text[1] == ":" and text[0].isascii() and text[0].isalpha())


def check_glob(text: str, what: str = "the path glob") -> str:
    """``text`` as a glob, normalized (``./`` and doubled or trailing ``/`` dropped; an
    empty result, ``.``, means the whole repository and becomes ``**``); BadInput if it is
    absolute, leads out through ``..``, or cannot be a repository path."""
    if isinstance(text, str) and _is_normal(text):
        return text  # as atlas writes it: every generation read by the guard is like this
    return normalize(text, what)


def normalize(text: str, what: str = "the path glob") -> str:
    """``check_glob`` the long way, for any text; the same answer for a normal glob."""
    if not isinstance(text, str) or not text:
        raise BadInput(f"{what} is empty", hint=HINT)
    shown = text if len(text) <= 80 else text[:80] + "..."
    if len(text) > MAX_GLOB:
        raise BadInput(f"{what} {shown!r} is {len(text)} characters, over {MAX_GLOB}",
                       hint=HINT)
    control = _CONTROL.search(text)
    if control:
        raise BadInput(f"{what} {shown!r} contains the control character "
                       f"{control.group()!r}", hint=HINT)
    if "\\" in text:
        raise BadInput(f"{what} {shown!r} contains a backslash; folders are separated by /",
                       hint=HINT)
    segments = [s for s in text.split("/") if s not in ("", ".")]
    # C:/ and ~/ are refused wherever they start the path, ./C:/ included: they are
    # absolute on some machine that shares the record.
    if text.startswith("/") or (segments and (_DRIVE.match(segments[0])
                                              or segments[0] == "~")):
        raise BadInput(f"{what} {shown!r} is absolute; it must be relative to the "
                       "repository root", hint=HINT)
    if ".." in segments:
        raise BadInput(f"{what} {shown!r} leads out of the repository with ..", hint=HINT)
    glob = "/".join(segments) or "**"
    if "[" in glob:  # only a set can make a bad pattern ([z-a]); the rest always compiles
        try:
            _regex(glob)
        except re.error as exc:
            raise BadInput(f"{what} {shown!r} is not a valid glob: {exc}", hint=HINT) from None
    return glob


def check_globs(values: Iterable[str], what: str = "the path glob") -> tuple[str, ...]:
    """Each of ``values`` checked, duplicates dropped, the order kept."""
    out = tuple(dict.fromkeys(check_glob(v, what) for v in values))
    if len(out) > MAX_GLOBS:
        raise BadInput(f"{len(out)} path globs, over the limit of {MAX_GLOBS} for one lease",
                       hint="cover a folder (src/) or use ** instead of listing every file")
    return out


def is_literal(glob: str) -> bool:
    return not WILD.intersection(glob)


# -- matching one path -------------------------------------------------------------------


def _class_end(seg: str, i: int) -> int:
    """The index of the ``]`` closing the set opened at ``i``; -1 if none (then ``[`` is
    an ordinary character, as in fnmatch)."""
    j = i + 1
    if j < len(seg) and seg[j] in "!^":
        j += 1
    if j < len(seg) and seg[j] == "]":
        j += 1
    j = seg.find("]", j)
    return j


def _class_regex(body: str) -> str:
    negated = body[:1] in ("!", "^")
    chars = body[1:] if negated else body
    inner = "".join("\\" + c if c in "\\[]^&~|" else c for c in chars)
    return f"[^/{inner}]" if negated else f"[{inner}]"


def _segment_regex(seg: str) -> str:
    out = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            while i + 1 < len(seg) and seg[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := _class_end(seg, i)) > 0:
            out.append(_class_regex(seg[i + 1:end]))
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@cache
def _regex(glob: str) -> re.Pattern[str]:
    """Matched against ``path + "/"``: each segment ends with its ``/``, and the implied
    ``/**`` at the end is what makes a glob cover everything under a folder it matches."""
    parts: list[str] = []
    for seg in (*glob.split("/"), "**"):
        if seg == "**":
            if not parts or parts[-1] != "(?:[^/]+/)*":
                parts.append("(?:[^/]+/)*")
        else:
            parts.append(_segment_regex(seg) + "/")
    return re.compile("".join(parts))


@cache
def _folded_regex(glob: str) -> re.Pattern[str]:
    return re.compile(_regex(glob).pattern, re.IGNORECASE)


def covers(glob: str, path: str) -> bool:
    """Whether ``glob`` covers the repository path ``path`` (a file, as git lists it)."""
    return _regex(glob).fullmatch(path + "/") is not None


def _only_any(rest: str) -> bool:
    return all(seg == "**" for seg in rest.split("/"))


def prefix(glob: str) -> str:
    """The folders before the first segment with a wildcard ("" if it starts with one)."""
    out = []
    for seg in glob.split("/"):
        if not is_literal(seg):
            break
        out.append(seg)
    return "/".join(out)


class Index(Generic[T]):
    """Many (glob, item) pairs, asked which items cover a path. A glob is only tried
    against paths under its literal leading folders, and then only its rest is matched:
    ``pkg1/**/*.py`` and ``pkg2/**/*.py`` share one compiled ``**/*.py``, so a commit of a
    hundred files against a thousand leases compiles a few patterns, not a thousand.
    ``fold``: paths and globs are matched case-insensitively, as a volume that folds case
    takes them."""

    def __init__(self, entries: Iterable[tuple[str, T]], *, fold: bool = False) -> None:
        self._by_prefix: dict[str, list[tuple[str, str, T]]] = {}
        self._fold = fold
        self._match = _folded_regex if fold else _regex
        for glob, item in entries:
            prefix_ = prefix(glob)
            rest = glob[len(prefix_) + 1:] if prefix_ else glob
            key = volcase.fold(prefix_) if fold else prefix_
            self._by_prefix.setdefault(key, []).append((glob, rest, item))

    def covering(self, path: str) -> list[tuple[str, T]]:
        """The (glob, item) pairs that cover ``path``, by the length of the glob's literal
        folders, then in the order they were given."""
        parts = (volcase.fold(path) if self._fold else path).split("/")
        found = []
        for k in range(len(parts) + 1):
            key = "/".join(parts[:k])
            entries = self._by_prefix.get(key)
            if not entries:
                continue
            below = "/".join(parts[k:]) + "/" if k < len(parts) else ""
            for glob, rest, item in entries:
                # A literal glob is its own prefix: the path is it, or lies under it. What
                # follows the prefix matches the rest of the path, or is only **s.
                if (volcase.fold(glob) if self._fold else glob) == key or (
                        self._match(rest).fullmatch(below) if below else _only_any(rest)):
                    found.append((glob, item))
        return found


# -- whether two globs can name one path --------------------------------------------------

_Token = tuple[str, str]  # ("c", char) | ("?", "") | ("*", "") | ("[", class regex)


def _tokens(seg: str) -> tuple[_Token, ...]:
    out: list[_Token] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            if not out or out[-1][0] != "*":
                out.append(("*", ""))
        elif c == "?":
            out.append(("?", ""))
        elif c == "[" and (end := _class_end(seg, i)) > 0:
            out.append(("[", seg[i + 1:end]))
            i = end
        else:
            out.append(("c", c))
        i += 1
    return tuple(out)


def _members(body: str) -> list[str]:
    """Characters that decide whether two sets share one: each one written in a set, and
    its neighbours (an overlap of two ranges has an end of one inside the other)."""
    chars = body[1:] if body[:1] in ("!", "^") else body
    return [chr(n) for c in chars for n in (ord(c) - 1, ord(c), ord(c) + 1)
            if 0x20 <= n < 0x110000 and not 0xD800 <= n < 0xE000 and n != ord("/")]


def _in_class(body: str, ch: str) -> bool:
    return re.fullmatch(_class_regex(body), ch) is not None


def _chars_meet(a: _Token, b: _Token) -> bool:
    if a[0] == "?" or b[0] == "?":
        return True
    if a[0] == "c" and b[0] == "c":
        return a[1] == b[1]
    if a[0] == "c":
        return _in_class(b[1], a[1])
    if b[0] == "c":
        return _in_class(a[1], b[1])
    if a[1][:1] in "!^" and b[1][:1] in "!^":
        return True  # two sets of exclusions leave characters for both
    return any(_in_class(a[1], ch) and _in_class(b[1], ch)
               for ch in _members(a[1]) + _members(b[1]))


@cache
def _segments_meet(x: str, y: str) -> bool:
    a, b = _tokens(x), _tokens(y)

    @cache
    def go(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i][0] == "*":
            return go(i + 1, j) or (j < len(b) and go(i, j + 1))
        if j < len(b) and b[j][0] == "*":
            return go(i, j + 1) or (i < len(a) and go(i + 1, j))
        if i == len(a) or j == len(b):
            return False
        return _chars_meet(a[i], b[j]) and go(i + 1, j + 1)

    return go(0, 0)


def overlaps(a: str, b: str, *, b_folder: bool = True) -> bool:
    """Whether some path is covered by both globs: a lease on ``src/**`` and one on
    ``src/metrics.py`` overlap, and so do ``src`` and ``src/metrics.py`` (either way).

    ``b_folder=False`` reads ``b`` as naming files only, not everything under them: asked
    about the file ``docs/x.py``, a lease on ``**/*.md`` does not cover it (it would
    cover ``docs/x.py/a.md`` if that were a folder). For a plain path ``b`` it is then
    exactly ``covers(a, b)``."""
    x = (*a.split("/"), "**")
    y = (*b.split("/"), "**") if b_folder else tuple(b.split("/"))

    @cache
    def go(i: int, j: int) -> bool:
        if i == len(x) and j == len(y):
            return True
        if i < len(x) and x[i] == "**":
            return go(i + 1, j) or (j < len(y) and go(i, j + 1))
        if j < len(y) and y[j] == "**":
            return go(i, j + 1) or (i < len(x) and go(i + 1, j))
        if i == len(x) or j == len(y):
            return False
        return _segments_meet(x[i], y[j]) and go(i + 1, j + 1)

    return go(0, 0)


def any_overlap(globs: Sequence[str], others: Sequence[str], *, folders: bool = True) -> bool:
    """Whether any of ``globs`` overlaps any of ``others`` (read as ``b`` above)."""
    return any(overlaps(a, b, b_folder=folders) for a in globs for b in others)
