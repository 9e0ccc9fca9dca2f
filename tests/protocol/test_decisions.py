"""The decision log through the real `atlas` command: fields, refusals, order, filters."""

from __future__ import annotations

import re
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from support.runner import Result, atlas_command, child_env, snapshot

from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput
from atlas_files.facts.names import ENTRY_ID_PATTERN
from atlas_files.protocol import artifacts, decisions
from atlas_files.storage import entries
from atlas_files.storage.record import Record

DECIDE = ("decide", "--topic", "loader", "--recommended", "build it in C", "--chosen",
          "build it in Python")


def _decide(atlas: Callable[..., Result], *extra: str, who: str = "bob") -> Result:
    return atlas(*DECIDE, "--relation", "disagreed", "--why", "nobody here reads C", *extra,
                 identity=who)


def _decision_files(record: Record, project: str = "web") -> list[Path]:
    return sorted((record.root / "projects" / project / "decisions").glob("dec-*.md"))


def test_decide_records_every_field_in_one_read_only_file(
    atlas: Callable[..., Result], record: Record
) -> None:
    artifacts.put(record, "plan", "the plan\n", author="ann", project="web")
    r = atlas("-p", "web", *DECIDE, "--relation", "disagreed", "--why", "nobody here reads C",
              "--recommended-by", "ann", "--link", "plan@v1", "--json", identity="bob")
    assert r.returncode == 0, r.stderr
    made = r.json()
    assert re.match(ENTRY_ID_PATTERN, made["id"])

    listed = atlas("-p", "web", "decisions", "--json").json()["decisions"]
    assert len(listed) == 1
    d = listed[0]
    assert d["id"] == made["id"]
    assert (d["topic"], d["recommended"], d["chosen"], d["relation"], d["why"], d["author"]) \
        == ("loader", "build it in C", "build it in Python", "disagreed",
            "nobody here reads C", "bob")
    assert d["recommended_by"] == "ann" and d["links"] == ["plan@v1"]
    assert d["corrected_by"] == [] and d["accepts"] is None
    assert d["at"].startswith(made["id"][4:8])  # the id's time is the decision's time

    [path] = _decision_files(record)
    assert path.name == made["id"] + ".md"
    assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    entry = entries.read_entry(path)
    assert entry.digest_ok is True and entry.name_ok
    assert entries.validate(entry) == []


def test_relation_is_stored_as_given_never_inferred(
    atlas: Callable[..., Result], record: Record
) -> None:
    same = ("--recommended", "ship Friday", "--chosen", "ship Friday")
    for relation in ("agreed", "timed-out", "disagreed"):
        r = atlas("decide", "--topic", "release", *same, "--relation", relation,
                  "--why", f"case {relation}", identity="bob")
        assert r.returncode == 0, r.stderr
    got = [d["relation"] for d in atlas("decisions", "--json").json()["decisions"]]
    assert got == ["agreed", "timed-out", "disagreed"]


REFUSED = {
    "no why": ("--relation", "agreed"),
    "blank why": ("--relation", "agreed", "--why", "   \n "),
    "no relation": ("--why", "because"),
    "unknown relation": ("--relation", "agree", "--why", "because"),
    "link to a version that does not exist": (
        "--relation", "agreed", "--why", "w", "--link", "plan@v2"),
    "link to a topic that does not exist": (
        "--relation", "agreed", "--why", "w", "--link", "nothing@v1"),
    "link to a status version that does not exist": (
        "--relation", "agreed", "--why", "w", "--link", "status@v1"),
    "link to an id that does not exist": (
        "--relation", "agreed", "--why", "w", "--link", "dec-20261129t110512123456z-1a2b3c4d"),
    "link that is no reference": ("--relation", "agreed", "--why", "w", "--link", "plan"),
    "accepts a version that does not exist": (
        "--relation", "agreed", "--why", "w", "--accepts", "plan@v3"),
    "accepts a version that is no proposal": (
        "--relation", "agreed", "--why", "w", "--accepts", "plan@v1"),
    "accepts a status": ("--relation", "agreed", "--why", "w", "--accepts", "status@v1"),
    "recommended-by that is no name": (
        "--relation", "agreed", "--why", "w", "--recommended-by", "Ann Smith"),
}


@pytest.mark.parametrize("extra", REFUSED.values(), ids=list(REFUSED))
def test_refused_input_exits_2_and_writes_nothing(
    atlas: Callable[..., Result], record: Record, extra: tuple[str, ...]
) -> None:
    artifacts.put(record, "plan", "the plan\n", author="ann", project="web")
    before = snapshot(record.root)
    r = atlas(*DECIDE, *extra, identity="bob")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("atlas: error: ") and "Traceback" not in r.stderr
    assert snapshot(record.root) == before


@pytest.mark.parametrize("args", [
    ("--topic", "two\nlines", "--recommended", "a", "--chosen", "b"),
    ("--topic", "", "--recommended", "a", "--chosen", "b"),
    ("--topic", "t", "--chosen", "b"),
    ("--topic", "t", "--recommended", "a", "--chosen", " "),
], ids=["multi-line topic", "empty topic", "no recommended", "blank chosen"])
def test_refused_fields_exit_2_and_write_nothing(
    atlas: Callable[..., Result], record: Record, args: tuple[str, ...]
) -> None:
    before = snapshot(record.root)
    r = atlas("decide", *args, "--relation", "agreed", "--why", "w", identity="bob")
    assert r.returncode == 2 and r.stderr.startswith("atlas: error: ")
    assert snapshot(record.root) == before


def test_a_decision_needs_an_author(atlas: Callable[..., Result], record: Record) -> None:
    before = snapshot(record.root)
    r = atlas(*DECIDE, "--relation", "agreed", "--why", "w")
    assert r.returncode == 2 and "--as" in r.stderr
    assert snapshot(record.root) == before


def test_bytes_that_are_not_utf8_are_refused_not_a_traceback(record: Record) -> None:
    import subprocess

    before = snapshot(record.root)
    proc = subprocess.run(
        [*atlas_command("--record", str(record.root), "--as", "bob", "decide", "--topic", "t",
                        "--recommended", "a", "--chosen", "b", "--relation", "agreed", "--why"),
         b"caf\xe9 \xff"],
        capture_output=True, env=child_env(),
    )
    assert proc.returncode == 2, proc.stderr
    assert b"Traceback" not in proc.stderr and b"UTF-8" in proc.stderr
    assert snapshot(record.root) == before


def test_log_is_in_time_order_with_why_in_full(
    atlas: Callable[..., Result], record: Record
) -> None:
    long_why = ("The clock ran out before the review: " + "every clause of this reason "
                "matters to whoever reads it a year from now, " * 6).strip()
    topics = ["first topic", "second topic", "third topic"]
    for i, topic in enumerate(topics):
        why = long_why if i == 1 else f"reason {i}\nwith a second line"
        r = atlas("decide", "--topic", topic, "--recommended", "r", "--chosen", "c",
                  "--relation", "timed-out", "--why", why, identity="bob")
        assert r.returncode == 0, r.stderr
    r = atlas("decisions")
    assert r.returncode == 0
    out = r.stdout
    positions = [out.index(t) for t in topics]
    assert positions == sorted(positions)
    assert " ".join(long_why.split()) in " ".join(out.split())
    assert "with a second line" in out
    ids = [d["id"] for d in atlas("decisions", "--json").json()["decisions"]]
    assert ids == sorted(ids) and len(set(ids)) == 3


def test_filters_by_topic_relation_and_since(
    atlas: Callable[..., Result], record: Record
) -> None:
    for topic, relation in (("a", "agreed"), ("b", "disagreed"), ("a", "timed-out")):
        assert atlas("decide", "--topic", topic, "--recommended", "r", "--chosen", "c",
                     "--relation", relation, "--why", "w", identity="bob").returncode == 0

    def topics(*args: str) -> list[tuple[str, str]]:
        r = atlas("decisions", "--json", *args)
        assert r.returncode == 0, r.stderr
        return [(d["topic"], d["relation"]) for d in r.json()["decisions"]]

    assert topics("--topic", "a") == [("a", "agreed"), ("a", "timed-out")]
    assert topics("--relation", "disagreed") == [("b", "disagreed")]
    assert len(topics("--since", "1h")) == 3
    assert topics("--since", "2999-01-01T00:00:00Z") == []
    assert "no decisions match" in atlas("decisions", "--topic", "zzz").stdout
    for bad in (("--relation", "maybe"), ("--since", "last tuesday")):
        r = atlas("decisions", *bad)
        assert r.returncode == 2 and r.stderr.startswith("atlas: error: ")


def test_an_empty_log_says_so(atlas: Callable[..., Result]) -> None:
    r = atlas("decisions")
    assert r.returncode == 0 and "no decisions yet" in r.stdout
    assert atlas("decisions", "--json").json()["decisions"] == []


def test_a_name_collision_draws_a_new_random_part(
    record: Record, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same microsecond and same random bits: the exclusive create refuses the second
    name, and the writer draws again instead of overwriting or failing."""
    from datetime import UTC, datetime

    fixed = datetime(2026, 11, 29, 11, 5, 12, 123456, tzinfo=UTC)
    draws = iter(["1a2b3c4d", "1a2b3c4d", "99999999"])
    monkeypatch.setattr(timeutil, "now", lambda: fixed)
    monkeypatch.setattr(entries, "_random_part", lambda: next(draws))
    first = decisions.decide(record, topic="t", recommended="r", chosen="c",
                             relation="agreed", why="first", author="ann")
    second = decisions.decide(record, topic="t", recommended="r", chosen="c",
                              relation="agreed", why="second", author="bob")
    assert first.id == "dec-20261129t110512123456z-1a2b3c4d"
    assert second.id == "dec-20261129t110512123456z-99999999"
    whys = [d.why for d in decisions.list_decisions(record)]
    assert whys == ["first", "second"]


def test_library_api_returns_frozen_decisions(record: Record) -> None:
    d = decisions.decide(record, topic="t", recommended="r", chosen="c", relation="agreed",
                         why="w", author="ann", project="ml")
    with pytest.raises(AttributeError):
        d.why = "changed"  # type: ignore[misc]
    assert decisions.list_decisions(record, "ml") == [d]
    assert decisions.list_decisions(record, "web") == []
    assert decisions.get_decision(record, d.id, "ml") == d


@pytest.mark.parametrize("since", ["99999999999d", "1" * 400 + "d", "9" * 30 + "s",
                                   "", " ", "\x07", "😀", "-1d", "1e400", "9999-99-99"])
def test_an_odd_since_exits_2_with_a_plain_message(
    atlas: Callable[..., Result], since: str
) -> None:
    assert _decide(atlas).returncode == 0
    r = atlas("decisions", "--since", since)
    assert r.returncode == 2, (since, r.stdout, r.stderr)
    assert r.stderr.startswith("atlas: error: --since") and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 2  # what is wrong, and the hint


def test_a_symlinked_decision_is_reported_and_cannot_be_linked(
    atlas: Callable[..., Result], record: Record, tmp_path: Path
) -> None:
    """A symlink named like an entry is listed as unreadable (never followed, never
    silently dropped), and a --link to it is refused: it names nothing the record holds."""
    kept = _decide(atlas, "--json").json()["id"]
    outside = tmp_path / "outside.md"
    forged_id = "dec-20991129t110512123456z-1a2b3c4d"
    text = (record.root / "projects/web/decisions" / f"{kept}.md").read_text()
    outside.write_text(text.replace(kept, forged_id))
    (record.root / "projects/web/decisions" / f"{forged_id}.md").symlink_to(outside)
    r = atlas("decisions", "--json")
    assert r.returncode == 0
    assert [d["id"] for d in r.json()["decisions"]] == [kept]
    [unreadable] = r.json()["unreadable"]
    assert "symlink" in unreadable and forged_id in unreadable
    assert "symlink" in r.stderr
    before = snapshot(record.root)
    r = _decide(atlas, "--link", forged_id)
    assert r.returncode == 2 and "symlink" in r.stderr and "Traceback" not in r.stderr
    assert snapshot(record.root) == before


def test_a_file_where_the_decisions_folder_belongs_is_reported(
    atlas: Callable[..., Result], record: Record
) -> None:
    folder = record.root / "projects/web/decisions"
    folder.rmdir()
    folder.write_text("not a folder")
    r = atlas("decisions", "--json")
    assert r.returncode == 0 and r.json()["decisions"] == []
    assert "should be a folder of entries" in r.json()["unreadable"][0]
    r = _decide(atlas)
    assert r.returncode == 2 and "should be a folder of entries" in r.stderr
    assert "Traceback" not in r.stderr and "hint:" in r.stderr


def test_a_proposal_is_accepted_once(record: Record) -> None:
    # The second acceptance used to land too; `atlas ls` and the site show one of them.
    artifacts.put(record, "plan", "proposed\n", author="ann", proposal=True)
    first = decisions.decide(record, topic="plan", recommended="a", chosen="a",
                             relation="agreed", why="fine", author="bob", accepts="plan@v1")
    before = snapshot(record.root)
    with pytest.raises(BadInput, match=f"accepted already, by decision {first.id}"):
        decisions.decide(record, topic="plan", recommended="a", chosen="a",
                         relation="agreed", why="again", author="cy", accepts="plan@v1")
    assert snapshot(record.root) == before
