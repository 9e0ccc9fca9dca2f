"""The commit guard: does this commit touch paths someone else holds a lease on?

Run by the ``atlas-leases`` pre-commit hook as ``atlas lease guard --staged``. It finds
the record itself, since a hook runs in the code repository, not in the record:
``--record``/``ATLAS_RECORD``, else ``git config atlas.record`` (relative to the
repository root), else the nearest atlas.yaml at or above the repository root. No record
found: nothing to check, the commit passes, and the result says so. The committer is
``--as``/``ATLAS_AS``, else ``git config atlas.as``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files.facts.errors import NotFound
from atlas_files.facts.names import check_name
from atlas_files.protocol.leases import ADVISORY
from atlas_files.protocol.leases.guard import Conflict, conflicts
from atlas_files.protocol.leases.paths import check_glob
from atlas_files.storage import gitcmd, volcase
from atlas_files.storage.record import Record, enclosing, locate, named_in_git

__all__ = ["ADVISORY", "Conflict", "GuardResult", "guard"]

NO_RECORD = ("no atlas record found (ATLAS_RECORD, `git config atlas.record`, or an "
             "atlas.yaml at or above the repository root), so no path lease was checked")


@dataclass(frozen=True)
class GuardResult:
    repo: str
    record: str | None  # None: no record found, nothing was checked
    identity: str | None
    checked: int  # how many paths were checked
    conflicts: tuple[Conflict, ...]
    problems: tuple[str, ...] = ()
    note: str | None = None

    @property
    def ok(self) -> bool:
        return not self.conflicts

    def holders(self) -> list[str]:
        return list(dict.fromkeys(c.lease.holder or "" for c in self.conflicts))

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "repo": self.repo, "record": self.record,
                "identity": self.identity, "paths_checked": self.checked,
                "conflicts": [c.to_json() for c in self.conflicts],
                "problems": list(self.problems), "note": self.note, "advisory": ADVISORY}


def _record(repo: Path, explicit: str | os.PathLike[str] | None,
            config: dict[str, str]) -> Path | None:
    if explicit:
        return locate(explicit, {})
    configured = config.get("atlas.record")
    if configured:
        return named_in_git(repo, configured)
    return enclosing(repo)


def guard(*, record: str | os.PathLike[str] | None = None, identity: str | None = None,
          paths: Sequence[str] | None = None,
          repo: str | os.PathLike[str] | None = None) -> GuardResult:
    """Check ``paths`` (default: what git's index stages for the next commit in ``repo``,
    default the repository holding the current folder) against every unexpired path lease
    held by someone other than ``identity``. ``record`` and ``identity`` are what the
    caller was given explicitly (``--record``/``ATLAS_RECORD``, ``--as``/``ATLAS_AS``);
    git config fills in what is missing. NotFound (exit 2) if an explicit or configured
    record does not exist: the commit then stops rather than pass unchecked."""
    root = gitcmd.toplevel(Path(repo) if repo is not None else Path.cwd())
    config = gitcmd.config(root, "atlas.") if not (record and identity) else {}
    who = identity or config.get("atlas.as") or None
    if who:
        check_name(who, "identity (ATLAS_AS or git config atlas.as)")
    try:
        where = _record(root, record, config)
    except NotFound as exc:
        raise NotFound(exc.message, hint="fix ATLAS_RECORD or `git config atlas.record`, "
                       "or unset it to look for atlas.yaml above the repository") from None
    if where is None:
        return GuardResult(str(root), None, who, 0, (), note=NO_RECORD)
    if paths is None:
        checked = gitcmd.staged(root)
    else:
        checked = [check_glob(p, "the path") for p in paths]
    # On a volume that folds case, a lease on src/** covers SRC/metrics.py.
    fold = volcase.folds_case(str(root), ".git")
    problems, found = conflicts(Record(where), who, checked, fold=fold)
    return GuardResult(str(root), str(where), who, len(checked), tuple(found), tuple(problems))
