"""The public API: what every front end (the CLI, the MCP server, sync) calls.

The body is worker.py; this face only hands its names on.
"""

from __future__ import annotations

from atlas_files.api.worker import (
    Worker,
    reads,
    writes,
)

__all__ = [
    "Worker", "reads", "writes",
]
