"""The ``atlas`` command. Each command parses, calls one library function, renders, exits.

The body is entry.py; this face only hands its names on.
"""

from __future__ import annotations

from atlas_files.cli.entry import (
    main,
)

__all__ = [
    "main",
]
