"""`atlas site build | serve`: the record rendered as a browsable static site, built by
MkDocs + Material (the default) or by Zensical."""

from __future__ import annotations

from collections.abc import Callable

from atlas_files import sitegen
from atlas_files.api import Worker
from atlas_files.sitegen import ENGINES, BuildResult

Progress = Callable[[str, int, int], None]

__all__ = ["ENGINES", "BuildResult", "build", "serve"]


def build(worker: Worker, out_dir: str | None = None, *, engine: str | None = None,
          progress: Progress | None = None) -> BuildResult:
    """Write the site's MkDocs project into ``out_dir`` (default: beside the record) and
    build it with ``engine`` (default: ``site.engine`` in atlas.yaml, else mkdocs), then
    check what the engine wrote; ``to_json()`` of the result is `atlas site build --json`."""
    return sitegen.build(worker.record, out_dir, engine=engine, progress=progress)


def serve(worker: Worker, out_dir: str | None = None, *, engine: str | None = None,
          dev_addr: str = "127.0.0.1:8000", open_browser: bool = False,
          say: Callable[[str], None] = print) -> None:
    """Serve the site with live reload until interrupted."""
    sitegen.serve(worker.record, out_dir, engine=engine, dev_addr=dev_addr,
                  open_browser=open_browser, say=say)
