"""Which of a commit's paths lie under another identity's unexpired path lease.

The pre-commit hook ``atlas-leases`` asks this for every path a commit touches. The
holder's own leases never stop the holder; an expired lease stops nobody (expiry is
computed when read, as everywhere). A lease whose newest generation cannot be read is
reported, not obeyed: whether it is held cannot be known, and a damaged file must not
stop every commit in the repository.

It runs on every commit, against every lease of the record, so it reads in two passes: a
quick look at each newest generation (who holds it, until when, which paths) that skips
what cannot matter (no paths, the committer's own, expired, released), then the full
read, with every check a lease read gets, of only the leases that cover a path of the
commit. A generation the quick look cannot make sense of gets the full read at once, so
its damage is reported in the words every reader uses. The quick look goes through this
user's index of the record's leases (``pathleases``), which rereads only the leases that
changed since it last looked; the edit guard, which runs before every edit an agent
makes, asks the same two passes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput
from atlas_files.protocol import pathleases
from atlas_files.protocol.leases import store
from atlas_files.protocol.leases.paths import Index
from atlas_files.protocol.leases.view import Lease, state_of

if TYPE_CHECKING:
    from datetime import datetime

    from atlas_files.storage.record import Record


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


# A lease the quick look could not rule out: (resource, its folder, the newest generation's
# file name). A plain tuple: a thousand of them are made on every commit.
_Seen = tuple[str, str, str]


def _expired(expires: str, now: str) -> bool:
    """Whether ``expires`` is at or before ``now`` (both as atlas writes times: the same
    fixed width, so text order is time order); other spellings are parsed."""
    if len(expires) == len(now) and expires[-1] == "Z" and expires[10] == "T":
        return expires <= now
    return store.parse_time(expires) <= timeutil.parse_time(now)


def _quick(item: pathleases.Item, identity: str | None,
           now: str) -> tuple[tuple[str, ...], bool]:
    """(the globs of another's unexpired lease, or (); whether the full read is needed
    now because the quick look cannot tell)."""
    if item.state == pathleases.NONE or (identity and item.holder == identity):
        return (), False
    if item.state != pathleases.PATHS:
        return (), True
    try:
        if _expired(item.expires_at, now):
            return (), False
    except (ValueError, BadInput):
        return (), True
    return item.globs, False


def _full(record: Record, seen: _Seen, at: datetime) -> Lease:
    resource, folder, name = seen
    gen = store.read(folder, resource, name)
    return state_of(resource, gen, at, record.config.clock_tolerance_s,
                    cap_s=record.config.lease_cap_s)


def conflicts(record: Record, identity: str | None, paths: Sequence[str], *,
              fold: bool = False) -> tuple[list[str], list[Conflict]]:
    """(what could not be read, every (path, lease) where ``paths`` meet a lease held by
    anyone but ``identity``), in the order of ``paths``; for each path, one conflict per
    lease (its first covering glob), by resource name. ``fold``: the paths lie on a
    volume that folds case, and globs cover them case-insensitively."""
    problems: list[str] = []
    at = timeutil.now()
    now = timeutil.format_time(at)
    try:
        top = record.leases_dir
        items = pathleases.read(str(top))
    except FileNotFoundError:
        return [], []
    except (BadInput, OSError) as exc:
        return [f"the leases cannot be listed: {exc}"], []
    candidates: list[tuple[str, tuple[_Seen, int]]] = []
    for item in items:
        resource = item.resource
        try:
            if item.state == pathleases.BAD:
                if os.path.isdir(item.folder):
                    store.folder(record, resource)  # raises: a bad name, or a symlink
                raise store.not_a_folder(top / resource)
            if item.name is None:
                continue
            seen = (resource, item.folder, item.name)
            globs, unsure = _quick(item, identity, now)
            if unsure:
                _full(record, seen, at)  # raises what is wrong, or reads well after all
                continue
            candidates.extend((glob, (seen, n)) for n, glob in enumerate(globs))
        except (BadInput, OSError) as exc:
            problems.append(str(exc))
    if not candidates:
        return problems, []
    index = Index(candidates, fold=fold)
    confirmed: dict[str, Lease | None] = {}
    found_: list[Conflict] = []
    for path in paths:
        # Per lease, the first of its globs (in its own order) that covers the path.
        first: dict[str, tuple[int, str, _Seen]] = {}
        for glob, (seen, n) in index.covering(path):
            if seen[0] not in first or n < first[seen[0]][0]:
                first[seen[0]] = (n, glob, seen)
        for resource in sorted(first):
            _, glob, seen = first[resource]
            if resource not in confirmed:
                try:
                    lease = _full(record, seen, at)
                    ok = lease.held and lease.holder != identity and glob in lease.paths
                    confirmed[resource] = lease if ok else None
                except (BadInput, OSError) as exc:
                    problems.append(str(exc))
                    confirmed[resource] = None
            lease_ = confirmed[resource]
            if lease_ is not None:
                found_.append(Conflict(path, glob, lease_))
    return problems, found_
