"""Advisory leases: claim, renew, release, break, ls, show.

Durations are taken as text (``90m``, ``1h30m``) or seconds. Every result's JSON carries
the lease's state computed when read; ``ls`` and ``show`` carry the advisory text too,
because their reader is usually a machine that believes what the interface implies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from atlas_files import leases
from atlas_files.api import Worker
from atlas_files.leases import ADVISORY, Generation, Lease, Sheet

__all__ = ["ADVISORY", "LeaseChange", "LeaseHistory", "break_", "claim", "ls", "release",
           "renew", "show"]


@dataclass(frozen=True)
class LeaseChange:
    """A lease just claimed, renewed, released or broken, as it stands now."""

    lease: Lease

    @property
    def action(self) -> str | None:
        return self.lease.last_action

    def to_json(self) -> dict[str, Any]:
        return {**self.lease.to_json(), "action": self.lease.last_action}


@dataclass(frozen=True)
class LeaseHistory:
    """A resource's lease now, and every generation it went through, oldest first."""

    lease: Lease
    history: tuple[Generation, ...]

    def to_json(self) -> dict[str, Any]:
        return {**self.lease.to_json(), "advisory": ADVISORY,
                "history": [g.to_json() for g in self.history]}


def _seconds(duration: str | float | None) -> float | None:
    return leases.parse_duration(duration) if isinstance(duration, str) else duration


def claim(worker: Worker, resource: str, duration: str | float, why: str) -> LeaseChange:
    """Claim ``resource``; LeaseHeld (exit 4) if another holds it. Claiming a lease you
    hold renews it."""
    holder = worker.author
    seconds = _seconds(duration)
    if seconds is None:
        raise TypeError("claim needs a duration")
    return LeaseChange(leases.claim(worker.record, resource, holder=holder,
                                    duration_s=seconds, why=why))


def renew(worker: Worker, resource: str, duration: str | float | None = None,
          generation: int | None = None) -> LeaseChange:
    holder = worker.author
    return LeaseChange(leases.renew(worker.record, resource, holder=holder,
                                    duration_s=_seconds(duration), generation=generation))


def release(worker: Worker, resource: str, generation: int | None = None) -> LeaseChange:
    holder = worker.author
    return LeaseChange(leases.release(worker.record, resource, holder=holder,
                                      generation=generation))


def break_(worker: Worker, resource: str, why: str, duration: str | float | None = None,
           generation: int | None = None) -> LeaseChange:
    """Take over ``resource`` from a holder that is gone; the break stays in the history."""
    holder = worker.author
    return LeaseChange(leases.break_lease(worker.record, resource, holder=holder, why=why,
                                          duration_s=_seconds(duration),
                                          generation=generation))


def ls(worker: Worker) -> Sheet:
    """Every lease with its state computed now, GPU telemetry beside it, and the limits."""
    return leases.sheet(worker.record)


def show(worker: Worker, resource: str) -> LeaseHistory:
    current, history = leases.show(worker.record, resource)
    return LeaseHistory(current, tuple(history))
