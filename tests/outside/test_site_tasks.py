"""A project's task board in the built site, in a real headless Chromium, built by each
engine: ready, claimed with a countdown the reader's browser runs, blocked with what blocks
it, recently done; it fits a desktop's width (1280 pixels) and a phone's (390)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cdp import CHROMIUM, Browser, http_server
from support.sitelayout import WIDTHS, look

from atlas_files import sitegen
from atlas_files.protocol import tasks
from atlas_files.storage.record import Record

pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("ATLAS_REQUIRE_CHROMIUM"),
    reason="chromium is not installed",
)

LONG = ("calibrate every sensor of the loader and write down what drifted "
        "https://example.com/a/very/long/path/that/has/no/spaces/at/all/in/it/anywhere")


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("tasks-site")
    record = Record.init(root / "record", ["web", "ml"])
    base = tasks.add(record, "web", title="collect the data", author="alice",
                     why="nothing trains without it").id
    blocked = tasks.add(record, "web", title="train on it", author="alice", after=[base]).id
    claimed = tasks.add(record, "web", title=LONG, author="bob",
                        paths=["src/loader/**/*.py"]).id
    tasks.claim(record, "web", claimed, holder="carol", duration_s=3600)
    done = tasks.add(record, "web", title="write the plan", author="dana").id
    tasks.end(record, "web", done, "done", author="dana", why="plan@v1 stands")
    dropped = tasks.add(record, "web", title="old idea", author="dana").id
    tasks.end(record, "web", dropped, "dropped", author="erin", why="not needed")
    built = {engine: sitegen.build(record, root / engine, engine=engine).site_dir
             for engine in sitegen.ENGINES}
    return {"root": root, "ids": {"base": base, "blocked": blocked, "claimed": claimed,
                                  "done": done, "dropped": dropped}, **built}


@pytest.fixture(scope="module")
def served(board: dict[str, object]) -> Iterator[str]:
    proc, base = http_server(Path(str(board["root"])))
    yield base
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    b = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


def _url(base: str, board: dict[str, object], engine: str) -> str:
    site = Path(str(board[engine])).relative_to(Path(str(board["root"])))
    return f"{base}/{site.as_posix()}/tasks/web.html"


def _row(task_id: str) -> str:
    return f"document.getElementById('task--{task_id}')"


@pytest.mark.parametrize("engine", sitegen.ENGINES)
@pytest.mark.parametrize("width", WIDTHS)
def test_the_board_fits_its_width(board: dict[str, object], served: str, browser: Browser,
                                  tmp_path: Path, engine: str, width: int) -> None:
    png, seen = look(browser, _url(served, board, engine), width)
    shot = tmp_path / f"{engine}-tasks-{width}.png"
    shot.write_bytes(png)
    assert seen["width"] == width
    assert seen["tables"] >= 4, seen
    assert seen["wideTables"] == [], f"tables wider than the page ({shot}): {seen}"
    assert seen["pageScroll"] <= 1, f"the page scrolls sideways ({shot}): {seen}"
    assert seen["brokenIds"] == [], f"ids broken over lines ({shot}): {seen}"


@pytest.mark.parametrize("engine", sitegen.ENGINES)
def test_the_board_shows_each_state_where_it_belongs(board: dict[str, object], served: str,
                                                     browser: Browser, engine: str) -> None:
    ids = board["ids"]
    assert isinstance(ids, dict)
    browser.open(_url(served, board, engine))

    def table_of(task_id: str) -> str:
        return str(browser.eval(f"{_row(task_id)}.closest('table').id"))

    assert table_of(ids["base"]) == "atlas-tasks-ready"
    assert table_of(ids["claimed"]) == "atlas-tasks-claimed"
    assert table_of(ids["blocked"]) == "atlas-tasks-blocked"
    assert table_of(ids["done"]) == table_of(ids["dropped"]) == "atlas-tasks-done"
    blocked_text = browser.eval(f"{_row(ids['blocked'])}.textContent")
    assert ids["base"] in blocked_text and "collect the data" in blocked_text
    claimed_text = browser.eval(f"{_row(ids['claimed'])}.textContent")
    assert "carol" in claimed_text and "src/loader/**/*.py" in claimed_text
    assert "not needed" in browser.eval(f"{_row(ids['dropped'])}.textContent")


@pytest.mark.parametrize("engine", sitegen.ENGINES)
def test_a_claims_countdown_runs_and_expires_by_the_readers_clock(
    board: dict[str, object], served: str, browser: Browser, tmp_path: Path, engine: str,
) -> None:
    ids = board["ids"]
    assert isinstance(ids, dict)
    countdown = f"{_row(ids['claimed'])}.querySelector('.atlas-countdown').textContent"
    browser.open(_url(served, board, engine))
    first = browser.eval(countdown)
    browser.pump(2.2)
    second = browser.eval(countdown)
    assert first.startswith("expires in ") and second.startswith("expires in ")
    assert first != second
    later = Browser(tmp_path / "profile")
    try:
        later.call("Page.addScriptToEvaluateOnNewDocument", source=(
            "(() => { const shift = 2 * 3600 * 1000, real = Date.now;"
            " Date.now = () => real() + shift; })();"))
        later.open(_url(served, board, engine))
        assert later.eval(countdown).startswith("expired ")
        state = f"{_row(ids['claimed'])}.querySelector('.atlas-state').textContent"
        assert later.eval(state) == "ready (claim expired)"
    finally:
        later.close()
