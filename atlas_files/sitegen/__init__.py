"""The browsable site: the whole record rendered with MkDocs + Material, or with Zensical.

The body is core.py; this face only hands its names on.
"""

from __future__ import annotations

from atlas_files.sitegen.core import (
    ENGINES,
    BuildResult,
    DocsResult,
    Progress,
    build,
    default_out_dir,
    serve,
    write_docs,
)

__all__ = [
    "BuildResult", "DocsResult", "ENGINES", "Progress", "build", "default_out_dir", "serve",
    "write_docs",
]
