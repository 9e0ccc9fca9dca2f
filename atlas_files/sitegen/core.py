"""The browsable site: the whole record rendered with MkDocs + Material, or with Zensical.

``build(record, out_dir, engine=...)`` writes a plain MkDocs project into ``out_dir``
(``mkdocs.yml``, ``docs/``, ``overrides/``; no plugins but search and tags, no hooks, so
both engines build the same folder) and builds it into ``out_dir/site`` with the engine
asked for (``engines``), then checks what the engine wrote (``engines.verify``). Nothing
is written or deleted outside ``out_dir``, and nothing through a symlink (see ``files``);
a record file that cannot be read, or whose body is over the record's ``body_limit``, is
left out and named in ``DocsResult.problems``, never a failed build. ``serve`` does the
same behind the engine's live-reloading server and rewrites the docs whenever the record
changes.

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

from atlas_files.facts.errors import AtlasError
from atlas_files.sitegen import engines, files, mkdocs_engine, zensical_engine
from atlas_files.sitegen.docs import DocsResult, Progress, write_docs
from atlas_files.sitegen.engines import ENGINES
from atlas_files.sitegen.files import default_out_dir

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

__all__ = [
    "ENGINES", "BuildResult", "DocsResult", "Progress", "build", "default_out_dir",
    "serve", "write_docs",
]


@dataclass(frozen=True)
class BuildResult:
    out_dir: Path
    site_dir: Path
    index: Path  # the page to open
    docs: DocsResult
    engine: str
    warnings: tuple[str, ...]
    search_entries: int  # entries in the engine's search index, checked by engines.verify
    seconds_docs: float
    seconds_engine: float
    # CPU seconds (this process and the engine's, if it ran in a child), for the benchmark:
    # on a shared machine the wall clock mostly measures the others.
    cpu_docs: float = 0.0
    cpu_engine: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "out": str(self.out_dir), "site": str(self.site_dir), "index": str(self.index),
            "engine": self.engine, "config": str(self.docs.config_file),
            "pages": self.docs.pages, "topics": self.docs.topics,
            "versions": self.docs.versions, "search_entries": self.search_entries,
            "problems": list(self.docs.problems), "warnings": list(self.warnings),
            "seconds_docs": round(self.seconds_docs, 3),
            "seconds_engine": round(self.seconds_engine, 3),
        }


def build(
    record: Record,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    engine: str | None = None,
    progress: Progress | None = None,
    now: datetime | None = None,
) -> BuildResult:
    """Write the MkDocs project of ``record`` into ``out_dir`` and build it into
    ``out_dir/site`` (default ``out_dir``: beside the record, ``<name>-site``) with
    ``engine`` (default: ``site.engine`` in atlas.yaml, else MkDocs)."""
    engine = engines.choose(engine, record.config.raw)
    if engine == "zensical":
        zensical_engine.require()
    cpu = _cpu()
    docs = write_docs(record, out_dir or default_out_dir(record), progress=progress, now=now)
    cpu_docs = _cpu() - cpu
    started = time.perf_counter()
    # Built into a folder of its own and then put in place of site/: MkDocs' own clean
    # step would empty whatever site/ leads to, and write through any symlink in it.
    if engine == "zensical":
        config = zensical_engine.write_config(docs.out_dir, docs.config_file)
        fresh = zensical_engine.fresh_build_dir(docs.out_dir)
    else:
        fresh = files.new_site_dir(docs.out_dir)
    try:
        if engine == "zensical":
            warnings = zensical_engine.build(config, docs.pages, progress)
        else:
            warnings = mkdocs_engine.build(docs.config_file, docs.pages, progress,
                                           site_dir=fresh)
        entries = engines.verify(engine, fresh, docs.page_files)
        site = files.swap_site(docs.out_dir, fresh)
    finally:
        files.discard(fresh)  # gone already, unless the build failed
    seconds = time.perf_counter() - started
    return BuildResult(docs.out_dir, site, site / "index.html", docs, engine,
                       tuple(warnings), entries, docs.seconds, seconds,
                       cpu_docs, _cpu() - cpu - cpu_docs)


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _fingerprint(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Every folder and file of the record but receipts (reads change those, not the
    site), with its mtime and size: a new version, entry, lease generation or telemetry
    row changes it."""
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "receipts" and not d.startswith(".")]
        for name in [*dirs, *names]:
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
    engine: str | None = None,
    dev_addr: str = "127.0.0.1:8000",
    open_browser: bool = False,
    poll_s: float = 2.0,
    say: Callable[[str], None] = lambda _message: None,
) -> None:
    """Serve the site with live reload until interrupted; the docs are rewritten from the
    record whenever it changes (polled every ``poll_s`` seconds), and the engine's server
    rebuilds what changed."""
    engine = engines.choose(engine, record.config.raw)
    if engine == "zensical":
        zensical_engine.require()
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
        if engine == "zensical":
            config = zensical_engine.write_config(docs.out_dir, docs.config_file)
            zensical_engine.fresh_build_dir(docs.out_dir)
            zensical_engine.serve(config, dev_addr, open_browser, say)
        else:
            mkdocs_engine.serve(docs.config_file, dev_addr, open_browser, say)
    finally:
        stop.set()
