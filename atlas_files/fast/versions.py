"""How a version is introduced where it is shown: its header lines and the warning for a
body edited in place. Click-free, so that `atlas status show` answered before click
(fast/status.py) and the full CLI's `get` and `status show` (cli/) print the same."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from atlas_files.facts import timeutil
from atlas_files.fast import output


def age(written_at: str, at: datetime | None = None) -> str:
    """How long ago ``written_at`` was; a table passes one ``at`` for all its rows."""
    return timeutil.age_of(written_at, at)


def header(label: str, doc: Any, marks: dict[str, Any]) -> list[str]:
    based = "the first version" if doc.based_on == 0 else f"based on v{doc.based_on}"
    lines = [f"{label} v{doc.version}, written {age(doc.written_at)} by {doc.author} "
             f"({doc.written_at}), {based}"]
    if doc.summary:
        lines.append(f"summary: {doc.summary}")
    if doc.proposal:
        accepted = marks.get("accepted_by")
        lines.append(f"ACCEPTED by decision {accepted}" if accepted else
                     "PROPOSAL: not accepted by any decision yet")
    retracted = marks.get("retracted")
    if retracted:
        lines.append(f"RETRACTED by {retracted['author']} ({retracted['id']}): "
                     f"{retracted['why']}")
    for r in marks.get("retractions", [])[1:]:
        lines.append(f"also retracted by {r['author']} ({r['id']}): {r['why']}")
    for c in marks.get("corrected_by", []):
        lines.append(f"CORRECTED by {c['author']} ({c['id']}): {c['what']}")
    return lines


def warn_digest(doc: Any) -> None:
    if doc.digest_ok is False:
        output.say(f"atlas: warning: {doc.path} was edited in place: its body no longer "
                   "matches its digest (versions are immutable; run `atlas check`)")
