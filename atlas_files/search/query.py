"""The query language of `atlas search`, and the tokenizer the fallback and snippets share.

Words (every one must match), ``"quoted phrases"`` and ``prefix*``. Nothing else is
special: ``NEAR(``, ``OR``, ``-x``, ``col:x`` are words like any other, so no text a user
types can reach SQLite's own query syntax. Each term is handed to FTS5 as a quoted string,
which FTS5 tokenizes like the indexed text; the Python tokenizer here follows the same
rules (``unicode61``: runs of letters and digits, case and diacritics folded), closely
enough for the scan that replaces the index and for picking the snippet.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from atlas_files.facts.errors import BadInput

MAX_CHARS = 1000
MAX_TERMS = 64
HINT = 'search for words (all must match), "quoted phrases" and prefix*; punctuation is ignored'
# Runs of letters and digits: what the unicode61 tokenizer keeps (its separators are
# punctuation, spaces, symbols and most combining marks). The combining diacritics it
# removes (a subset of U+0300-U+0331) belong to the token they sit in: "0\u0323"+"0" is
# one token "00" there, so it is here too. Letters newer than its Unicode 6.1 tables may
# still be split differently; only the scan without FTS5 and snippets see the difference.
_DIACRITICS = "".join(chr(0x300 + i) for i in (
    0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 15, 17, 27, 35, 36, 37, 38, 39, 40, 45, 46, 48, 49))
_TOKEN_RE = re.compile(rf"(?:[^\W_]|[{_DIACRITICS}])+")
_SPACE = " \t\n\r"


def fold(word: str) -> str:
    """Case-folded, Latin letters without diacritics: ``Café`` -> ``cafe``, as unicode61
    with remove_diacritics folds them (Greek and Cyrillic keep theirs there, too)."""
    if word.isascii():
        return word.lower()
    return "".join(map(_fold_char, word))


@lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    if ch in "\u00df\u1e9e":  # unicode61 keeps the sharp s; casefold would make it "ss"
        return "\u00df"
    if ch in _DIACRITICS:
        return ""
    if ch in "\u01e0\u01e1":  # one of the few precomposed letters unicode61 keeps whole
        return "\u01e1"
    folded = ch.casefold()
    if len(folded) != 1:  # casefold expands a few letters (n-apostrophe); unicode61 doesn't
        folded = ch.lower()
    parts = unicodedata.normalize("NFD", folded)
    if len(parts) > 1 and parts[0].isascii() and parts[0].isalpha() \
            and all(unicodedata.category(p) == "Mn" for p in parts[1:]):
        return parts[0]
    return folded


def tokens(text: str) -> list[str]:
    # A run of diacritics alone folds to nothing, and is no token (as in unicode61).
    return [f for f in map(fold, _TOKEN_RE.findall(text)) if f]


def token_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, folded token) of every token of ``text``."""
    spans = ((m.start(), m.end(), fold(m.group())) for m in _TOKEN_RE.finditer(text))
    return [s for s in spans if s[2]]


@dataclass(frozen=True)
class Term:
    """One thing that must match: a word or a phrase (its tokens, in order); ``prefix``
    makes the last token match any token that starts with it."""

    raw: str
    words: tuple[str, ...]
    prefix: bool

    def fts(self) -> str:
        # A quoted string is plain text to FTS5 (a quote inside is doubled); the star
        # after it marks its last token as a prefix.
        return '"' + self.raw.replace('"', '""') + '"' + ("*" if self.prefix else "")

    def count_in(self, toks: list[str]) -> int:
        """How often the term occurs in a token list (a phrase: as consecutive tokens)."""
        n = len(self.words)
        last = n - 1
        hits = 0
        for i in range(len(toks) - last):
            for j, word in enumerate(self.words):
                tok = toks[i + j]
                if not (tok == word or (self.prefix and j == last and tok.startswith(word))):
                    break
            else:
                hits += 1
        return hits

    def hits(self, token: str) -> bool:
        """Whether one token is part of a match (for highlighting a snippet)."""
        if token in self.words:
            return True
        return self.prefix and token.startswith(self.words[-1])


@dataclass(frozen=True)
class Query:
    text: str
    terms: tuple[Term, ...]

    def fts(self) -> str:
        return " AND ".join(term.fts() for term in self.terms)


def _refuse_controls(text: str) -> None:
    for ch in text:
        if ch in _SPACE:
            continue
        category = unicodedata.category(ch)
        if category == "Cs":
            raise BadInput("the query is not valid UTF-8 text", hint=HINT)
        if category == "Cc":
            raise BadInput(f"the query contains the control character {ch!r}",
                           hint="type the query without control characters; " + HINT)


def _split(text: str) -> list[tuple[str, bool]]:
    """(raw text, prefix) for each word or phrase, in order."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _SPACE:
            i += 1
            continue
        if ch == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise BadInput(
                    f"the query has an opening double quote with no closing one "
                    f"(at character {i + 1})",
                    hint='close the phrase ("like this"), or leave the quote out',
                )
            prefix = end + 1 < n and text[end + 1] == "*"
            out.append((text[i + 1:end], prefix))
            i = end + 2 if prefix else end + 1
            continue
        start = i
        while i < n and text[i] not in _SPACE and text[i] != '"':
            i += 1
        word = text[start:i]
        stripped = word.rstrip("*")
        out.append((stripped, stripped != word))
    return out


def parse(text: str) -> Query:
    """Read a query; text that cannot be searched for raises BadInput (exit 2) saying why."""
    if len(text) > MAX_CHARS:
        raise BadInput(f"the query is {len(text)} characters; at most {MAX_CHARS}",
                       hint="search for the few words that matter most")
    _refuse_controls(text)
    if not text.strip():
        raise BadInput("the query is empty", hint=HINT)
    terms = []
    for raw, prefix in _split(text):
        words = tuple(tokens(raw))
        if words:  # a term of punctuation alone can match nothing; it is left out
            terms.append(Term(raw, words, prefix))
    if not terms:
        shown = text.strip()[:60]
        raise BadInput(f"nothing to search for in {shown!r}: it has no letters or digits",
                       hint=HINT)
    if len(terms) > MAX_TERMS:
        raise BadInput(f"the query has {len(terms)} words and phrases; at most {MAX_TERMS}",
                       hint="search for the few words that matter most")
    return Query(text, tuple(terms))
