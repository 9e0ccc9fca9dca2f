"""The briefing stays within --max-chars on a large record, and what it cuts is counted
and named, never dropped without a word."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from atlas_files.api import Worker, ritual
from atlas_files.facts import timeutil
from atlas_files.facts.layout import version_filename
from atlas_files.storage import frontmatter, receipts
from atlas_files.storage.record import Record

TOPICS, NEW = 1000, 100


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Record:
    """1,000 topics by ann; bob has read all but the 100 newest."""
    record = Record.init(tmp_path_factory.mktemp("big") / "rec", ["web"])
    start = datetime(2030, 1, 1, tzinfo=UTC)
    folder = record.root / "projects" / "web" / "artifacts"
    for i in range(TOPICS):
        name = f"topic-{i:04d}"
        body = f"Body of {name}.\n".encode()
        meta = {"name": name, "version": 1, "based_on": 0, "author": "ann",
                "written_at": timeutil.format_time(start + timedelta(minutes=i)),
                "summary": f"what {name} says, in one line of moderate length",
                "digest": frontmatter.digest_of(body)}
        (folder / name).mkdir()
        (folder / name / version_filename(name, 1)).write_bytes(frontmatter.render(meta, body))
    status = record.root / "projects" / "web" / "status"
    body = ("The status: " + "where things stand, " * 150 + "\n").encode()
    meta = {"name": "status", "version": 1, "based_on": 0, "author": "ann",
            "written_at": timeutil.format_time(start), "summary": "the status",
            "digest": frontmatter.digest_of(body)}
    (status / version_filename("status", 1)).write_bytes(frontmatter.render(meta, body))
    receipts.mark(record, "bob", {receipts.artifact_key("web", f"topic-{i:04d}"): 1
                                  for i in range(TOPICS - NEW)})
    return record


@pytest.mark.parametrize("max_chars", [6000, 2500])
def test_the_briefing_fits_and_names_what_it_cut(big: Record, max_chars: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # From the record's folder, in no repository: run from a checkout, the briefing's
    # Repository section lists that checkout's commits of the day and takes their room.
    monkeypatch.chdir(big.root)
    briefing = ritual.begin(Worker(big, "bob"), max_chars=max_chars)
    text, doc = briefing.text, briefing.to_json()
    assert len(text) <= max_chars
    shown = doc["new"]
    cut = next(c for c in doc["truncated"] if c["section"] == "new")
    assert len(shown) + cut["cut"] == NEW and shown and cut["cut"] > 0
    # Newest first: what is shown is newer than what is cut.
    assert shown[0]["name"] == f"topic-{TOPICS - 1:04d}"
    assert cut["names"][0] == f"topic-{TOPICS - len(shown) - 1:04d} v1"
    line = re.search(r"… (\d+) more not shown: (.*) \(`atlas feed` lists them\)", text)
    assert line is not None and int(line.group(1)) == cut["cut"]
    assert line.group(2).startswith(cut["names"][0])
    # The long status is shown, and, where it had to be cut, says so.
    assert "The status: where things stand" in text
    body_cut = [c for c in doc["truncated"] if c["section"] == "status"]
    assert bool(body_cut) == ("the status body is cut here" in text)


def test_without_a_limit_in_sight_nothing_is_cut(big: Record) -> None:
    briefing = ritual.begin(Worker(big, "bob"), max_chars=200_000)
    assert briefing.to_json()["truncated"] == []
    assert len(briefing.to_json()["new"]) == NEW
