"""The consent page in a real headless Chromium: fed hostile client names, scopes and
redirect URIs it runs no script but its own, its Content-Security-Policy stops a script
that got in anyway, and a person approving in the browser (with the one-time code, or
from a terminal while the page waits) is sent on to the client with a code."""

from __future__ import annotations

import os
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from support.cdp import CHROMIUM, Browser, CDPError, http_server
from support.oauth import Server, pkce, process, request_id
from support.runner import run_atlas

from atlas_files.storage.record import Record

pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("ATLAS_REQUIRE_CHROMIUM"),
    reason="chromium is not installed",
)

NAMES = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "</title><script>alert(3)</script>",
    "<svg/onload=alert(4)>",
    "</style><script>alert(5)</script><style>",
    "javascript:alert(6)",
    "'><iframe srcdoc=\"<script>alert(7)</script>\">",
]
SCOPE = "atlas <img/src=x/onerror=alert(8)>"
REDIRECTS = ['http://127.0.0.1:9/cb/"><script>alert(9)</script>',
             "http://127.0.0.1:9/cb?x='><svg/onload=alert(10)>"]

INJECTED = """
Array.from(document.querySelectorAll('*')).some(el =>
  Array.from(el.attributes).some(a =>
    a.name.toLowerCase().startsWith('on') ||
    /^\\s*(javascript|vbscript|data):/i.test(a.value) &&
    /^(href|src|action|data|formaction|srcdoc)$/i.test(a.name)))
  || document.querySelectorAll('iframe, img, svg, object, embed').length > 0
"""


@pytest.fixture(scope="module")
def callback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("client")
    (folder / "callback.html").write_text("<!doctype html><title>client</title>back")
    proc, base = http_server(folder)
    yield f"{base}/callback.html"
    proc.kill()
    proc.wait()


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # One per test: the terminal shows a few connection requests a minute (the hostile
    # names below are a flood of them), and a person reads the one-time code there.
    root = tmp_path_factory.mktemp("oauth-browser")
    record = Record.init(root / "rec")
    (root / "private").mkdir()
    with process(record.root, root / "private" / "tokens.json", root / "server.log") as s:
        yield s


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    b = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


def consent_page(server: Server, name: str, redirect: str, scope: str = "atlas") -> str:
    client = httpx2.post(f"{server.base}/register", timeout=30, json={
        "client_name": name, "redirect_uris": [redirect], "scope": scope,
        "token_endpoint_auth_method": "none"}).json()
    _, challenge = pkce()
    sent = httpx2.get(f"{server.base}/authorize", timeout=30, params={
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect,
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s",
        "scope": scope, "resource": server.url})
    assert sent.status_code == 302, sent.text
    return str(sent.headers["location"])


def dialogs(browser: Browser) -> list[dict[str, object]]:
    return [e for e in browser.events if e["method"] == "Page.javascriptDialogOpening"]


def test_the_detector_sees_a_script_run(browser: Browser) -> None:
    # The control: the same kind of payload, unescaped, does open a dialog here.
    browser.open("data:text/html,<p>x</p><script>alert('control')</script>")
    browser.pump(0.5)
    assert dialogs(browser)
    browser.events.clear()


def test_hostile_client_strings_run_no_script(server: Server, browser: Browser) -> None:
    pages = [consent_page(server, name, "http://127.0.0.1:9/cb") for name in NAMES]
    pages += [consent_page(server, "plain", redirect) for redirect in REDIRECTS]
    pages.append(consent_page(server, "scoped", "http://127.0.0.1:9/cb", scope=SCOPE))
    browser.events.clear()
    for url, shown in zip(pages, [*NAMES, "plain", "plain", "scoped"], strict=True):
        browser.open(url)
        browser.pump(0.3)
        assert dialogs(browser) == [], url
        assert browser.eval(INJECTED) is False, url
        assert browser.eval("document.scripts.length") == 1  # the page's own, by nonce
        assert browser.eval(f"document.body.innerText.includes({shown!r})"), shown
    assert browser.eval(f"document.body.innerText.includes({SCOPE!r})")
    # Had a script got in, the policy would still stop it.
    ran = browser.eval("(() => { const s = document.createElement('script');"
                       " s.textContent = 'window.__ran = 1'; document.body.append(s);"
                       " return window.__ran === 1; })()")
    assert ran is False
    head = httpx2.get(pages[0], timeout=30).headers
    policy = head["content-security-policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "script-src 'nonce-" in policy and "'unsafe-inline'" not in policy
    assert head["x-frame-options"] == "DENY" and head["cache-control"] == "no-store"


def settled(browser: Browser, expression: str, seconds: float = 20) -> object:
    """The value of ``expression`` once it is truthy (pages navigate on their own time)."""
    for _ in range(int(seconds / 0.25)):
        try:
            value = browser.eval(expression)
        except CDPError:  # the document was being replaced
            value = None
        if value:
            return value
        browser.pump(0.25)
    raise AssertionError(f"{expression} stayed false at {browser.eval('location.href')}")


def wait_for(browser: Browser, prefix: str) -> str:
    return str(settled(browser, f"location.href.startsWith({prefix!r}) && location.href"))


def test_approving_in_the_browser_sends_it_on_with_a_code(
        server: Server, browser: Browser, callback: str) -> None:
    url = consent_page(server, "Browser Client", callback)
    browser.open(url)
    otc = server.one_time_code(request_id(url))
    browser.eval(f"document.getElementById('as').value = 'alice';"
                 f"document.getElementById('code').value = {otc!r};"
                 "document.querySelector('button[value=approve]').click(); true")
    landed = wait_for(browser, callback)
    query = parse_qs(urlsplit(landed).query)
    assert query["state"] == ["s"] and query["iss"] == [server.base] and query["code"][0]
    assert dialogs(browser) == []


def test_a_waiting_page_moves_on_when_approved_from_a_terminal(
        server: Server, browser: Browser, callback: str) -> None:
    url = consent_page(server, "Terminal Client", callback)
    browser.open(url)
    code, _, err = run_atlas("mcp", "approve", request_id(url), "--as", "bob", "--tokens",
                             str(server.tokens))
    assert code == 0, err
    landed = wait_for(browser, callback)  # its script polled, then reloaded
    assert parse_qs(urlsplit(landed).query)["code"][0]


def test_a_wrong_code_is_said_on_the_page(server: Server, browser: Browser) -> None:
    url = consent_page(server, "Guess", "http://127.0.0.1:9/cb")
    browser.open(url)
    browser.eval("document.getElementById('as').value = 'alice';"
                 "document.getElementById('code').value = '1111-2222';"
                 "document.querySelector('button[value=approve]').click(); true")
    shown = settled(browser, "document.querySelector('.error')?.innerText")
    assert str(shown).startswith("that is not the one-time code")

