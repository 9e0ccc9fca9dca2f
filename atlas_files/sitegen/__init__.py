"""The browsable site: the whole record rendered with MkDocs and the Material theme.

``build(record, out_dir)`` writes a plain MkDocs project into ``out_dir`` (``mkdocs.yml``,
``docs/``, ``overrides/``; no plugins but search and tags, no hooks, so Zensical builds
the same folder) and builds it into ``out_dir/site``. Nothing is written or deleted
outside ``out_dir``, and nothing through a symlink (see ``files``); a record file that
cannot be read, or whose body is over the record's ``body_limit``, is left out and named
in ``DocsResult.problems``, never a failed build. ``serve`` does the same behind
MkDocs' live-reloading server and rewrites the docs whenever the record changes.

Limits, stated where a reader meets them: the site is a snapshot taken at build time.
Only lease countdowns, ages and telemetry staleness are recomputed in the browser; a
claim, a release or a new version appears after the next build (or at once under serve).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files.sitegen.docs import DocsResult, Progress, write_docs
from atlas_files.sitegen.files import default_out_dir

if TYPE_CHECKING:
    from atlas_files.record import Record

__all__ = [
    "BuildResult", "DocsResult", "Progress", "build", "default_out_dir", "serve",
    "write_docs",
]


@dataclass(frozen=True)
class BuildResult:
    out_dir: Path
    site_dir: Path
    index: Path  # the page to open
    docs: DocsResult
    warnings: tuple[str, ...]
    seconds_docs: float
    seconds_mkdocs: float

    def to_json(self) -> dict[str, object]:
        return {
            "out": str(self.out_dir), "site": str(self.site_dir), "index": str(self.index),
            "config": str(self.docs.config_file), "pages": self.docs.pages,
            "topics": self.docs.topics, "versions": self.docs.versions,
            "problems": list(self.docs.problems), "warnings": list(self.warnings),
            "seconds_docs": round(self.seconds_docs, 3),
            "seconds_mkdocs": round(self.seconds_mkdocs, 3),
        }


def build(
    record: Record,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    progress: Progress | None = None,
    now: datetime | None = None,
) -> BuildResult:
    """Write the MkDocs project of ``record`` into ``out_dir`` and build it into
    ``out_dir/site`` (default ``out_dir``: beside the record, ``<name>-site``)."""
    from atlas_files.sitegen import files, runner

    docs = write_docs(record, out_dir or default_out_dir(record), progress=progress, now=now)
    started = time.perf_counter()
    # Built into a new folder and then put in place of site/: MkDocs' own clean step
    # would empty whatever site/ leads to, and write through any symlink in it.
    fresh = files.new_site_dir(docs.out_dir)
    try:
        warnings = runner.build(docs.config_file, docs.pages, progress, site_dir=fresh)
        site = files.swap_site(docs.out_dir, fresh)
    finally:
        files.discard(fresh)  # gone already, unless the build failed
    seconds = time.perf_counter() - started
    return BuildResult(docs.out_dir, site, site / "index.html", docs, tuple(warnings),
                       docs.seconds, seconds)


def _fingerprint(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Every folder and file of the record but receipts (reads change those, not the
    site), with its mtime and size: a new version, entry, lease generation or telemetry
    row changes it."""
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "receipts" and not d.startswith(".")]
        for name in [*dirs, *files]:
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            out.append((os.path.join(folder, name), st.st_mtime_ns, st.st_size))
    return tuple(sorted(out))


def serve(
    record: Record,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    dev_addr: str = "127.0.0.1:8000",
    open_browser: bool = False,
    poll_s: float = 2.0,
    say: Callable[[str], None] = lambda _message: None,
) -> None:
    """Serve the site with live reload until interrupted; the docs are rewritten from the
    record whenever it changes (polled every ``poll_s`` seconds), and MkDocs rebuilds."""
    from atlas_files.errors import AtlasError
    from atlas_files.sitegen import runner

    out = out_dir or default_out_dir(record)
    docs = write_docs(record, out)
    stop = threading.Event()

    def watch() -> None:
        seen = _fingerprint(record.root)
        while not stop.wait(poll_s):
            now = _fingerprint(record.root)
            if now == seen:
                continue
            seen = now
            try:
                write_docs(record, out)
                say("the record changed; the docs were rewritten")
            except AtlasError as exc:  # keep serving the last good docs
                say(f"the record changed but could not be read: {exc.message}")

    watcher = threading.Thread(target=watch, name="atlas-site-watch", daemon=True)
    watcher.start()
    try:
        runner.serve(docs.config_file, dev_addr, open_browser, say)
    finally:
        stop.set()
