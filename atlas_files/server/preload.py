"""The command server learns what its commands import.

The server imports atlas and Python-Markdown once; a links check of a MkDocs site then
imports the site's extensions (pymdown-extensions, Pygments' parts) in every worker, each
time anew. So each worker, as it exits, tells the server the names of the modules it
imported, and the server, while idle, imports those itself: the next worker starts with
them.

What the server imports is its own decision, never the command's: a name is imported only
if the server finds the module on its own ``sys.path``, in its own install (the standard
library and site-packages of its interpreter), never a module of a project or of the
folder a command ran in (a site's hooks, its docs). A module that fails to import, or
that lies elsewhere, is never tried again; at most ``MAX_LEARNED`` are learned; what was
learned is kept in the server's memory only, and its files join the code stamp that
makes a server step aside when its code changes on disk (serve.CodeStamp). Importing
stops as soon as a command arrives.

A new server starts with the extensions most sites use (``SEED``), under the same rule:
its first links check need not wait for them to be learned. Both halves are kept because
they pay: bench/bench_ab.py runs a links check through a new server, and through one that
ran it before, with and without each.

Workers tell their names one per line, each write shorter than PIPE_BUF, rather than as
frames.py's messages: several workers write to the one pipe, and a write that short is
never interleaved with another's, while a longer message could be, and one torn message
would make every later length wrong; a torn line loses only its own name.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import os
import sys
import sysconfig
import warnings
from collections.abc import Callable

MAX_LEARNED = 800
# Imported at the server's start, where installed: the Markdown extensions Material for
# MkDocs documents for its sites (Python-Markdown's own, pymdown-extensions'), which most
# MkDocs sites' links checks render with. Others are learned as commands import them.
SEED = (
    "markdown.extensions.toc", "markdown.extensions.tables",
    "markdown.extensions.fenced_code", "markdown.extensions.attr_list",
    "markdown.extensions.admonition", "markdown.extensions.md_in_html",
    "markdown.extensions.footnotes", "markdown.extensions.def_list",
    "markdown.extensions.abbr", "pymdownx.superfences", "pymdownx.highlight",
    "pymdownx.inlinehilite", "pymdownx.snippets", "pymdownx.tabbed", "pymdownx.details",
    "pymdownx.magiclink", "pymdownx.tasklist", "pymdownx.betterem", "pymdownx.caret",
    "pymdownx.mark", "pymdownx.tilde", "pymdownx.keys", "pymdownx.smartsymbols",
    "pymdownx.arithmatex", "pymdownx.critic", "pygments.formatters.html",
)
_MAX_NAME = 200
_CHUNK = 4096  # PIPE_BUF: a write this long is never interleaved with another's

# Set in the server, inherited by each worker it forks: where a worker tells, and the
# modules the server had when it forked.
_writer: int | None = None
_known: frozenset[str] = frozenset()


def tell() -> None:
    """In a worker that is about to exit: tell the server which modules it imported.
    Never blocks, never raises: a full pipe loses the names, never the command's time."""
    if _writer is None:
        return
    try:
        names = [n for n in list(sys.modules) if n not in _known and len(n) <= _MAX_NAME]
        chunks = [""]
        for name in names:
            if len(chunks[-1]) + len(name) + 1 > _CHUNK:
                chunks.append("")
            chunks[-1] += name + "\n"
        for chunk in chunks:
            if chunk:
                os.write(_writer, chunk.encode())
    except BaseException:  # noqa: BLE001, S110 - the worker is exiting: nothing to say it to
        pass


def told(reader: int, errors: str) -> list[str]:
    """The lines workers wrote to the pipe ``reader`` (non-blocking) since the last look."""
    data = b""
    try:
        while chunk := os.read(reader, 1 << 16):
            data += chunk
    except BlockingIOError:
        pass
    return data.decode("utf-8", errors).splitlines()


def _roots() -> list[str]:
    """The folders of the server's own install: its standard library, its
    site-packages."""
    paths = sysconfig.get_paths()
    found = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib",
                                                   "platlib") if paths.get(k)}
    return sorted(p + os.sep for p in found)


class Learner:
    """The server's side: what workers told, and what of it was imported."""

    def __init__(self) -> None:
        global _writer, _known
        self._reader, writer = os.pipe()
        os.set_blocking(self._reader, False)
        os.set_blocking(writer, False)
        _writer = writer
        self._roots = _roots()
        self._told: dict[str, None] = {}  # in the order workers imported them
        self.failed: set[str] = set()
        self.learned: list[str] = []
        for name in SEED:  # before the server stamps its code: these are its own
            if name not in sys.modules and not (self._installed(name) and self._import(name)):
                self.failed.add(name)
        _known = frozenset(sys.modules)

    def learn(self, busy: Callable[[], bool]) -> list[str]:
        """Import what workers told of, one module at a time until ``busy()``; the files
        of the modules that came in."""
        global _known
        self._read()
        before = set(sys.modules)
        while self._told and len(self.learned) + len(self.failed) < MAX_LEARNED \
                and not busy():
            name = next(iter(self._told))
            del self._told[name]
            if name in sys.modules or name in self.failed:
                continue
            if not self._installed(name) or not self._import(name):
                self.failed.add(name)
                continue
            self.learned.append(name)
        added = [m for n, m in list(sys.modules.items()) if n not in before]
        if added:
            _known = frozenset(sys.modules)
            gc.freeze()  # as the server's own imports: shared with workers, never scanned
        return [f for m in added if isinstance(f := getattr(m, "__file__", None), str)]

    def _read(self) -> None:
        for raw in told(self._reader, "replace"):
            if raw and raw not in sys.modules and raw not in self.failed and all(
                    part.isidentifier() for part in raw.split(".")):
                self._told[raw] = None

    def _installed(self, name: str) -> bool:
        """Whether ``name`` is found on the server's own path, within its install. The
        top-level package is found first, without importing anything: finding a
        submodule imports its parents."""
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):
            try:
                spec = importlib.util.find_spec(".".join(parts[:depth]))
            except (ImportError, ValueError, AttributeError):
                return False
            if spec is None:
                return False
            if spec.origin in ("built-in", "frozen"):
                continue
            places = [spec.origin] if spec.origin else []
            places += list(spec.submodule_search_locations or [])
            if not places or not all(self._inside(p) for p in places):
                return False
        return True

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return any(real.startswith(root) for root in self._roots)

    @staticmethod
    def _import(name: str) -> bool:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - whatever it raises, it is not tried again
            return False
        return True
