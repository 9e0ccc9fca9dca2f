"""atlas-files: a plain-files record for workers who never meet.

The Python API is :mod:`atlas_files.api` (``Worker`` and one function per command, as
the README shows); the ``atlas`` command, the MCP server and the hooks are thin layers
over it.
"""

from __future__ import annotations

# Kept as a literal: reading it from package metadata costs a noticeable slice of the
# CLI's cold start, and agents call `atlas` hundreds of times a session.
__version__ = "0.1.0"

__all__ = ["__version__"]
