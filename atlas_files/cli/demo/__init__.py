"""`atlas demo`: a record built from scratch, written and read by several identities,
checked, and rendered as a site. Each scene lives in its own module and prints what it
does as it happens.

The body is play.py; this face only hands its names on.
"""

from __future__ import annotations

from atlas_files.cli.demo.play import (
    atlas_cli,
    run,
    run_fresh,
)

__all__ = [
    "atlas_cli", "run", "run_fresh",
]
