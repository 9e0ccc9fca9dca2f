"""Advisory leases: claim, renew, release, break, ls, show, and who covers a path.

Durations are taken as text (``90m``, ``1h30m``) or seconds. Every result's JSON carries
the lease's state computed when read; ``ls`` and ``show`` carry the advisory text too,
because their reader is usually a machine that believes what the interface implies.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atlas_files.api import Worker, reads, writes
from atlas_files.facts import layout, timeutil
from atlas_files.protocol import leases
from atlas_files.protocol.leases import ADVISORY, Generation, Lease, Sheet, store
from atlas_files.protocol.leases.paths import check_glob, is_literal
from atlas_files.storage import gitcmd

__all__ = ["ADVISORY", "LeaseChange", "LeaseHistory", "break_", "claim", "covering", "ls",
           "release", "renew", "show"]


@dataclass(frozen=True)
class LeaseChange:
    """A lease just claimed, renewed, released or broken, as it stands now; a claim with
    paths also lists the unexpired leases of others whose paths overlap them (said, not
    refused: two resources may share paths, and the sheet is advisory). A claim of a lease
    its holder held already renews it, and ``changed`` says what that replaced: its
    expiry (``{"was", "now"}``; a shorter claim shortens it) and its why."""

    lease: Lease
    overlapping: tuple[Lease, ...] = ()
    changed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def action(self) -> str | None:
        return self.lease.last_action

    @property
    def warnings(self) -> tuple[str, ...]:
        """What a holder may not have meant: a claim that shortened the lease or
        replaced its why (the CLI prints these on stderr, MCP after the result)."""
        said = []
        shorter = self._shortened_s()
        if shorter:
            expiry = self.changed["expires_at"]
            said.append(f"this claim renewed your lease of {self.lease.resource} and shortened "
                        f"it by {timeutil.format_duration(_to_minute(shorter))}: it now expires at "
                        f"{expiry['now']}, no longer at {expiry['was']} (a claim counts its "
                        "duration from now)")
        why = self.changed.get("why")
        if why:
            said.append(f"this claim replaced the why of your lease of {self.lease.resource}: "
                        f"it was {why['was']!r}, it is now {why['now']!r}")
        return tuple(said)

    def _shortened_s(self) -> float:
        expiry = self.changed.get("expires_at")
        if not expiry:
            return 0.0
        try:
            cut = timeutil.parse_time(str(expiry["was"])) - timeutil.parse_time(str(expiry["now"]))
        except ValueError:  # a hand-written generation before it: nothing to compare
            return 0.0
        return max(0.0, cut.total_seconds())

    def to_json(self) -> dict[str, Any]:
        return {**self.lease.to_json(), "action": self.lease.last_action,
                "overlapping": [lease.to_json() for lease in self.overlapping],
                "changed": {k: dict(v) for k, v in self.changed.items()}}


@dataclass(frozen=True)
class LeaseHistory:
    """A resource's lease now, and every generation it went through, oldest first."""

    lease: Lease
    history: tuple[Generation, ...]

    def to_json(self) -> dict[str, Any]:
        return {**self.lease.to_json(), "advisory": ADVISORY,
                "history": [g.to_json() for g in self.history]}


def _to_minute(seconds: float) -> float:
    """A span said to the minute: the seconds between two calls are not what changed."""
    return seconds if seconds < 60 else round(seconds / 60) * 60.0


def _seconds(duration: str | float | None) -> float | None:
    return leases.parse_duration(duration) if isinstance(duration, str) else duration


def _given(duration: str | float | None) -> str | None:
    """The duration as the caller wrote it, for a refusal to say back."""
    return duration if isinstance(duration, str) else None


@writes("lease claim", "resource")
def claim(worker: Worker, resource: str, duration: str | float, why: str,
          paths: Sequence[str] = ()) -> LeaseChange:
    """Claim ``resource``; LeaseHeld (exit 4) if another holds it. Claiming a lease you
    hold renews it (keeping its paths unless ``paths`` are given). ``paths``: repository
    path globs the lease covers, relative to the repository root (leases.paths)."""
    holder = worker.author
    seconds = _seconds(duration)
    if seconds is None:
        raise TypeError("claim needs a duration")
    _refuse_unseen_claim(worker, resource, "claim")
    lease = leases.claim(worker.record, resource, holder=holder, duration_s=seconds, why=why,
                         paths=paths, given=_given(duration))
    return LeaseChange(lease, tuple(leases.overlapping(worker.record, lease.paths,
                                                       besides=holder)),
                       _replaced(worker, lease) if lease.last_action == "renew" else {})


def _refuse_unseen_claim(worker: Worker, resource: str, verb: str) -> None:
    """NotAccepted (exit 2) for a claim (or a renew or break, ``verb``) on a clone whose
    atlas.yaml has a sync: block no person here accepted: the lease would be held on this
    clone only, while another machine may hold the resource, and "claimed" would say
    otherwise. A claimer who wants that asks for it (`--no-sync`)."""
    if worker.sync is False or worker.record.config.sync is None:
        return
    from atlas_files.sync import accepted  # noqa: PLC0415 - only a record that syncs

    pending = accepted.standing(worker.record).pending
    if pending is not None and not pending.ever_accepted:
        raise accepted.NotAccepted(
            f"nothing done: {pending.sentence()}, so `lease {verb} {resource}` would hold it "
            "on this clone only, unseen by the other machines (one of them may hold it now)",
            hint=f"{accepted.HINT}, and {verb} again; to hold it on this clone only, "
            f"knowingly, {verb} with --no-sync")


def _replaced(worker: Worker, lease: Lease) -> dict[str, dict[str, Any]]:
    """What the claim that renewed ``lease`` replaced, from the generation it wrote (which
    keeps a summary of the one before, so no other writer can come between)."""
    where = store.folder(worker.record, lease.resource)
    gen = store.read(where, lease.resource, layout.generation_filename(lease.generation))
    before = gen.previous or {}
    changed: dict[str, dict[str, Any]] = {}
    for key, now in (("expires_at", gen.expires_at), ("why", gen.why)):
        was = before.get(key)
        if was is not None and was != now:
            changed[key] = {"was": was, "now": now}
    return changed


@writes("lease renew", "resource")
def renew(worker: Worker, resource: str, duration: str | float | None = None,
          generation: int | None = None) -> LeaseChange:
    holder = worker.author
    _refuse_unseen_claim(worker, resource, "renew")
    return LeaseChange(leases.renew(worker.record, resource, holder=holder,
                                    duration_s=_seconds(duration), generation=generation,
                                    given=_given(duration)))


@writes("lease release", "resource")
def release(worker: Worker, resource: str, generation: int | None = None) -> LeaseChange:
    holder = worker.author
    return LeaseChange(leases.release(worker.record, resource, holder=holder,
                                      generation=generation))


@writes("lease break", "resource")
def break_(worker: Worker, resource: str, why: str, duration: str | float | None = None,
           generation: int | None = None) -> LeaseChange:
    """Take over ``resource`` from a holder that is gone; the break stays in the history."""
    holder = worker.author
    _refuse_unseen_claim(worker, resource, "break")
    return LeaseChange(leases.break_lease(worker.record, resource, holder=holder, why=why,
                                          duration_s=_seconds(duration),
                                          generation=generation, given=_given(duration)))


@reads
def ls(worker: Worker, path: str | None = None) -> Sheet:
    """Every lease with its state computed now, GPU telemetry beside it, and the limits;
    with ``path``, only the unexpired leases covering it (see ``covering``)."""
    if path is not None:
        return covering(worker, path)
    return leases.sheet(worker.record)


def covering(worker: Worker, path: str, repo: str | os.PathLike[str] | None = None) -> Sheet:
    """The unexpired leases whose path globs cover ``path`` (relative to the repository
    root; a glob is allowed), and leases of anything under it when it is a folder: written
    with a trailing ``/``, or a folder in ``repo`` (default: the git repository holding the
    current folder, if any). Rows that cannot be read are kept, as they may cover it."""
    glob = check_glob(path, "the path")
    folder = path.endswith("/") or glob == "**"
    if not folder and is_literal(glob):
        folder = _is_folder(glob, repo)
    return leases.covering(worker.record, glob, folder=folder)


def _is_folder(path: str, repo: str | os.PathLike[str] | None) -> bool:
    try:
        root = Path(repo) if repo is not None else gitcmd.toplevel(Path.cwd())
    except gitcmd.NotARepository:
        return False
    return (root / path).is_dir()


@reads
def show(worker: Worker, resource: str) -> LeaseHistory:
    current, history = leases.show(worker.record, resource)
    return LeaseHistory(current, tuple(history))
