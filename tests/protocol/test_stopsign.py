"""The version-jump stop sign: a write based on an old read is refused, nothing written."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.runner import snapshot

from atlas_files.facts.errors import VersionConflict
from atlas_files.protocol import artifacts, stopsign
from atlas_files.protocol import feed as feedmod
from atlas_files.storage import receipts
from atlas_files.storage.record import Record


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


def test_writes_in_a_row_rewrite_no_receipt_row(record: Record,
                                                atlas: Callable[..., Any]) -> None:
    """What a writer read is told from its own versions: a run of writes costs one file
    each, the version, and the receipt row is left as the first write made it."""
    assert atlas("put", "plan", identity="a", input="one\n").returncode == 0
    row = record.root / "receipts" / "a.json"
    before = (row.stat().st_ino, row.stat().st_mtime_ns, row.read_bytes())
    for n in range(2, 6):
        r = atlas("put", "plan", "--json", identity="a", input=f"{n}\n")
        assert r.returncode == 0 and r.json()["version"] == n
    assert (row.stat().st_ino, row.stat().st_mtime_ns, row.read_bytes()) == before
    assert atlas("feed", "--json", identity="a").json()["new"] == []
    assert atlas("status", "write", identity="a", input="s1\n").returncode == 0
    assert atlas("status", "write", identity="a", input="s2\n").returncode == 0
    assert atlas("get", "plan", identity="b").returncode == 0
    assert atlas("put", "plan", identity="b", input="b's\n").returncode == 0
    # Read by another's version: that read is the receipt's to keep.
    assert atlas("put", "plan", "--expect", "6", identity="a", input="7\n").returncode == 0
    assert row.read_bytes() != before[2]
    assert atlas("put", "plan", identity="a", input="8\n").returncode == 0


def test_what_a_writer_wrote_counts_as_read_after_another_writes(
    record: Record, atlas: Callable[..., Any]
) -> None:
    for n in (1, 2, 3):
        assert atlas("put", "plan", identity="a", input=f"{n}\n").returncode == 0
    assert atlas("status", "write", identity="a", input="a's status\n").returncode == 0
    assert atlas("status", "write", identity="a", input="a's status again\n").returncode == 0
    assert atlas("get", "plan", identity="b").returncode == 0
    assert atlas("put", "plan", identity="b", input="b's\n").returncode == 0
    assert atlas("status", "show", identity="b").returncode == 0
    assert atlas("status", "write", identity="b", input="b's status\n").returncode == 0
    before = snapshot(record.root / "projects")
    r = atlas("put", "plan", identity="a", input="a's change\n")
    assert r.returncode == 3 and "you read v3 of plan" in r.stderr and "v4 by b" in r.stderr
    assert snapshot(record.root / "projects") == before
    new = atlas("feed", "--json", identity="a").json()["new"]
    assert [(i["name"], i["version"], i["read_version"]) for i in new] == [
        ("status", 3, 2), ("plan", 4, 3)]
    begun = atlas("begin", "--json", identity="a").json()
    assert begun["status"]["read_before"] == 2
    assert [(i["name"], i["read_version"]) for i in begun["new"]] == [("plan", 3)]
    assert atlas("correct", "plan@v3", "--what", "step 3 is wrong",
                 identity="b").returncode == 0
    again = atlas("begin", "--json", identity="a").json()
    assert [(c["ref"], c["you_read"]) for c in again["corrections"]] == [("plan@v3", True)]


# One step of two writers on one topic: (who, what) with what one of "put" (judged by what
# the writer read), "expect" (a put with --expect the latest, as after `atlas history`),
# "get" and "feed" (the feed, marked read).
STEPS = st.lists(st.tuples(st.sampled_from("ab"),
                           st.sampled_from(("put", "expect", "get", "feed"))),
                 min_size=1, max_size=24)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_what_was_read_is_every_read_and_write_of_each_writer(
        steps: list[tuple[str, str]]) -> None:
    """Against a model of what each writer has seen (the highest version it read or
    wrote), whatever the order of writes, reads and stop signs: each writer's reads as
    every reader of receipts sees them, its stop sign, and its feed."""
    key = receipts.artifact_key("web", "plan")
    with tempfile.TemporaryDirectory() as tmp:
        record = Record.init(Path(tmp) / "rec", ["web"])
        seen = {"a": 0, "b": 0}
        latest, by = 0, ""
        for n, (who, what) in enumerate(steps):
            if what in ("put", "expect"):
                expect = latest if what == "expect" else None
                judged_ok = seen[who] == latest
                try:
                    written = artifacts.put(record, "plan", f"{n}\n", author=who,
                                            expect=expect)
                except VersionConflict as exc:
                    assert what == "put" and not judged_ok
                    read = f"you read v{seen[who]} of plan" if seen[who] else "never read"
                    assert read in exc.message
                else:
                    assert what == "expect" or judged_ok
                    latest, by = written.version, who
                    seen[who] = latest
            elif what == "get" and latest:
                artifacts.get(record, "plan", reader=who)
                seen[who] = latest
            elif what == "feed":
                items = feedmod.feed(record, who, mark_read=True)
                assert [(i.version, i.read_version) for i in items] == (
                    [(latest, seen[who])] if latest > seen[who] else [])
                assert by != who or not items
                seen[who] = latest
            for identity in "ab":
                assert stopsign.what_was_read(record, identity).get(key, 0) == seen[identity]


def test_a_forged_version_in_a_writers_name_counts_as_read(
        record: Record, atlas: Callable[..., Any]) -> None:
    """The limit stated in docs/security.md: a version's author is what its writer says,
    and a version in your name counts as read by you."""
    assert atlas("put", "plan", identity="a", input="one\n").returncode == 0
    assert atlas("get", "plan", identity="b").returncode == 0
    assert atlas("put", "plan", identity="b", input="two\n").returncode == 0
    forged = record.root / "projects/web/artifacts/plan/plan.v0003.md"
    forged.write_text((forged.parent / "plan.v0002.md").read_text()
                      .replace("version: 2", "version: 3").replace('author: "b"', 'author: "a"'))
    r = atlas("put", "plan", identity="a", input="a's\n")
    assert r.returncode == 0, "a's write built on the forged v3 without a stop"
    with pytest.raises(VersionConflict):
        artifacts.put(record, "plan", "a again\n", author="a", expect=3)
