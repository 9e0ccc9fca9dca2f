"""Advisory leases: a sign-up sheet for shared machines, GPUs and datasets.

The body is core.py; this face only hands its names on.
"""

from __future__ import annotations

from atlas_files.protocol.leases.core import (
    ADVISORY,
    MAX_WHY,
    Generation,
    Lease,
    Sheet,
    break_lease,
    check_duration,
    claim,
    covering,
    current,
    ls,
    overlapping,
    parse_duration,
    problems_and_leases,
    release,
    renew,
    sheet,
    show,
    state_of,
)

__all__ = [
    "ADVISORY", "Generation", "Lease", "MAX_WHY", "Sheet", "break_lease", "check_duration",
    "claim", "covering", "current", "ls", "overlapping", "parse_duration",
    "problems_and_leases", "release", "renew", "sheet", "show", "state_of",
]
