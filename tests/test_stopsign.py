"""The version-jump stop sign: a write based on an old read is refused, nothing written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from support.runner import snapshot

from atlas_files import artifacts
from atlas_files import feed as feedmod
from atlas_files.record import Record


def test_a_reads_v2_b_writes_v3_a_is_stopped_then_reads_and_writes_v4(
    record: Record, atlas: Callable[..., Any]
) -> None:
    assert atlas("put", "plan", identity="a", input="one\n").returncode == 0
    assert atlas("put", "plan", identity="a", input="two\n").returncode == 0
    assert atlas("get", "plan", identity="a").returncode == 0  # A has read v2
    assert atlas("get", "plan", identity="b").returncode == 0
    assert atlas("put", "plan", identity="b", input="three\n").returncode == 0
    before = snapshot(record.root / "projects")
    r = atlas("put", "plan", identity="a", input="A's change\n")
    assert r.returncode == 3
    assert "v3 by b" in r.stderr and "you read v2" in r.stderr
    assert "merge" in r.stderr
    assert "Traceback" not in r.stderr
    assert snapshot(record.root / "projects") == before, "nothing may be written"
    got = atlas("get", "plan", "--json", identity="a").json()
    assert got["version"] == 3 and got["author"] == "b"
    r = atlas("put", "plan", "--json", identity="a", input="three, merged with A's\n")
    assert r.returncode == 0
    assert r.json()["version"] == 4


def test_a_writer_who_never_read_an_existing_topic_is_stopped(
    record: Record, atlas: Callable[..., Any]
) -> None:
    atlas("put", "plan", identity="a", input="one\n")
    r = atlas("put", "plan", identity="newcomer", input="blind write\n")
    assert r.returncode == 3
    assert "never read" in r.stderr and "v1 by a" in r.stderr


def test_expect_overrides_the_receipt(record: Record, atlas: Callable[..., Any]) -> None:
    atlas("put", "plan", identity="a", input="one\n")
    atlas("put", "plan", identity="a", input="two\n")
    assert atlas("put", "plan", "--expect", "1", identity="b", input="x\n").returncode == 3
    assert atlas("put", "plan", "--expect", "2", identity="b", input="x\n").returncode == 0
    r = atlas("put", "plan", "--expect", "9", identity="b", input="x\n")
    assert r.returncode == 2 and "at v3" in r.stderr


def test_status_has_the_same_stop_sign(record: Record, atlas: Callable[..., Any]) -> None:
    assert atlas("status", "write", identity="a", input="s1\n").returncode == 0
    assert atlas("status", "show", identity="b").returncode == 0
    assert atlas("status", "write", identity="a", input="s2\n").returncode == 0
    r = atlas("status", "write", identity="b", input="b's picture\n")
    assert r.returncode == 3 and "v2 by a" in r.stderr


def test_a_write_counts_as_a_read_of_what_it_wrote(record: Record) -> None:
    artifacts.put(record, "plan", "one\n", author="a")
    artifacts.put(record, "plan", "two\n", author="a")  # no explicit read in between
    assert [d.version for d in artifacts.history(record, "plan")] == [1, 2]
    assert [i.name for i in feedmod.feed(record, "a")] == []
