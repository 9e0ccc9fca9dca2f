"""Pages that list topics stay bounded however many topics there are: a large group shows
its most recent topics and links to pages of a bounded size that, together, list every
topic once. (The sizes are made small here; the defaults are 50 and 500.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.site_records import broken_links, page_text, parse

from atlas_files import sitegen
from atlas_files.protocol import artifacts
from atlas_files.sitegen import listings
from atlas_files.storage.record import Record


def _rows(page: Path) -> list[str]:
    """The topics of the tables of ``page`` (links to topic pages, without anchors)."""
    html = page.read_text()
    return re.findall(r'<td[^>]*><a href="[^"#]*?([a-z0-9][a-z0-9._-]*)\.html">', html)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("listings")
    record = Record.init(root / "rec", ["web", "ml"])
    for i in range(7):
        artifacts.put(record, f"t{i}", f"Topic {i}.\n", author="alice", project="web",
                      proposal=i < 5)
    artifacts.put(record, "only", "The one topic of ml.\n", author="bob", project="ml")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(listings, "LIST_ROWS", 3)
        mp.setattr(listings, "RECENT_ROWS", 2)
        return sitegen.build(record, root / "out").site_dir


def test_a_large_group_shows_its_recent_topics_and_pages_by_name(site: Path) -> None:
    index = site / "artifacts" / "index.html"
    html = index.read_text()
    web = html.split('id="project--web"', 1)[1].split('id="project--ml"', 1)[0]
    assert "7 topics: the 2 written most recently are below" in " ".join(web.split())
    assert re.findall(r'<td[^>]*><a href="web/([a-z0-9]+)\.html">', web) == ["t6", "t5"]
    pages = re.findall(r'href="(web/_topics-\d+\.html)">([^<]*)</a>', web)
    assert [p for p, _ in pages] == [f"web/_topics-{n}.html" for n in (1, 2, 3)]
    assert pages[0][1] == "t0 … t2"
    listed = []
    for rel, _ in pages:
        rows = _rows(site / "artifacts" / rel)
        assert 0 < len(rows) <= 3
        listed += rows
    assert listed == [f"t{i}" for i in range(7)]  # every topic once, by name
    # A small group is shown whole, on the index itself.
    ml = html.split('id="project--ml"', 1)[1]
    assert re.findall(r'<td[^>]*><a href="ml/([a-z0-9]+)\.html">', ml) == ["only"]
    assert "_topics-" not in ml


def test_the_marks_page_is_bounded_the_same_way(site: Path) -> None:
    marks = site / "tags.html"
    text = page_text(marks)
    assert "5 topics: the 2 written most recently are below" in text
    links = {v for _, _, v in parse(marks).links}
    pages = sorted(v for v in links if v.startswith("marks/proposal-"))
    assert pages == ["marks/proposal-1.html", "marks/proposal-2.html"]
    listed = [t for p in pages for t in _rows(site / p)]
    assert listed == [f"t{i}" for i in range(5)]
    assert "No topic is marked retracted." in text


def test_listing_pages_link_only_to_what_exists(site: Path) -> None:
    assert broken_links(site) == []
    page = site / "artifacts" / "web" / "_topics-2.html"
    assert "Topics of web, page 2 of 3" in page_text(page)
    assert "../index.html#project--web" in {v for _, _, v in parse(page).links}
