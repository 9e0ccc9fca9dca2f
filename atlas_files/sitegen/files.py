"""The output folder and the files in it.

The folder is ours alone: it carries a marker file, and a folder that exists, is not
empty and lacks the marker is refused, because writing the docs deletes pages that no
longer exist. It must lie outside the record (the record is never written to). Files
whose bytes did not change are not rewritten, so `atlas site serve` rebuilds only when
the record changed.
"""

from __future__ import annotations

import os
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files.errors import BadInput

if TYPE_CHECKING:
    from atlas_files.record import Record

MARKER = ".atlas-site"
MARKER_TEXT = (
    "This folder is written by `atlas site build`: mkdocs.yml, docs/ and overrides/ are\n"
    "generated from the record and site/ is the built site. Everything here is replaced\n"
    "on the next build; do not edit it by hand.\n"
)


def default_out_dir(record: Record) -> Path:
    """``<parent>/<record name>-site``: beside the record, never inside it."""
    root = Path(os.path.realpath(record.root))
    return root.parent / f"{root.name}-site"


def prepare_out_dir(record: Record, out_dir: str | os.PathLike[str]) -> Path:
    out = Path(os.path.realpath(out_dir))
    root = Path(os.path.realpath(record.root))
    if out == root or root in out.parents or out in root.parents:
        raise BadInput(
            f"{out_dir} {'is inside' if root in out.parents or out == root else 'holds'} "
            "the record; the site must be written outside it",
            hint=f"pass --out with a folder beside the record, e.g. {default_out_dir(record)}",
        )
    if out.exists():
        if not out.is_dir():
            raise BadInput(f"{out_dir} exists and is not a folder", hint="choose another --out")
        if any(out.iterdir()) and not (out / MARKER).is_file():
            raise BadInput(
                f"{out_dir} is not empty and was not written by `atlas site build`; "
                "building there would replace its files",
                hint="choose an empty or new folder for --out",
            )
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    return out


class Writer:
    """Writes files under ``root``, skipping unchanged ones; ``prune`` removes the rest."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.written: set[Path] = set()

    def write(self, rel: str, data: str | bytes) -> None:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        path = self.root / rel
        self.written.add(path)
        try:
            if path.read_bytes() == raw:
                return
        except OSError:
            path.parent.mkdir(parents=True, exist_ok=True)
        # Written in place: a watching `mkdocs serve` that reads a page half-written
        # rebuilds again once the write is complete.
        path.write_bytes(raw)

    def copy_tree(self, source: Traversable, rel: str) -> None:
        for item in source.iterdir():
            if item.is_dir():
                self.copy_tree(item, f"{rel}/{item.name}")
            elif not item.name.startswith("."):
                self.write(f"{rel}/{item.name}", item.read_bytes())

    def prune(self) -> None:
        for folder, dirs, files in os.walk(self.root, topdown=False):
            for name in files:
                path = Path(folder) / name
                if path not in self.written:
                    path.unlink()
            for name in dirs:
                try:
                    (Path(folder) / name).rmdir()  # only succeeds when empty
                except OSError:
                    pass
