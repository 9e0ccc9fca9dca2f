"""The session ritual as two tools, `begin` and `end`: the one place to switch over.

Until `atlas_files.api.ritual` (`atlas begin` / `atlas end`) is on main, `begin` is the
status (read in full, so marked read), what is new to the identity and the leases held,
with the key names the briefing will use; `end` is a status write. When the ritual lands,
these two functions become ``ritual.begin(worker).to_json()`` and ``ritual.end(worker,
status=..., summary=..., release_leases=...)``, and the two schemas below become those
documents' (the tools' names and meaning stay; `end` gains ``release_leases``).
"""

from __future__ import annotations

from typing import Any

from atlas_files import timeutil
from atlas_files.api import Worker
from atlas_files.api import core as api
from atlas_files.api import leases as api_leases
from atlas_files.api import status as api_status
from atlas_files.api.versions import Written
from atlas_files.mcp.shapes import WRITTEN, shape

# The switch, once atlas_files.api.ritual is on main (its Briefing and Ending documents as
# they stood on the ritual branch when this was written; check them against main):
#   BEGIN_SCHEMA = shape("identity:s project:s started_at:s status:o? new:a corrections:a "
#                        "proposals:a decisions:a leases:o machines:a repository:o? "
#                        "truncated:a")
#   END_SCHEMA = shape("identity:s project:s started_at:s? ended_at:s? ok:b status:o? "
#                      "wrote:a others:a leases_held:a leases_released:a proposals_open:a "
#                      "todo:s?")
#   begin -> ritual.begin(worker); end -> ritual.end(worker, status=..., summary=...,
#   release_leases=...), and in tools.Toolbox.end: `status` optional, `release_leases`.
BEGIN_SCHEMA = shape("identity:s project:s started_at:s status:o new:a leases:o")
END_SCHEMA = WRITTEN


def begin(worker: Worker) -> dict[str, Any]:
    """The briefing: ``status`` is `atlas status show --json` (read first, so it is not
    repeated in ``new``), ``new`` the items of `atlas feed --json`, ``leases`` is
    `atlas lease ls --json`."""
    started = timeutil.format_time(timeutil.now())
    status = api_status.status_show(worker)
    new = api.feed(worker)
    return {"identity": worker.author, "project": status.project, "started_at": started,
            "status": status.to_json(), "new": new.to_json()["new"],
            "leases": api_leases.ls(worker).to_json()}


def end(worker: Worker, status: str, summary: str | None = None) -> Written:
    """Where things stand, written last: `atlas status write` (the stop sign applies)."""
    return api_status.status_write(worker, status, summary=summary)
