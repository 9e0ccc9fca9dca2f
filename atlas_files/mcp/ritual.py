"""The session ritual as two tools, `begin` and `end`: `atlas begin` and `atlas end`.

The documents are the CLI's (``atlas_files.api.ritual``); only their output schemas are
declared here, compactly, so that the tool list stays small.
"""

from __future__ import annotations

from atlas_files.api import Worker
from atlas_files.api import ritual as ritual_api
from atlas_files.mcp.shapes import shape

BEGIN_SCHEMA = shape("identity:s project:s started_at:s status:o? new:a corrections:a "
                     "proposals:a decisions:a tasks:a leases:o machines:a repository:o? "
                     "truncated:a")
END_SCHEMA = shape("identity:s project:s started_at:s? ended_at:s? ok:b status:o? wrote:a "
                   "others:a leases_held:a leases_released:a proposals_open:a todo:s?")


def begin(worker: Worker) -> ritual_api.Briefing:
    """Everything to read before acting, most urgent first, bounded; records the session."""
    return ritual_api.begin(worker)


def end(worker: Worker, status: str | None = None, summary: str | None = None,
        release_leases: bool = False) -> ritual_api.Ending:
    """Writes the status (if given; the stop sign applies), then checks the session wrote
    where things stand; ``ok`` false with ``todo`` saying what to do when it did not."""
    return ritual_api.end(worker, status=status, summary=summary,
                          release_leases=release_leases)
