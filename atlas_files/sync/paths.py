"""Which paths of a record travel by git, which of them are history, and where a draft goes.

A path here is relative to the record's root, with '/' separators, as git prints it.
History (versions, decisions, corrections, lease generations) is append-only: a new file,
never a changed or deleted one. A few files are mutable config (atlas.yaml, the README,
the .gitignore). Everything else (receipts, telemetry, session rows, caches, a stray file
someone dropped in) never travels.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from atlas_files.facts import guide, layout
from atlas_files.storage import fsio

CONFIG_FILES = frozenset({layout.CONFIG_NAME, "README.md", guide.BESIDE_NAME, ".gitignore"})


_HISTORY = {layout.VERSION: "version", layout.ENTRY: "entry", layout.GENERATION: "lease"}


class Kind(NamedTuple):
    """What a record path is: ``version``, ``entry``, ``lease``, ``config`` or ``other``."""

    what: str
    project: str = ""
    name: str = ""  # topic ("status" for the status stream), entry id, or lease resource
    number: int = 0  # version or generation

    @property
    def history(self) -> bool:
        """Append-only: never changed or deleted once published."""
        return self.what in ("version", "entry", "lease")

    @property
    def travels(self) -> bool:
        return self.what != "other"

    def describe(self) -> str:
        if self.what == "version":
            if self.name == "status":
                return f"status v{self.number} of {self.project}"
            return f"{self.name} v{self.number} ({self.project})"
        if self.what == "entry":
            what = "decision" if self.name.startswith("dec-") else "correction" \
                if self.name.startswith("cor-") else "task"
            return f"{what} {self.name} ({self.project})"
        if self.what == "lease":
            return f"lease {self.name} generation {self.number}"
        return "a record file"


def kind(path: str) -> Kind:
    found = layout.record_file(path)
    # `plan.v7.md` is no version readers see, `notes.md` among the decisions no entry:
    # neither travels.
    if found is not None and found.canonical and found.kind in _HISTORY:
        return Kind(_HISTORY[found.kind], found.project, found.name, found.number)
    if path in CONFIG_FILES:
        return Kind("config")
    return Kind("other")


def draft_path(path: str, identity: str) -> str:
    """Where a colliding version (or entry) is kept, relative to the record's root:
    ``.atlas-drafts/<project>/<topic>/<name>.v0004.<identity>.md``."""
    k = kind(path)
    draft = layout.draft_filename(path.rsplit("/", 1)[-1], identity)
    if k.what == "version":
        return f"{layout.DRAFTS}/{k.project}/{k.name}/{draft}"
    if k.what == "entry":
        return f"{layout.DRAFTS}/{k.project}/{path.split('/')[2]}/{draft}"
    return f"{layout.DRAFTS}/other/{path.replace('/', '~')}.{identity}"


def listing(paths: list[str], limit: int = 5) -> str:
    """The first few paths, then how many more: a message stays a line or two."""
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def read_only(top: Path, paths: list[str], to_record: Callable[[str], str | None]) -> None:
    """Leave the published files among ``paths`` (as git names them, from ``top``) that a
    checkout just wrote read-only, as a version written here is: git writes them 0644,
    and an editor would then not warn before an edit in place."""
    for path in paths:
        rel = to_record(path)
        if rel is not None and kind(rel).history:
            with contextlib.suppress(OSError):
                fsio.make_read_only(top / path)
