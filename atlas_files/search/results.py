"""From matching rows to results: rank, marks, and a snippet cut from the file itself.

The index only says which files are candidates. Each result is read from its version or
entry file when it is shown, found from the record's own layout (a row naming anything
else is dropped, so no index, however made, leads a read outside the record), and what it
says (kind, name, version, author, time, snippet) is what the file says now. A result
whose file is gone (removed by hand between the index's update and the query) is dropped,
never shown, and so is one whose file changed since it was indexed and no longer matches.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from atlas_files.search import collect, scan
from atlas_files.search import query as querymod
from atlas_files.search import store as storemod
from atlas_files.storage import frontmatter, fsio

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

SNIPPET_WIDTH = 180
SNIPPET_BEFORE = 60
_COLUMNS = ("rowid", "folder", "file", "kind", "project", "name", "version", "ref", "author",
            "written_at", "proposal", "relation", "latest", "stamp")
_SELECT = ", ".join(f"d.{c}" for c in _COLUMNS)
# C0 and C1 control characters and lone surrogates (from a file decoded with "replace",
# none are left; from a hand-built record, perhaps).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True)
class Hit:
    rowid: int
    folder: str
    file: str
    kind: str
    project: str
    name: str
    version: int | None
    ref: str
    author: str
    written_at: str
    proposal: int
    relation: str | None
    latest: int
    stamp: str = ""


def matching(store: storemod.Store, q: querymod.Query, kinds: Sequence[str],
             projects: Sequence[str], all_versions: bool, limit: int) -> list[Hit]:
    """The best ``limit`` matching items, best first."""
    where = (f"d.kind IN ({','.join('?' * len(kinds))}) "
             f"AND d.project IN ({','.join('?' * len(projects))})")
    if not all_versions:
        where += " AND d.latest = 1"
    params: list[Any] = [*kinds, *projects]
    conn = store.conn
    if store.texts is None:
        w = ", ".join(str(x) for x in storemod.WEIGHTS)
        rows = conn.execute(
            f"SELECT {_SELECT} FROM fts JOIN docs d ON d.rowid = fts.rowid "
            f"WHERE fts MATCH ? AND {where} ORDER BY bm25(fts, {w}), d.written_at DESC "
            "LIMIT ?", [q.fts(), *params, limit]).fetchall()
        return [Hit(*row) for row in rows]
    found = {row[0]: Hit(*row) for row in conn.execute(
        f"SELECT {_SELECT} FROM docs d WHERE {where}", params)}
    ranked = scan.rank(store, q, list(found))
    ranked.sort(key=lambda item: (item[1], _neg_time(found[item[0]].written_at)))
    return [found[rowid] for rowid, _ in ranked[:limit]]


def _neg_time(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)  # newer first among equal scores, as the SQL does


def marks(store: storemod.Store, hit: Hit) -> dict[str, Any]:
    """What a reader must know about the item: only the marks that apply are present."""
    conn = store.conn
    out: dict[str, Any] = {}
    if hit.relation:
        out["relation"] = hit.relation
    corrected, retracted = [], []
    for ref, kind, author, at, note in conn.execute(
            "SELECT ref, kind, author, written_at, note FROM docs WHERE project = ? AND "
            "target = ? AND kind IN ('correction', 'retraction') ORDER BY ref",
            (hit.project, hit.ref)):
        if kind == "retraction":
            retracted.append({"id": ref, "author": author, "at": at, "why": note})
        else:
            corrected.append({"id": ref, "author": author, "at": at, "what": note})
    if corrected:
        out["corrected"] = corrected
    if retracted:  # the earliest is the one that retracted it, as `atlas get` shows it
        out["retracted"] = retracted[0]
    if hit.version is not None and not hit.latest:
        newest = conn.execute("SELECT max(version) FROM docs WHERE folder = ?",
                              (hit.folder,)).fetchone()[0]
        out["superseded"] = {"newest_version": newest}
    if hit.proposal:
        row = conn.execute(
            "SELECT ref FROM docs WHERE project = ? AND kind = 'decision' AND target = ? "
            "ORDER BY ref LIMIT 1", (hit.project, hit.ref)).fetchone()
        out["proposal"] = {"state": "accepted", "by": row[0]} if row else {"state": "open"}
    return out


def results(store: storemod.Store, record: Record, q: querymod.Query,
            hits: Sequence[Hit], limit: int) -> list[dict[str, Any]]:
    out = []
    for hit in hits:
        current = _current(record, hit, q)
        if current is None:
            continue
        doc, fields = current
        out.append({
            "kind": doc.kind, "project": doc.project, "name": doc.name,
            "version": doc.version, "id": doc.ref, "author": doc.author,
            "written_at": doc.written_at, "snippet": snippet(fields, q),
            "marks": marks(store, hit),
        })
        if len(out) == limit:
            break
    return out


def _current(record: Record, hit: Hit,
             q: querymod.Query) -> tuple[collect.Doc, list[tuple[str, str]]] | None:
    """The item as its file says now, and its fields for the snippet; None if the row
    names no file of the record's layout (the index is derived: it decides which files
    are candidates, never where a read goes or what a result says), if the file is gone
    or no longer reads as that kind, or if it changed since it was indexed and no longer
    matches."""
    folder = collect.folder_at(record, hit.project, hit.folder)
    if folder is None or not collect.names_a_file(folder)(hit.file):
        return None
    try:
        data, st = fsio.read_with_stat(f"{folder.path}/{hit.file}", collect.read_limit(folder))
        stamp = collect.stamp_of(st, time.time_ns())
        doc = collect.doc_of(folder, hit.file, st.st_ino, data, stamp)
        fields = _fields(frontmatter.parse(data), hit.kind)
    except (*collect.DAMAGE, frontmatter.FrontMatterError):
        return None
    if doc.kind != hit.kind:
        return None
    if not (hit.stamp and stamp == hit.stamp) and not matches(q, doc):
        return None
    return doc, fields


def matches(q: querymod.Query, doc: collect.Doc) -> bool:
    """Whether every term of ``q`` is in one of the item's fields (as FTS5 matches)."""
    cols = [querymod.tokens(text) for text in (doc.head, doc.why, doc.body)]
    return all(any(term.count_in(c) for c in cols) for term in q.terms)


def _fields(parsed: frontmatter.Parsed, kind: str) -> list[tuple[str, str]]:
    """(label, text) of the item's fields, the likeliest place for the match first."""
    m = parsed.meta

    def text(key: str) -> str:
        value = m.get(key)
        return "" if value is None else str(value)

    if kind in ("status", "artifact"):
        return [("", parsed.body.decode("utf-8", "replace")), ("", text("summary"))]
    if kind == "decision":
        return [("why", text("why")), ("topic", text("topic")),
                ("recommended", text("recommended")), ("chosen", text("chosen"))]
    if kind == "retraction":
        return [("why", text("why")), ("about", text("ref"))]
    if kind == "task":
        return [("title", text("title")), ("why", text("why"))]
    return [("what", text("what")), ("about", text("ref"))]


def _printable(text: str) -> str:
    # Same length, so token offsets stay valid: a control character read from a hand-
    # written file must never reach a terminal.
    return _CONTROL.sub(" ", text)


def snippet(fields: Sequence[tuple[str, str]], q: querymod.Query) -> str:
    """One line around the first match, matched words in **bold**, ``label: `` first."""
    for label, raw in fields:
        text = _printable(raw)
        spans = querymod.token_spans(text)
        at = next(_starts(spans, q), None)
        if at is not None:
            return _window(label, text, spans, spans[at][0], q)
    for label, raw in fields:
        if raw.strip():
            text = _printable(raw)
            return _window(label, text, querymod.token_spans(text), 0, q)
    return ""


def _starts(spans: list[tuple[int, int, str]], q: querymod.Query) -> Iterator[int]:
    tokens = [s[2] for s in spans]
    for i in range(len(tokens)):
        for term in q.terms:
            n = len(term.words)
            if term.count_in(tokens[i:i + n]):
                yield i
                break


def _window(label: str, text: str, spans: list[tuple[int, int, str]], at: int,
            q: querymod.Query) -> str:
    start = max(0, at - SNIPPET_BEFORE)
    if start > 0:  # begin at a word, not inside one
        space = text.find(" ", start, at)
        start = space + 1 if space >= 0 else start
    end = min(len(text), start + SNIPPET_WIDTH)
    if end < len(text):
        space = text.rfind(" ", at, end)
        end = space if space > at else end
    parts, pos = [], start
    for s, e, tok in spans:
        if s < start or e > end:
            continue
        if any(term.hits(tok) for term in q.terms):
            parts += [text[pos:s], "**", text[s:e], "**"]
            pos = e
    parts.append(text[pos:end])
    body = " ".join("".join(parts).split())
    lead = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    return (f"{label}: " if label else "") + lead + body + tail
