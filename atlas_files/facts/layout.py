"""Where things lie in a record: file and folder names, every file-name rule (versions,
entries, lease generations, drafts), and what kind of record file a path is.

The bottom of the house: every other module takes these facts from here, and this module
imports only ``re`` and the name patterns of ``facts.names``, so anything may import it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from atlas_files.facts.names import ENTRY_ID_PATTERN, NAME_PATTERN

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


def own_version_lines(name: str) -> re.Pattern[str]:
    """``name``'s version files with canonical numbers (``is_canonical_number``), over a
    listing joined by newlines: faster than ``VERSION_LINES`` in a folder of thousands."""
    return re.compile(rf"^{re.escape(name)}\.v([0-9]{{4}}|[1-9][0-9]{{4,}})\.md$", re.M)


def version_parts(filename: str) -> tuple[str, str] | None:
    """(stream name, the number's digits) of a version file's name, None for another."""
    m = VERSION_FILE.fullmatch(filename)
    return None if m is None else (m.group("name"), m.group("number"))


# An append-only entry (a decision or correction): ``<id>.md``. Kept as strings, compiled by
# re on first use (and cached there): a command that lists no entries does not pay for it.
ENTRY_SUFFIX = ".md"
_ENTRY_FILE = ENTRY_ID_PATTERN.strip("^$") + re.escape(ENTRY_SUFFIX)


def entry_filename(entry_id: str) -> str:
    return entry_id + ENTRY_SUFFIX


def is_entry_file(filename: str) -> bool:
    return re.fullmatch(_ENTRY_FILE, filename) is not None


# A lease generation: ``leases/<resource>/g<number>.json``. Eight digits keep a default
# listing in generation order for any lease a person will meet; the number is parsed as an
# integer, so g100000000 still reads correctly.
GENERATION_DIGITS = 8
# Compiled here, not at its first use: a command handed to the command server reads leases
# in a worker whose server never did, and would compile it each time.
_GENERATION_FILE = re.compile(r"g([0-9]{8,})\.json")
# What lies in a lease's folder as a generation would, with too few digits (made by hand).
_GENERATION_LIKE = r"g([0-9]{1,7})\.json"


def generation_filename(generation: int) -> str:
    return f"g{generation:0{GENERATION_DIGITS}d}.json"


def generation_number(filename: str) -> int | None:
    """The generation a lease folder's file is, None for a file that is none."""
    m = _GENERATION_FILE.fullmatch(filename)
    return None if m is None else int(m.group(1))


# A draft: a version (or entry) that lost a race on a git remote, kept under DRAFTS with
# the identity that wrote it before the extension:
# ``.atlas-drafts/<project>/<topic>/<name>.v0004.<identity>.md``.
def draft_filename(filename: str, identity: str) -> str:
    stem, _, ext = filename.rpartition(".")
    return f"{stem}.{identity}.{ext}"


def draft_version(name: str, filename: str) -> int | None:
    """The version a draft of the stream ``name`` in its draft folder was to be."""
    m = re.fullmatch(rf"{re.escape(name)}\.v([0-9]{{4,}})\..+\.md", filename)
    return None if m is None else int(m.group(1))


# Folders of live rows: one ``<key>.json`` per machine or identity, replaced as a whole.
ROW_FOLDERS = (RECEIPTS, SESSIONS, TELEMETRY)
ENTRY_FOLDERS = (DECISIONS, CORRECTIONS, TASKS)
VERSION = "version"
ENTRY = "entry"
GENERATION = "generation"
ROW = "row"
# The most digits of a version number read as a number (no writer gets near them; the
# search index holds no more).
VERSION_DIGITS_READ = 18


class RecordFile(NamedTuple):
    """What a file of the record is, by where it lies and its name alone.

    ``kind``: ``version`` (of the status or a topic), ``entry`` (a decision, correction or
    task), ``generation`` (of a lease) or ``row`` (a live row). ``folder``: the folder that
    says its kind (``status``, ``artifacts``, ``decisions``, ``receipts``, ...). ``name``:
    the stream (``status`` for the status), the entry's file name without ``.md``, the
    lease's resource or the row's key. ``number``: the version or generation.
    ``canonical``: named as atlas names it: a version's number as readers count it
    (``0007``, ``10000``), an entry's id, a generation's eight digits or more. A file that
    lies where one would but was named by hand (``plan.v7.md``, ``notes.md`` among the
    decisions, ``g1.json``) is of the kind still (an edit of it is refused) but is none
    that readers see (sync carries none)."""

    kind: str
    folder: str
    project: str = ""
    name: str = ""
    number: int = 0
    canonical: bool = True

    @property
    def immutable(self) -> bool:
        """Published history: never changed, deleted or renamed."""
        return self.kind != ROW


def _named(value: str) -> bool:
    return re.fullmatch(NAME_PATTERN, value) is not None and ".." not in value


def record_file(rel: str) -> RecordFile | None:
    """What kind of record file ``rel`` (relative to the record's root, ``/`` between
    folders) is; None for anything else (atlas.yaml, the README, a draft, a note). The
    one home of this rule: the edit guard, the commit check, sync, search and the site
    all ask it."""
    parts = rel.split("/")
    if len(parts) in (4, 5) and parts[0] == PROJECTS and _named(parts[1]):
        return _project_file(parts)
    if len(parts) == 3 and parts[0] == LEASES and _named(parts[1]):
        number = generation_number(parts[2])
        if number is not None:
            return RecordFile(GENERATION, LEASES, "", parts[1], number)
        m = re.fullmatch(_GENERATION_LIKE, parts[2])
        return None if m is None else RecordFile(GENERATION, LEASES, "", parts[1],
                                                 int(m.group(1)), False)
    if len(parts) == 2 and parts[0] in ROW_FOLDERS and parts[1].endswith(".json"):
        return RecordFile(ROW, parts[0], "", parts[1][:-5])
    return None


def _project_file(parts: list[str]) -> RecordFile | None:
    project, folder, filename = parts[1], parts[2], parts[-1]
    if folder == STATUS and len(parts) == 4 or folder == ARTIFACTS and len(parts) == 5:
        found = version_parts(filename)
        stream = STATUS if folder == STATUS else parts[3]
        if found is None or found[0] != stream or (folder == ARTIFACTS and not _named(stream)):
            return None
        digits = found[1]
        if len(digits) > VERSION_DIGITS_READ:  # made by hand; int() would refuse or crawl
            return RecordFile(VERSION, folder, project, stream, 0, False)
        return RecordFile(VERSION, folder, project, stream, int(digits),
                          is_canonical_number(digits))
    if len(parts) == 4 and folder in ENTRY_FOLDERS and filename.endswith(ENTRY_SUFFIX):
        named = is_entry_file(filename) if folder != TASKS else bool(TASK_FILE.fullmatch(filename))
        return RecordFile(ENTRY, folder, project, filename[:-len(ENTRY_SUFFIX)], 0, named)
    return None
