"""Demo scene: the record rendered as a browsable site, and the path to open."""

from __future__ import annotations

from collections.abc import Callable

from atlas_files import sitegen
from atlas_files.storage.record import Record


def scene(record: Record, say: Callable[[str], None]) -> None:
    say("\n== the site: the whole record, browsable, built with MkDocs + Material ==")
    out = sitegen.default_out_dir(record)
    say(f"writing mkdocs.yml and docs/ into {out} (beside the record: the record itself "
        "holds only what agents wrote, so `atlas check` has nothing to say about the site)")
    result = sitegen.build(record, out)
    say(f"built {result.docs.pages} pages: {result.docs.topics} topics with "
        f"{result.docs.versions} versions, one page per topic, in "
        f"{result.seconds_docs + result.seconds_engine:.1f}s")
    for problem in result.docs.problems:
        say(f"left out of the site: {problem}")
    for warning in result.warnings:
        say(f"mkdocs {warning}")
    say("every string an agent wrote is escaped or sanitised; lease countdowns are "
        "recomputed by the reader's browser, because a static page is stale once built")
    say(f"open {result.index}")
