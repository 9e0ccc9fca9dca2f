"""The site as a person sees it, in a real headless Chromium, built by each engine, at a
desktop width (1280 pixels) and a phone's (390): no table wider than the page, no id or
name broken over lines, every count on the front page a link, and, opened from a file,
a word on how to get search."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cdp import CHROMIUM, Browser, http_server
from support.site_records import rich_record
from support.sitelayout import PAGES, WIDTHS, look, probe

from atlas_files import sitegen
from atlas_files.protocol import artifacts, leases

pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("ATLAS_REQUIRE_CHROMIUM"),
    reason="chromium is not installed",
)

LONG_SUMMARY = ("a summary that goes on and on about what changed in this version, "
                "with a link-like word "
                "https://example.com/a/very/long/path/that/has/no/spaces/at/all/in/it/anywhere "
                "and more words after it " * 3)


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("layout")
    record, _ = rich_record(root / "record")
    # What made pages too wide or odd: a long summary, a topic whose middle version was
    # deleted by hand (it showed "v3 of 2"), a long resource name.
    artifacts.put(record, "long-summary", "Body.\n", author="carol", project="web",
                  summary=LONG_SUMMARY[:200])
    for v in range(1, 4):
        artifacts.put(record, "gappy", f"Version {v}.\n", author="bob", project="web",
                      expect=v - 1)
    gone = record.artifact_stream("gappy", "web").folder / "gappy.v0002.md"
    gone.unlink()
    leases.claim(record, "a-rather-long-resource-name.with.parts-and-more", holder="dana",
                 duration_s=600, why="a long name")
    built = {}
    for engine in sitegen.ENGINES:
        built[engine] = sitegen.build(record, root / engine, engine=engine).site_dir
    return {"root": root, **built}


@pytest.fixture(scope="module")
def served(sites: dict[str, Path]) -> Iterator[str]:
    proc, base = http_server(sites["root"])
    yield base
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    b = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


def _url(base: str, sites: dict[str, Path], engine: str, page: str) -> str:
    return f"{base}/{sites[engine].relative_to(sites['root']).as_posix()}/{page}"


@pytest.mark.parametrize("engine", sitegen.ENGINES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(("name", "page"), PAGES)
def test_a_page_fits_its_width(sites: dict[str, Path], served: str, browser: Browser,
                               tmp_path: Path, engine: str, width: int, name: str,
                               page: str) -> None:
    png, seen = look(browser, _url(served, sites, engine, page), width, home=name == "home")
    shot = tmp_path / f"{engine}-{name}-{width}.png"
    shot.write_bytes(png)
    assert png.startswith(b"\x89PNG") and len(png) > 5000, shot
    assert seen["width"] == width
    assert seen["tables"] > 0, f"{page} shows no table to measure"
    assert seen["wideTables"] == [], f"tables wider than the page ({shot}): {seen}"
    assert seen["pageScroll"] <= 1, f"the page scrolls sideways ({shot}): {seen}"
    assert seen["brokenIds"] == [], f"ids broken over lines ({shot}): {seen}"
    if name == "home":
        assert seen["unlinkedCounts"] == [], f"counts that are not links ({shot}): {seen}"
    if name in ("decisions", "leases"):
        assert seen["ids"] > 0, f"{page} shows no id or name to measure"


def test_the_probe_sees_what_it_looks_for(sites: dict[str, Path], served: str,
                                          browser: Browser) -> None:
    """The control: the same probe on a page made wrong on purpose reports each fault, so
    the test above could fail."""
    look(browser, _url(served, sites, "mkdocs", "index.html"), 390)
    seen = browser.eval(
        "(() => { const c = document.querySelector('.md-content__inner');"
        " const t = document.createElement('table');"
        " t.innerHTML = '<tr><td style=\"white-space:nowrap\">' + 'wide '.repeat(200) +"
        " '</td></tr>'; c.appendChild(t);"
        " const id = document.createElement('code'); id.className = 'atlas-id';"
        " id.style.cssText = 'display:inline; white-space:normal; width:auto';"
        " id.textContent = 'dec ' + 'x '.repeat(300); c.appendChild(id);"
        " const p = document.createElement('p'); p.textContent = '7 decisions';"
        " c.appendChild(p); return true; })()")
    assert seen
    report = probe(browser, home=True)
    assert report["wideTables"], report
    assert report["brokenIds"], report
    assert "7 decisions" in report["unlinkedCounts"], report


def test_a_deleted_middle_version_is_counted_as_missing(sites: dict[str, Path]) -> None:
    for engine in sitegen.ENGINES:
        html = (sites[engine] / "artifacts" / "index.html").read_text(encoding="utf-8")
        assert " of 2<" not in html and "v3 of" not in html
        assert "(1 missing)" in html


def test_a_first_version_says_so(sites: dict[str, Path]) -> None:
    for engine in sitegen.ENGINES:
        html = (sites[engine] / "artifacts" / "web" / "plan.html").read_text(encoding="utf-8")
        assert "based on v0" not in html
        assert "the first version" in html and "based on v2" in html


@pytest.mark.parametrize("engine", sitegen.ENGINES)
def test_opened_from_a_file_the_site_says_how_to_get_search(
        sites: dict[str, Path], served: str, browser: Browser, engine: str) -> None:
    note = ("(() => { const n = document.querySelector('.atlas-nosearch');"
            " return n && n.offsetHeight > 0 ? n.textContent : null; })()")
    browser.open((sites[engine] / "index.html").as_uri())
    browser.pump(0.5)
    said = browser.eval(note)
    assert said is not None and "atlas site serve" in said
    browser.open(_url(served, sites, engine, "index.html"))
    browser.pump(0.5)
    assert browser.eval(note) is None  # served, the engine's own search is there


def test_the_menu_says_what_the_marks_page_holds(sites: dict[str, Path]) -> None:
    for engine in sitegen.ENGINES:
        html = (sites[engine] / "index.html").read_text(encoding="utf-8")
        assert "Proposals and corrections" in html
        assert ">Marks<" not in html
