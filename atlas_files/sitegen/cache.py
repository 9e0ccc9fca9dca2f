"""Rendered bodies and diffs kept between builds, so a rebuild renders only what is new.

Versions never change, so Python-Markdown's output for a body and the diff of two bodies
are keyed by a digest of what they were made from, and kept in one file,
``<out>/.atlas-cache/bodies.json`` (read and written through ``files.Writer``, so never
through a symlink). What is kept is made *before* escaping and
sanitising: whatever the cache holds (even a hand-edited cache) still goes through nh3,
the link rewriting and the escaping on every build.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from atlas_files.sitegen.files import Writer

CACHE_DIR = ".atlas-cache"
CACHE_FILE = "bodies.json"
FORMAT = 1


def _stamp() -> str:
    import markdown

    # A new Python-Markdown may render the same text differently.
    return f"{FORMAT}/markdown-{markdown.__version__}"


class SiteCache(dict[str, str]):
    """Loaded once per build; ``save`` keeps only the entries this build used."""

    def __init__(self, folder: Writer | None) -> None:
        super().__init__()
        self.folder = folder  # the cache's folder, written without following symlinks
        self.used: set[str] = set()
        self.loaded = 0
        if folder is None:
            return
        raw = folder.read(CACHE_FILE)
        try:
            data = json.loads(raw) if raw is not None else None
        except (ValueError, RecursionError):
            return
        if isinstance(data, dict) and data.get("stamp") == _stamp() and isinstance(
                data.get("bodies"), dict):
            self.update({str(k): str(v) for k, v in data["bodies"].items()})
            self.loaded = len(self)

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        self.used.add(key)
        return super().get(key, default)

    def __setitem__(self, key: str, value: str) -> None:
        self.used.add(key)
        super().__setitem__(key, value)

    def save(self) -> None:
        if self.folder is None:
            return
        keep = {k: self[k] for k in sorted(self.used) if k in self}
        if len(keep) == self.loaded == len(self):
            return  # nothing new and nothing dropped
        self.folder.replace(CACHE_FILE, json.dumps({"stamp": _stamp(), "bodies": keep})
                            .encode("utf-8"))
