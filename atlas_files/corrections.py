"""Corrections and retractions as they are shown where a version is read.

Seam for the decision-log issue: until corrections and decisions exist, nothing is
corrected, retracted or accepted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from atlas_files.record import Record


def marks_json(record: Record, project: str, kind: str, name: str, version: int) -> dict[str, Any]:
    return {"corrected_by": [], "retracted": None, "accepted_by": None}


def proposal_state(record: Record, project: str, name: str, version: int, proposal: bool) -> str:
    return "proposed" if proposal else ""
