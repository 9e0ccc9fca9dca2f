"""Matching and ranking in Python, for a Python whose SQLite lacks FTS5.

The same rules as the index: every term must match somewhere in the item (a phrase as
consecutive tokens of one field), and the score is FTS5's bm25 (k1 1.2, b 0.75, the same
field weights, the length of the whole item against the average), so the two rank alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from atlas_files.search import query as querymod
from atlas_files.search import store as storemod

K1 = 1.2
B = 0.75


def rank(store: storemod.Store, q: querymod.Query,
         rowids: Sequence[int]) -> list[tuple[int, float]]:
    """(rowid, score) of the items of ``rowids`` that match, best (lowest) score first."""
    assert store.texts is not None
    texts = store.texts
    tokenized = {rowid: tuple(querymod.tokens(t) for t in fields)
                 for rowid, fields in texts.items()}
    total = len(tokenized) or 1
    avg = sum(sum(len(c) for c in cols) for cols in tokenized.values()) / total or 1.0
    # How many items each term occurs in, over everything (as FTS5 counts it).
    df = [sum(1 for cols in tokenized.values() if any(t.count_in(c) for c in cols))
          for t in q.terms]
    idf = [max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6) for n in df]
    out = []
    for rowid in rowids:
        cols = tokenized.get(rowid)
        if cols is None:
            continue
        length = sum(len(c) for c in cols)
        score = 0.0
        for term, weight in zip(q.terms, idf, strict=True):
            tf = sum(w * term.count_in(c) for w, c in zip(storemod.WEIGHTS, cols, strict=True))
            if tf == 0:
                break
            score += weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg))
        else:
            out.append((rowid, -score))
    out.sort(key=lambda item: item[1])
    return out
