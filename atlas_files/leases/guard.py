"""Which of a commit's paths lie under another identity's unexpired path lease.

The pre-commit hook ``atlas-leases`` asks this for every path a commit touches. The
holder's own leases never stop the holder; an expired lease stops nobody (expiry is
computed when read, as everywhere). A lease whose newest generation cannot be read is
reported, not obeyed: whether it is held cannot be known, and a damaged file must not
stop every commit in the repository.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from atlas_files.leases.paths import Index
from atlas_files.leases.view import Lease, read_all

if TYPE_CHECKING:
    from atlas_files.record import Record


@dataclass(frozen=True)
class Conflict:
    """One path of the commit, and the lease of someone else that covers it."""

    path: str
    glob: str  # the lease's glob that covers it
    lease: Lease

    def to_json(self) -> dict[str, Any]:
        lease = self.lease
        return {"path": self.path, "glob": self.glob, "resource": lease.resource,
                "holder": lease.holder, "why": lease.why, "generation": lease.generation,
                "expires_at": lease.expires_at, "expires_in_s": lease.expires_in_s}


def conflicts(record: Record, identity: str | None,
              paths: Sequence[str]) -> tuple[list[str], list[Conflict]]:
    """(what could not be read, every (path, lease) where ``paths`` meet a lease held by
    anyone but ``identity``), in the order of ``paths``; for each path, one conflict per
    lease (its first covering glob), by resource name."""
    problems, leases, _ = read_all(record)
    others = [lease for lease in leases if lease.covers_paths and lease.holder != identity]
    if not others:
        return problems, []
    index = Index((glob, lease) for lease in others for glob in lease.paths)
    found = []
    for path in paths:
        seen: set[str] = set()
        for glob, lease in sorted(index.covering(path), key=lambda gl: gl[1].resource):
            if lease.resource not in seen:
                seen.add(lease.resource)
                found.append(Conflict(path, glob, lease))
    return problems, found
