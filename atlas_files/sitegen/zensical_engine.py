"""The Zensical engine: Material's successor, by the same team, on the same generated folder.

Zensical reads ``mkdocs.yml`` itself. It is run as ``python -m zensical build`` in a child
process rather than called in this one: its Rust core prints to the process's own stdout
(which `atlas site build --json` keeps for its JSON), holds its memory until the process
ends, and cannot be interrupted from Python.

Two settings differ from ``mkdocs.yml``, in a config of its own (``CONFIG``) beside it:

* ``site_dir`` is ``BUILD_DIR``, one fixed name, emptied before each build and then moved
  into place of ``site/`` like MkDocs' build folder. Zensical keeps a cache of rendered
  pages in ``<out>/.cache`` keyed by its whole config, site_dir included: building into a
  new folder each time would render every page every time. Zensical writes every page of
  the site on every build (from its cache when it can), so an empty folder is filled.
* its link validation is off. It cost about 9 ms a page (most of a rebuild) and the
  generator writes only links to pages and anchors it knows exist; the tests check every
  link of both engines' output.

Zensical ignores a plugin it does not know and exits 0 on a page it could not build, so
its exit code proves little: ``verify`` checks what it wrote.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from atlas_files.facts.errors import AtlasError, BadInput
from atlas_files.sitegen.files import Writer, discard

CONFIG = ".atlas-zensical.yml"
BUILD_DIR = ".atlas-zensical-site"
INSTALL_HINT = "pip install 'atlas-files[zensical]' (or pip install zensical)"
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
Progress = Callable[[str, int, int], None]


def require() -> None:
    """Refuse (exit 2, before anything is written) if Zensical is not installed."""
    if importlib.util.find_spec("zensical") is None:
        raise BadInput("the zensical engine is not installed in this Python environment",
                       hint=f"{INSTALL_HINT}, or build with --engine mkdocs")


def write_config(out: Path, mkdocs_config: Path) -> Path:
    """``CONFIG`` in ``out``: ``mkdocs.yml`` with Zensical's build folder and no link
    validation. Unchanged from build to build while ``mkdocs.yml`` is."""
    config: dict[str, Any] = yaml.safe_load(mkdocs_config.read_text(encoding="utf-8"))
    config["site_dir"] = BUILD_DIR
    config["validation"] = False
    head = ("# Written by `atlas site build --engine zensical` from mkdocs.yml, with its own\n"
            "# build folder and no link validation; `zensical build -f` this file.\n")
    with Writer(out) as writer:
        writer.write(CONFIG, head + yaml.safe_dump(config, sort_keys=False,
                                                   allow_unicode=True))
    return out / CONFIG


def fresh_build_dir(out: Path) -> Path:
    """``out/BUILD_DIR``, new and empty (what a failed build left there is removed)."""
    path = out / BUILD_DIR
    discard(path)
    os.mkdir(path)
    return path


def _count_pages(folder: Path) -> int:
    count = 0
    for _dirpath, _dirs, files in os.walk(folder):
        count += sum(1 for name in files if name.endswith(".html"))
    return count


_WHERE_RE = re.compile(r"\[\s*(\S+:\d+:\d+)\s*\]")


def _messages(output: str) -> list[str]:
    """Zensical's warnings and errors, one line each, with the place it names on the
    lines below (``index.md:2:7``), without colours."""
    lines = [_ANSI_RE.sub("", line).strip() for line in output.splitlines()]
    out: list[str] = []
    for i, line in enumerate(lines):
        if not line.lower().startswith(("warning", "error")):
            continue
        where = next((m.group(1) for m in map(_WHERE_RE.search, lines[i + 1:i + 3]) if m),
                     None)
        out.append(f"{line} ({where})" if where else line)
    return out


def build(config_file: Path, pages: int, progress: Progress | None = None) -> list[str]:
    """Run ``zensical build`` on ``config_file`` (written by ``write_config``) into its
    build folder; return its warnings. Raises AtlasError if it failed."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "zensical", "build", "-f", str(config_file)]
    site = config_file.parent / BUILD_DIR
    try:
        proc = subprocess.Popen(argv, cwd=config_file.parent, env=env, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, errors="replace")
    except OSError as exc:
        raise AtlasError(f"Zensical could not be started: {exc}", hint=INSTALL_HINT) from None
    output = ""
    try:
        if progress is None:
            output, _ = proc.communicate()
        else:
            # Zensical says nothing per page; the pages it has written are counted.
            while True:
                try:
                    output, _ = proc.communicate(timeout=1.0)
                    break
                except subprocess.TimeoutExpired:
                    progress("build", min(pages, _count_pages(site)), max(1, pages))
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if proc.returncode != 0:
        tail = "\n".join(_ANSI_RE.sub("", output).strip().splitlines()[-15:])
        raise AtlasError(
            f"Zensical could not build the site in {config_file.parent} "
            f"(exit {proc.returncode}):\n{tail}",
            hint=f"check that Zensical is installed and works: {INSTALL_HINT}")
    if progress is not None:
        progress("build", max(1, pages), max(1, pages))
    return _messages(output)


def serve(config_file: Path, dev_addr: str, open_browser: bool,
          say: Callable[[str], None]) -> None:
    """``zensical serve`` until interrupted; it rebuilds when the docs change."""
    argv = [sys.executable, "-m", "zensical", "serve", "-f", str(config_file), "-a", dev_addr]
    if open_browser:
        argv.append("--open")
    env = {**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(argv, cwd=config_file.parent, env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, errors="replace")
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip():
                say(_ANSI_RE.sub("", line.rstrip()))
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if proc.returncode not in (0, -2, -15):
        raise AtlasError(f"Zensical's server stopped (exit {proc.returncode})",
                         hint="is the address in use? pass another --dev-addr HOST:PORT")
