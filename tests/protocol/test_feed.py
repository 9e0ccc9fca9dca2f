"""Read receipts and the feed: each identity sees exactly what it has not read."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from atlas_files.protocol import artifacts
from atlas_files.storage.record import Record


def _feed(atlas: Callable[..., Any], who: str) -> set[tuple[str, str, int, int]]:
    data = atlas("feed", "--json", identity=who).json()
    assert data["as"] == who
    return {(i["project"], i["name"], i["version"], i["read_version"]) for i in data["new"]}


def test_three_identities_each_see_what_they_have_not_read(
    record: Record, atlas: Callable[..., Any]
) -> None:
    atlas("status", "write", identity="ann", input="web status\n")
    atlas("put", "plan", identity="ann", input="p1\n")
    atlas("-p", "ml", "put", "runs", identity="bea", input="r1\n")
    assert _feed(atlas, "ann") == {("ml", "runs", 1, 0)}
    assert _feed(atlas, "bea") == {("web", "status", 1, 0), ("web", "plan", 1, 0)}
    assert _feed(atlas, "cid") == {
        ("web", "status", 1, 0), ("web", "plan", 1, 0), ("ml", "runs", 1, 0)
    }
    atlas("get", "plan", identity="bea")
    atlas("put", "plan", identity="bea", input="p2\n")
    assert _feed(atlas, "ann") == {("ml", "runs", 1, 0), ("web", "plan", 2, 1)}
    assert _feed(atlas, "bea") == {("web", "status", 1, 0)}
    atlas("status", "show", identity="cid")
    assert _feed(atlas, "cid") == {("web", "plan", 2, 0), ("ml", "runs", 1, 0)}
    out = atlas("feed", "--mark-read", identity="cid")
    assert out.returncode == 0 and "marked 2 as read" in out.stdout
    assert _feed(atlas, "cid") == set()
    # Reading an older version never moves a receipt backwards.
    atlas("get", "plan", "--version", "1", identity="cid")
    assert _feed(atlas, "cid") == set()


def test_the_receipt_is_one_live_row_per_reader(record: Record) -> None:
    artifacts.put(record, "plan", "p1\n", author="ann")
    artifacts.get(record, "plan", reader="dan")
    row = json.loads((record.root / "receipts" / "dan.json").read_text())
    assert row["identity"] == "dan" and row["read"] == {"web/artifacts/plan": 1}
    assert not list((record.root / "projects").rglob("*dan*"))


def test_feed_needs_an_identity(atlas: Callable[..., Any]) -> None:
    r = atlas("feed")
    assert r.returncode == 2 and "--as" in r.stderr
