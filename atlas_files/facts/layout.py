"""Where things lie in a record: file and folder names, and the version file-name rule.

The bottom of the house: every other module takes these facts from here, and this module
imports nothing of the package (only ``re``), so anything may import it.
"""

from __future__ import annotations

import re

CONFIG_NAME = "atlas.yaml"
CONFIG_LOCK = ".atlas.yaml.lock"

# Folders at the record's root.
PROJECTS = "projects"
LEASES = "leases"
TELEMETRY = "telemetry"
RECEIPTS = "receipts"
SESSIONS = "sessions"
# A project's folders.
STATUS = "status"
ARTIFACTS = "artifacts"
DECISIONS = "decisions"
CORRECTIONS = "corrections"
# Made by the first task written, not by `atlas init`: most projects have none.
TASKS = "tasks"
PROJECT_FOLDERS = (STATUS, ARTIFACTS, DECISIONS, CORRECTIONS)
ROOT_FOLDERS = (PROJECTS, LEASES, TELEMETRY, RECEIPTS)

# Derived, disposable files (indexes, caches) live under this folder, ignored by git.
CACHE = ".atlas-cache"
# A live row in a folder of streams naming each stream's latest version: a hint for
# readers that writers never trust.
LATEST_HINTS = ".atlas-latest.json"
# A writer's version that lost a race on a git remote (`atlas sync`), kept byte for byte
# and never pushed: `.atlas-drafts/<project>/<topic>/<name>.v0004.<identity>.md`.
DRAFTS = ".atlas-drafts"
# Temp files of writes in flight (or crash debris); readers skip them.
TEMP_PREFIX = ".atlas-tmp-"

GITIGNORE = f"""\
# Live rows are state, not documents: they change every few minutes and would churn or
# conflict in git. Temp files are crash debris or writes in flight; the cache is derived;
# drafts are versions that lost a race on the remote, kept for their writer alone.
{RECEIPTS}/
{TELEMETRY}/
{SESSIONS}/
{TEMP_PREFIX}*
{LATEST_HINTS}
{CACHE}/
{DRAFTS}/
*.lock
"""

# A version file: ``<name>.v<number>.md``, the number zero-padded to four digits so that
# default listings sort, and parsed as an integer (v10000 is valid).
VERSION_DIGITS = 4
VERSION_FILE = re.compile(r"(?P<name>.+)\.v(?P<number>[0-9]+)\.md")
# A task's id: its creation time in milliseconds (10 characters), then 30 random bits (6),
# in lowercase Crockford base32, so ids sort by time and need no shared counter. A task is
# ``<id>.md`` in a project's tasks folder; what happened to it is
# ``<id>.<done|dropped>.<another such id>.md`` beside it.
TASK_ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
TASK_ID_LENGTH = 16
TASK_ID = "[0-9a-hjkmnp-tv-z]{16}"
TASK_FILE = re.compile(rf"({TASK_ID})(?:\.(done|dropped)\.({TASK_ID}))?\.md")


def task_id_millis(task_id: str) -> int:
    """When the task (or task entry) id was drawn, in milliseconds since 1970."""
    value = 0
    for ch in task_id[:10]:
        value = value * 32 + TASK_ID_ALPHABET.index(ch)
    return value


# The resource of a task's claim: ``leases/task.<id>/``.
TASK_LEASE_PREFIX = "task."
# The same rule over a whole folder listing joined by newlines: one C-level pass.
VERSION_LINES = re.compile(r"^(.+)\.v([0-9]{4,})\.md$", re.M)


def version_filename(name: str, version: int) -> str:
    return f"{name}.v{version:0{VERSION_DIGITS}d}.md"


def is_canonical_number(number: str) -> bool:
    """``0003`` and ``10000`` name versions; ``3`` and ``00003`` do not (check reports them)."""
    return len(number) == VERSION_DIGITS or (len(number) > VERSION_DIGITS and number[0] != "0")


def version_pattern(name: str) -> re.Pattern[str]:
    """Version files of the stream ``name`` (use with ``fullmatch``)."""
    return re.compile(rf"{re.escape(name)}\.v(\d+)\.md")
