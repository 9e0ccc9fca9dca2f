"""Make the screenshots that docs/site.md shows: the demo's record, built by each engine,
four pages at a desktop width (1280 pixels) and a phone's (390), in Debian's Chromium.

    python bench/site_screenshots.py            # writes docs/screenshots/*.png

Each picture is what a reader first sees (one screen, not the whole page). The same probe
as tests/outside/test_site_layout.py runs on every page, and the script fails if a page has a
table wider than the page or an id broken over lines, so a picture in the docs never
shows what the tests forbid.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.cdp import CHROMIUM, Browser, http_server  # noqa: E402
from support.sitelayout import PAGES, WIDTHS, look  # noqa: E402

from atlas_files import sitegen  # noqa: E402
from atlas_files.storage.record import Record  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    if CHROMIUM is None:
        sys.exit("chromium is not installed (Debian: apt-get install chromium)")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, "-m", "atlas_files", "demo", str(work / "demo")],
                       check=True, stdout=subprocess.DEVNULL)
        record = Record.find(str(work / "demo" / "record"))
        sites = {engine: sitegen.build(record, work / engine, engine=engine).site_dir
                 for engine in sitegen.ENGINES}
        proc, base = http_server(work)
        browser = Browser(work / "profile")
        faults = []
        try:
            for engine, site in sites.items():
                for width in WIDTHS:
                    for name, page in PAGES:
                        url = f"{base}/{site.relative_to(work).as_posix()}/{page}"
                        png, seen = look(browser, url, width, home=name == "home")
                        shot = args.out / f"{engine}-{name}-{width}.png"
                        shot.write_bytes(png)
                        if seen["wideTables"] or seen["brokenIds"] or seen["unlinkedCounts"]:
                            faults.append(f"{shot.name}: {seen}")
                        print(f"{shot.relative_to(ROOT)}  {len(png) // 1024} KB")
        finally:
            browser.close()
            proc.kill()
            proc.wait()
    if faults:
        print("pages that break what tests/outside/test_site_layout.py checks:", *faults, sep="\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
