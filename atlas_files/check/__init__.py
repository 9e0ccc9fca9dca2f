"""`atlas check`: find what a hand edit got wrong, in a record or in any repository.

The body is core.py; this face only hands its names on.
"""

from __future__ import annotations

from atlas_files.check.core import (
    CODES,
    ERROR,
    WARNING,
    Finding,
    Report,
    check_links,
    check_record,
    check_staged,
    check_versions,
    find_record,
)

__all__ = [
    "CODES", "ERROR", "Finding", "Report", "WARNING", "check_links", "check_record",
    "check_staged", "check_versions", "find_record",
]
