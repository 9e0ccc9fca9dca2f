"""Many machines: a git remote as the record's transport (`atlas sync`).

The body is core.py; this face only hands its names on.
"""

from __future__ import annotations

from atlas_files.sync.core import (
    NOT_TRAVELLING,
    refresh,
    settings,
    write,
)

__all__ = [
    "NOT_TRAVELLING", "refresh", "settings", "write",
]
