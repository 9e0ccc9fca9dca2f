"""What a person notices on a page of the site at a given width, measured in a real browser
(no tests here): a table wider than the page, an id or name broken over lines, a count on
the front page that is not a link. Shared by tests/outside/test_site_layout.py and the script that
makes the screenshots of docs/site.md (bench/site_screenshots.py)."""

from __future__ import annotations

from typing import Any

from support.cdp import Browser

# Pages a newcomer opens first, as (name, path in the site).
PAGES = [("home", "index.html"), ("decisions", "decisions.html"),
         ("leases", "leases.html"), ("artifacts", "artifacts/index.html")]
WIDTHS = (1280, 390)
HEIGHTS = {1280: 900, 390: 844}

# Everything is measured against the viewport the reader has: the page must not scroll
# sideways, no table may reach past its edge or scroll inside its own box, an id or a
# short name must sit on one line, and every "N things" in the front page's content must
# be a link to those things.
PROBE = r"""
((home) => {
  const width = document.documentElement.clientWidth;  // the viewport less its scrollbar
  const out = {width: window.innerWidth, pageScroll: document.documentElement.scrollWidth - width,
               wideTables: [], brokenIds: [], unlinkedCounts: [], tables: 0, ids: 0};
  for (const table of document.querySelectorAll('.md-content table')) {
    out.tables++;
    const box = table.getBoundingClientRect();
    // Past the viewport's edge, or scrolling sideways inside a box of its own (the
    // engines wrap tables in one that scrolls).
    let over = box.right - width;
    for (let el = table; el && !el.matches('.md-content'); el = el.parentElement) {
      if (/auto|scroll/.test(getComputedStyle(el).overflowX)) {
        over = Math.max(over, el.scrollWidth - el.clientWidth);
      }
    }
    if (over > 1) { out.wideTables.push({id: table.id || '', over: Math.round(over)}); }
  }
  const ids = 'code.atlas-id, code.atlas-name:not(.atlas-name--long)';
  for (const el of document.querySelectorAll(ids)) {
    out.ids++;
    const lines = el.getClientRects().length;
    const lh = parseFloat(getComputedStyle(el).lineHeight) || 20;
    if (lines > 1 || el.getBoundingClientRect().height > 1.8 * lh) {
      out.brokenIds.push(el.textContent);
    }
  }
  if (home) {
    const content = document.querySelector('.md-content');
    const walk = document.createTreeWalker(content, NodeFilter.SHOW_TEXT);
    const count = /\b\d[\d,]*\s+(projects?|topics?|decisions?|leases?)\b/g;
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      for (const m of node.textContent.matchAll(count)) {
        if (!node.parentElement.closest('a[href]')) { out.unlinkedCounts.push(m[0]); }
      }
    }
  }
  return out;
})
"""


def set_width(browser: Browser, width: int, height: int | None = None) -> None:
    browser.call("Emulation.setDeviceMetricsOverride", width=width,
                 height=height or HEIGHTS.get(width, 900), deviceScaleFactor=1,
                 mobile=width < 600)


def probe(browser: Browser, home: bool = False) -> dict[str, Any]:
    """What PROBE measures on the page open now; ``home``: look for counts too."""
    report: dict[str, Any] = browser.eval(f"{PROBE}({'true' if home else 'false'})")
    return report


def look(browser: Browser, url: str, width: int, home: bool = False
         ) -> tuple[bytes, dict[str, Any]]:
    """Open ``url`` at ``width``, and return a screenshot of what the reader first sees
    and what the probe measured on the whole page."""
    set_width(browser, width)
    browser.open(url)
    browser.pump(0.8)  # the engines' scripts wrap tables and lay out the navigation
    return browser.screenshot(), probe(browser, home)
