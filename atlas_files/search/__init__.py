"""`atlas search`: full text over status, artifacts, decisions and corrections.

The body is core.py; this face only hands its names on.
"""

from __future__ import annotations

from atlas_files.search.core import (
    DEFAULT_LIMIT,
    search,
)

__all__ = [
    "DEFAULT_LIMIT", "search",
]
