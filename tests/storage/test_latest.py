"""The latest version of a topic is the highest version present, whatever the hints say.

The latest-version hints (documents.LatestHints) may only ever cost time: a gap, a version
added or removed by hand, a forged or damaged hints file never changes what `get`, `ls`,
`feed`, `begin` or the stop sign answer.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atlas_files.facts.layout import LATEST_HINTS
from atlas_files.protocol import artifacts
from atlas_files.protocol import feed as feedmod
from atlas_files.storage import documents, frontmatter
from atlas_files.storage.record import Record


def hand_version(record: Record, name: str, version: int, author: str = "hand") -> Path:
    """A version written by hand, as an agent with file access would add one."""
    folder = record.root / "projects" / "web" / "artifacts" / name
    folder.mkdir(parents=True, exist_ok=True)
    body = f"v{version} of {name}, by hand\n".encode()
    meta = {"name": name, "version": version, "based_on": version - 1, "author": author,
            "written_at": "2026-11-29T10:00:00Z", "summary": f"v{version} by hand",
            "digest": frontmatter.digest_of(body)}
    path = folder / f"{name}.v{version:04d}.md"
    path.write_bytes(frontmatter.render(meta, body))
    return path


def test_a_missing_version_hides_no_later_one(record: Record,
                                              atlas: Callable[..., Any]) -> None:
    """Issue 40, item 1: with v3 removed, every reader says v5, as `history` does, and
    the stop sign and the readers agree."""
    for text in ("one\n", "two\n"):
        assert atlas("put", "t", identity="ann", input=text).returncode == 0
    assert [t["version"] for t in atlas("ls", "--json").json()["topics"]] == [2]
    for text in ("three\n", "four\n", "five\n"):
        assert atlas("put", "t", identity="ann", input=text).returncode == 0
    (record.root / "projects" / "web" / "artifacts" / "t" / "t.v0003.md").unlink()
    assert atlas("get", "t", "--json", identity="bob").json()["version"] == 5
    assert atlas("get", "t", "--body-only").stdout == "five\n"
    assert [t["version"] for t in atlas("ls", "--json").json()["topics"]] == [5]
    assert [i["version"] for i in atlas("feed", "--json", identity="carl").json()["new"]] == [5]
    assert [i["version"] for i in atlas("begin", "--json", identity="dan").json()["new"]] == [5]
    hist = atlas("history", "t", "--json").json()["versions"]
    assert [v["version"] for v in hist] == [5, 4, 2, 1]
    (record.root / "projects" / "web" / "artifacts" / "t" / "t.v0004.md").unlink()
    shown = atlas("diff", "t")
    assert shown.returncode == 0 and "--- t@v2" in shown.stdout and "+five" in shown.stdout
    # bob read v5 above: his write goes on from there, and readers see it.
    r = atlas("put", "t", "--json", identity="bob", input="six\n")
    assert r.returncode == 0, r.stderr
    assert r.json()["version"] == 6
    assert atlas("get", "t", "--body-only").stdout == "six\n"
    r = atlas("put", "t", "--expect", "6", "--json", identity="eve", input="seven\n")
    assert r.returncode == 0 and r.json()["version"] == 7
    assert [t["version"] for t in atlas("ls", "--json").json()["topics"]] == [7]


def test_a_version_added_by_hand_past_a_gap_is_the_latest(
        record: Record, atlas: Callable[..., Any]) -> None:
    for text in ("one\n", "two\n"):
        atlas("put", "t", identity="ann", input=text)
    atlas("ls")  # the hints name v2
    hand_version(record, "t", 4)
    assert atlas("get", "t", "--json").json()["version"] == 4
    assert [t["version"] for t in atlas("ls", "--json").json()["topics"]] == [4]
    assert [i["version"] for i in atlas("feed", "--json", identity="carl").json()["new"]] == [4]
    r = atlas("put", "t", "--expect", "2", identity="ann", input="stale\n")
    assert r.returncode == 3 and "it is at v4" in r.stderr


@pytest.fixture
def settle_fast(monkeypatch: pytest.MonkeyPatch) -> float:
    """Folders count as settled 30 ms after their last change (more than any kernel's
    clock tick), so readers keep folder stamps within a test, and every folder counts as
    large, so `get` reads its topic's hint rather than listing; returns the wait."""
    monkeypatch.setattr(documents, "SETTLED_NS", 30_000_000)
    monkeypatch.setattr(documents, "SMALL_FOLDER", 0)
    return 0.04


def test_a_kept_folder_stamp_is_believed_only_while_the_folder_is_unchanged(
        record: Record, settle_fast: float) -> None:
    for text in ("one\n", "two\n", "three\n"):
        artifacts.put(record, "t", text, author="ann")
    time.sleep(settle_fast)
    assert [t.version for t in artifacts.ls(record)] == [3]
    hints = record.root / "projects" / "web" / "artifacts" / LATEST_HINTS
    kept = json.loads(hints.read_text())["t"]
    folder = record.root / "projects" / "web" / "artifacts" / "t"
    assert kept[:2] == [3, documents.folder_stamp(os.lstat(folder))]
    # Believed while the folder is as it was: a forged number with the right stamp is
    # the one lie a hint can tell, and only one who can write the record can tell it.
    for change in ("remove v2", "add v5 by hand", "remove v3", "rename v7 in"):
        if change == "remove v2":
            (folder / "t.v0002.md").unlink()
            want = 3
        elif change == "add v5 by hand":
            hand_version(record, "t", 5)
            want = 5
        elif change == "remove v3":
            (folder / "t.v0003.md").unlink()
            want = 5
        else:
            made = hand_version(record, "t", 7)
            made.rename(folder.parent / "t.v0007.md")
            time.sleep(settle_fast)
            assert [t.version for t in artifacts.ls(record)] == [5]
            (folder.parent / "t.v0007.md").rename(made)
            want = 7
        assert artifacts.get(record, "t").version == want, change
        assert [t.version for t in artifacts.ls(record)] == [want], change
        time.sleep(settle_fast)
        assert [t.version for t in artifacts.ls(record)] == [want], change
        assert [i.version for i in feedmod.feed(record, "carl")] == [want], change


def test_hints_a_reader_leaves_unsaved_change_no_answer(
        record: Record, settle_fast: float) -> None:
    """A reader of many topics rewrites the hints file only once enough of its entries
    moved (documents.SAVE_SHARE): until then each stale entry costs its folder's listing
    and its latest version's read, never an answer. A version added by hand, one
    removed, and a latest version written over in place (its folder's times unmoved)."""
    names = [f"t{i:03d}" for i in range(3 * documents.SAVE_SHARE + 10)]
    for name in names:
        hand_version(record, name, 1)
        hand_version(record, name, 2)
    time.sleep(settle_fast)
    artifacts.ls(record)
    hints = record.root / "projects" / "web" / "artifacts" / LATEST_HINTS
    saved = hints.read_bytes()
    assert json.loads(saved)["t002"][3:5] == [1, "hand"]  # its front matter is kept
    folder = record.root / "projects" / "web" / "artifacts"
    hand_version(record, "t000", 3)
    (folder / "t001" / "t001.v0002.md").unlink()
    stamp = os.lstat(folder / "t002")
    hand_version(record, "t002", 2, author="eve")  # written over, in place
    assert os.lstat(folder / "t002").st_mtime_ns == stamp.st_mtime_ns
    want = {"t000": (3, "hand"), "t001": (1, "hand"), "t002": (2, "eve")}
    for _ in range(2):
        time.sleep(settle_fast)
        listed = {t.name: (t.version, t.author) for t in artifacts.ls(record)}
        fed = {i.name: (i.version, i.author) for i in feedmod.feed(record, "carl")}
        got = {n: (artifacts.get(record, n).version, artifacts.get(record, n).author)
               for n in want}
        assert {n: listed[n] for n in want} == want
        assert {n: fed[n] for n in want} == want
        assert got == want
        assert len(listed) == len(names)
    assert hints.read_bytes() == saved  # the stale entries were not written back


def test_a_new_folder_under_the_same_name_is_listed_again(
        record: Record, settle_fast: float) -> None:
    """A topic folder removed and made again (as a checkout or a copy does) has another
    identity, even where its times come out the same."""
    for text in ("one\n", "two\n"):
        artifacts.put(record, "t", text, author="ann")
    time.sleep(settle_fast)
    assert [t.version for t in artifacts.ls(record)] == [2]
    folder = record.root / "projects" / "web" / "artifacts" / "t"
    moved = folder.with_name("t-old")
    folder.rename(moved)
    hand_version(record, "t", 1)
    before = os.lstat(moved)
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert [t.version for t in artifacts.ls(record)] == [1]
    assert artifacts.get(record, "t").version == 1


# -- any hints, any hand edits: the answers a walk of the folders gives ---------------------

NAMES = ("a", "b", "c")
EDITS = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(NAMES), st.integers(1, 12)),
    st.tuples(st.just("remove"), st.sampled_from(NAMES), st.integers(1, 12)),
    st.tuples(st.just("put"), st.sampled_from(NAMES), st.just(0)),
    st.tuples(st.just("hints"), st.sampled_from(NAMES), st.integers(0, 2**70)),
    st.tuples(st.just("junk"), st.just(""), st.integers(0, 5)),
)
JUNK = (b"", b"garbage", b"[]", b'{"a":[1,"0:0:0:0","",0,"","","",false,[]]}', b"{" * 5000,
        b'{"a":[99],"b":[-1,"x","",0,"","","",false,[]],"c":[1e400,"","",0,"","","",0,0]}')


def walked(record: Record) -> dict[str, int]:
    """Each topic's highest version, from a walk of its folder that reads no hint."""
    out = {}
    for name in NAMES:
        folder = record.root / "projects" / "web" / "artifacts" / name
        numbers = [int(p.name[len(name) + 2:-3]) for p in folder.glob(f"{name}.v*.md")] \
            if folder.is_dir() else []
        if numbers:
            out[name] = max(numbers)
    return out


def apply(record: Record, edit: tuple[str, str, int],
          seen: dict[str, list[str]]) -> None:
    kind, name, number = edit
    folder = record.root / "projects" / "web" / "artifacts" / name
    hints = record.root / "projects" / "web" / "artifacts" / LATEST_HINTS
    if kind == "add":
        if not (folder / f"{name}.v{number:04d}.md").exists():
            hand_version(record, name, number)
    elif kind == "remove":
        (folder / f"{name}.v{number:04d}.md").unlink(missing_ok=True)
    elif kind == "put":
        latest = walked(record).get(name, 0)
        artifacts.put(record, name, "by put\n", author="ann", expect=latest)
    elif kind == "hints":
        # A forged hint: a number with a stamp the folder once had (a stale hint), or
        # with the stamp it has now moved by one.
        now = documents.folder_stamp(os.lstat(folder)) if folder.is_dir() else ""
        older = [s for s in seen.get(name, []) if s != now]
        stamp = older[number % len(older)] if older else now + "1" if now else ""
        forged: list[Any] = [number % 20, stamp, "", 0, "x", "y", "z", False, []]
        try:
            data = json.loads(hints.read_bytes())
        except (OSError, ValueError):
            data = {}
        data = data if isinstance(data, dict) else {}
        data[name] = forged if number % 3 else [number]
        hints.write_text(json.dumps(data))
    else:
        hints.write_bytes(JUNK[number])
    for topic in NAMES:
        where = folder.parent / topic
        if where.is_dir():
            seen.setdefault(topic, []).append(documents.folder_stamp(os.lstat(where)))


def answers(record: Record) -> dict[str, Any]:
    got: dict[str, int | str] = {}
    for name in NAMES:
        try:
            got[name] = artifacts.get(record, name).version
        except Exception as exc:  # noqa: BLE001 - compared below: no topic, no version
            got[name] = type(exc).__name__
    return {"get": got,
            "ls": {t.name: t.version for t in artifacts.ls(record)},
            "feed": {i.name: i.version for i in feedmod.feed(record, "carl")}}


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(edits=st.lists(EDITS, min_size=1, max_size=8))
def test_any_hints_and_hand_edits_leave_the_answers_of_a_walk(
        tmp_path: Path, settle_fast: float, edits: list[tuple[str, str, int]]) -> None:
    """Readers keep stamps between the edits (each waits for the folders to settle), so
    each edit meets hints that a reader kept, or forged ones."""
    record = Record.init(tmp_path / f"rec-{time.monotonic_ns()}", ["web"])
    seen: dict[str, list[str]] = {}
    for edit in edits:
        apply(record, edit, seen)
        truth = walked(record)
        want = {"get": {n: truth.get(n, "NotFound") for n in NAMES}, "ls": truth,
                "feed": truth}
        assert answers(record) == want, edit
        time.sleep(settle_fast)  # let the readers keep stamps, so the next edit tests them
        assert answers(record) == want, edit


def test_a_large_folder_counts_the_same_versions(record: Record) -> None:
    """A folder of more names than documents._OWN_PATTERN_FROM is matched with a pattern
    of the stream's own name: the same versions, never a name that is no version."""
    folder = record.root / "projects" / "web" / "artifacts" / "t"
    folder.mkdir()
    count = documents._OWN_PATTERN_FROM + 20
    for v in range(1, count + 1):
        (folder / f"t.v{v:04d}.md").touch()
    for odd in ("t.v3.md", "t.v00005.md", "tx.v0002.md", "t.v0009.md.bak", "xt.v9999.md",
                "t.v10000.md", "t.v010001.md", "t.v99.md\nt.v9998.md"):
        (folder / odd).touch()
    stream = record.artifact_stream("t")
    assert stream.versions() == [*range(1, count + 1), 10000]
    assert stream.latest() == 10000


def test_a_topic_whose_latest_version_is_damaged_keeps_its_row_in_ls(
        record: Record, atlas: Callable[..., Any]) -> None:
    """Issue 40, item 15: left out of `ls`, a damaged topic looks like no topic at all
    (and a `put` would be invited over it)."""
    for name in ("alpha", "mid", "zulu"):
        atlas("put", name, identity="ann", input=f"{name}\n")
    damaged = record.root / "projects" / "web" / "artifacts" / "mid" / "mid.v0001.md"
    damaged.chmod(0o644)
    damaged.write_bytes(b"no front matter here\n")
    r = atlas("ls")
    assert r.returncode == 0
    assert [line.split()[:2] for line in r.stdout.splitlines()] == [
        ["alpha", "v1"], ["mid", "unreadable"], ["zulu", "v1"]]
    assert "mid.v0001.md" in r.stderr
    listing = atlas("ls", "--json").json()
    assert [t["name"] for t in listing["topics"]] == ["alpha", "zulu"]
    assert listing["unreadable"] == ["mid"]
    # What stands cannot be told past a version that cannot be read: no older one is
    # shown in its place.
    for text in ("beta\n", "beta, again\n"):
        atlas("put", "beta", identity="ann", input=text)
    newest = damaged.parent.parent / "beta" / "beta.v0002.md"
    newest.chmod(0o644)
    newest.write_bytes(b"no front matter here either\n")
    standing = atlas("ls", "--accepted", "--json").json()
    assert [t["name"] for t in standing["topics"]] == ["alpha", "zulu"]
    assert standing["unreadable"] == ["beta", "mid"]
    assert "beta                     unreadable" in atlas("ls", "--accepted").stdout
