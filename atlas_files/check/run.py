"""Starting a check run: its shared state, with the link checker wired to the record's
references (so a link to a retracted or superseded version is judged as one)."""

from __future__ import annotations

from pathlib import Path

from atlas_files.check import refs
from atlas_files.check.context import CheckRun
from atlas_files.check.index import RecordIndex
from atlas_files.linkcheck.filesources import Source
from atlas_files.linkcheck.findings import Report
from atlas_files.linkcheck.links import LinkChecker


def start_run(root: Path, report: Report, source: Source, fix: bool = False) -> CheckRun:
    run = CheckRun(root, report, source, RecordIndex(root, source), fix)
    run.links = LinkChecker(report, source, on_target=refs.on_link_target(run))
    return run
