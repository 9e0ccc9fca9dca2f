"""The MkDocs engine: MkDocs and Material, in this process, on a folder written by
``docs.write_docs``.

In-process because starting another interpreter and importing MkDocs costs seconds on a
small record. MkDocs reports through logging: warnings are collected and returned, and
its per-page debug lines drive the progress callback.

MkDocs is imported inside ``build`` and ``serve`` only: importing it costs about 0.1 s
(0.3 s with Material's plugins, measured with ``python -X importtime``), which a Zensical
build, a test of the generator alone, or ``atlas status show`` must not pay.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from atlas_files.facts.errors import AtlasError

Progress = Callable[[str, int, int], None]
_PAGE_LINES = ("Reading: ", "Building page ")


class _Capture(logging.Handler):
    def __init__(self, pages: int, progress: Progress | None,
                 say: Callable[[str], None] | None) -> None:
        super().__init__(logging.DEBUG)
        self.total = max(1, 2 * pages)  # each page is read, then built
        self.done = 0
        self.progress = progress
        self.say = say
        self.warnings: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.levelno >= logging.WARNING:
            self.warnings.append(f"{record.levelname.lower()}: {message}")
            if self.say is not None:
                self.say(f"mkdocs {record.levelname.lower()}: {message}")
        elif record.levelno >= logging.INFO and self.say is not None:
            self.say(message)
        elif self.progress is not None and message.startswith(_PAGE_LINES):
            self.done = min(self.total, self.done + 1)
            self.progress("build", self.done, self.total)


@contextmanager
def _mkdocs_logging(handler: _Capture, level: int) -> Iterator[None]:
    root = logging.getLogger("mkdocs")
    pages = logging.getLogger("mkdocs.commands.build")
    saved = (root.level, root.propagate, pages.level)
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False  # MkDocs' messages are ours to show, not the root logger's
    if handler.progress is not None:
        pages.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        root.propagate = saved[1]
        pages.setLevel(saved[2])


def _quiet_material() -> None:
    # Material prints a notice about MkDocs 2 on import unless told not to; it is not
    # about this record and would land in every build's output.
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")


def build(config_file: Path, pages: int, progress: Progress | None = None,
          site_dir: Path | None = None) -> list[str]:
    """Build the site described by ``config_file`` (into ``site_dir`` if given, else
    where the config says); return MkDocs' warnings."""
    _quiet_material()
    from mkdocs.commands.build import build as mkdocs_build  # noqa: PLC0415 - 0.1 s, see above
    from mkdocs.config import load_config  # noqa: PLC0415 - see the module's docstring
    from mkdocs.exceptions import MkDocsException  # noqa: PLC0415 - idem

    handler = _Capture(pages, progress, None)
    with _mkdocs_logging(handler, logging.WARNING):
        try:
            extra = {"site_dir": str(site_dir)} if site_dir is not None else {}
            config = load_config(config_file=str(config_file), **extra)
            mkdocs_build(config)
        except (MkDocsException, OSError) as exc:
            raise AtlasError(
                f"MkDocs could not build the site in {config_file.parent}: {exc}",
                hint="check that mkdocs and mkdocs-material are installed "
                "(pip install 'mkdocs>=1.6,<2' 'mkdocs-material>=9.7,<10')",
            ) from None
    if progress is not None:
        progress("build", handler.total, handler.total)
    return handler.warnings


def serve(config_file: Path, dev_addr: str, open_browser: bool,
          say: Callable[[str], None]) -> None:
    """``mkdocs serve`` with live reload, until interrupted; messages go to ``say``."""
    _quiet_material()
    from mkdocs.commands.serve import serve as mkdocs_serve  # noqa: PLC0415 - see above
    from mkdocs.exceptions import MkDocsException  # noqa: PLC0415 - idem

    handler = _Capture(0, None, say)
    with _mkdocs_logging(handler, logging.INFO):
        try:
            mkdocs_serve(config_file=str(config_file), livereload=True, dev_addr=dev_addr,
                         open_in_browser=open_browser)
        except (MkDocsException, OSError) as exc:
            raise AtlasError(
                f"MkDocs could not serve the site: {exc}",
                hint="is the address in use? pass another --dev-addr HOST:PORT",
            ) from None
