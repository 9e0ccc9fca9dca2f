"""Work items: tasks whose claims are leases, so two sessions never do the same work twice.

A task is an append-only entry (entries.py) in ``projects/<project>/tasks/``: title, why,
author, when, the tasks it waits for (``after``) and the repository paths it touches
(``paths``). What happens to it (done, dropped) is another entry beside it; nothing is
ever edited, so clones and branches merge without conflict. Its id is its creation time
and 30 random bits in base32 (layout.TASK_ID): no counter is shared, and any unique prefix
names it.

A claim is a lease on the resource ``task.<id>`` (leases/): one compare-and-set, expiry
at read time, the record's cap, a generation that fences; a task with paths leases those
paths with it, so the edit guard and the commit guard protect them. Finishing a task takes
its lease for a moment too, so a claim and a finish of one task are ordered by the same
compare-and-set.

The state is computed by one function, ``state_of``, wherever a task is shown: done or
dropped (an entry), claimed (an unexpired claim), blocked (a task it waits for is not
done), else ready. Like a lease, a claim is advisory: a worker that never looks at the
queue is not stopped by it.
"""

from __future__ import annotations

import binascii
import json
import os
import stat
import time
from collections.abc import Callable, Container, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from atlas_files import __version__
from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import BadInput, DamagedFile, LeaseHeld, NotFound, VersionConflict
from atlas_files.facts.text import clean_text
from atlas_files.protocol import corrections, leases
from atlas_files.protocol.leases import store
from atlas_files.protocol.leases.paths import check_globs
from atlas_files.protocol.leases.view import Lease, damaged_lease
from atlas_files.protocol.leases.view import state_of as lease_state
from atlas_files.storage import entries, fsio, usercache, watched
from atlas_files.storage.record import require_identity

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

MAX_TITLE = 200
MAX_WHY = 4000
MAX_AFTER = 50
STATES = ("ready", "claimed", "blocked", "done", "dropped")
ENDINGS = {"done": "task-done", "dropped": "task-dropped"}
_T = TypeVar("_T")
_new = tuple.__new__
# How long a finish holds the task's lease: only while its entry is written.
_FINISH_S = 60.0
_ID_CHARS = frozenset(layout.TASK_ID_ALPHABET)
ADVISORY = (
    "A claim is a lease: it stops a second claim, not a worker who never looks at the "
    "queue. It expires by itself unless renewed (claim it again), so a claimer that "
    "vanished frees the task by doing nothing."
)


# -- ids ------------------------------------------------------------------------------------


def _base32(number: int, width: int) -> str:
    out = []
    for _ in range(width):
        number, digit = divmod(number, 32)
        out.append(layout.TASK_ID_ALPHABET[digit])
    return "".join(reversed(out))


# The last id this process made, as (milliseconds, random part).
_last_made = (-1, 0)


def new_id(at: datetime) -> str:
    """Ten characters of milliseconds since 1970 (layout.task_id_millis reads them back),
    then six of randomness. Two made by one process in the same millisecond sort in the
    order they were made (the second's random part is then the first's plus one at
    least): the MCP server or a program adding tasks in a row gets them taken in that
    order."""
    global _last_made
    millis = int(at.timestamp() * 1000)
    random = int.from_bytes(os.urandom(4), "big") >> 2
    if millis == _last_made[0] and random <= _last_made[1]:
        random = _last_made[1] + 1
        if random >= 32 ** 6:  # past six characters: the next millisecond
            millis, random = millis + 1, 0
    _last_made = (millis, random)
    return _base32(millis, 10) + _base32(random, 6)


def lease_resource(task_id: str) -> str:
    return layout.TASK_LEASE_PREFIX + task_id


def folder(record: Record, project: str) -> Path:
    return record.path(layout.PROJECTS, project, layout.TASKS)


# -- what is on disk ------------------------------------------------------------------------


class Task(NamedTuple):
    id: str
    project: str
    title: str
    why: str | None
    author: str
    created_at: str
    after: tuple[str, ...]
    paths: tuple[str, ...]
    path: str
    digest_ok: bool | None = True


class Ending(NamedTuple):
    """A done or dropped entry of a task."""

    id: str
    task: str
    action: str  # done | dropped
    why: str | None
    author: str
    at: str
    link: str | None
    path: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "task": self.task, "action": self.action, "why": self.why,
                "author": self.author, "at": self.at, "link": self.link}


class Blocker(NamedTuple):
    id: str
    title: str | None
    state: str  # the blocker's own state, or "unknown"
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "state": self.state, "why": self.why}


class TaskState(NamedTuple):
    """A task as read at one moment: ``state`` is computed by ``state_of``, never stored."""

    task: Task
    state: str
    holder: str | None = None
    expires_at: str | None = None
    expires_in_s: float | None = None
    generation: int = 0
    blocked_by: tuple[Blocker, ...] = ()
    ended: Ending | None = None

    @property
    def id(self) -> str:
        return self.task.id

    def to_json(self) -> dict[str, Any]:
        t = self.task
        return {
            "id": t.id, "title": t.title, "why": t.why, "state": self.state,
            "holder": self.holder, "expires_at": self.expires_at,
            "expires_in_s": self.expires_in_s, "generation": self.generation,
            "after": list(t.after), "blocked_by": [b.to_json() for b in self.blocked_by],
            "paths": list(t.paths), "author": t.author, "created_at": t.created_at,
            "project": t.project,
            "ended": self.ended.to_json() if self.ended else None,
        }


class Unreadable(NamedTuple):
    path: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "message": self.message}


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _opt(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _Read(NamedTuple):
    """An entry as the reader has it: from its file, or from this user's cache."""

    id: str
    kind: str
    meta: dict[str, Any]
    path: str
    digest_ok: bool | None

    @classmethod
    def of(cls, entry: entries.Entry) -> _Read:
        return cls(entry.id, entry.kind, entry.meta, str(entry.path), entry.digest_ok)


def _task(entry: _Read, project: str) -> Task:
    m = entry.meta
    if not isinstance(m.get("title"), str) or not isinstance(m.get("author"), str):
        raise DamagedFile(f"{entry.path}: a task names its title and author")
    return Task(entry.id, project, m["title"], _opt(m.get("why")), m["author"],
                str(m.get("at", "")), _strs(m.get("after")), _strs(m.get("paths")),
                entry.path, entry.digest_ok)


def _ending(entry: _Read, task_id: str, action: str) -> Ending:
    m = entry.meta
    if m.get("task") != task_id or entry.kind != ENDINGS[action]:
        raise DamagedFile(f"{entry.path}: it does not say it is the {action} entry of task "
                          f"{task_id}")
    return Ending(entry.id, task_id, action, _opt(m.get("why")), str(m.get("author", "")),
                  str(m.get("at", "")), _opt(m.get("link")), entry.path)


class Board(NamedTuple):
    """A project's tasks as read from its folder, oldest first, with their endings (the
    first one by time counts) and the files that could not be read. A board read
    without ``full`` leaves out the tasks that ended (and reads no ending but those of
    the tasks an open one waits for). ``stamp``: the folder's, when its listing was old
    enough to trust (``_Names``)."""

    project: str
    tasks: dict[str, Task]
    endings: dict[str, Ending]
    unreadable: tuple[Unreadable, ...]
    stamp: tuple[int, ...] | None = None
    # Each task's state while nobody has ever claimed it, worked out ahead (``snapshot``).
    ahead: Ahead | None = None


class Ahead(NamedTuple):
    """A board's states while unclaimed, worked out ahead: in the board's order, and each
    task's place in it. A reader of the whole board copies the list and works out anew
    only the tasks with a lease, never walking ten thousand ids (each a page the command
    server's worker would have to copy, server/spare.py)."""

    states: list[TaskState]
    place: dict[str, int]

    def of(self, task_id: str) -> TaskState:
        return self.states[self.place[task_id]]

    def get(self, task_id: str) -> TaskState | None:
        at = self.place.get(task_id)
        return None if at is None else self.states[at]


class _Open:
    """The ids among ``tasks`` that have no ending in ``endings``, as a membership test."""

    def __init__(self, tasks: Container[str], endings: Container[str]) -> None:
        self.tasks, self.endings = tasks, endings

    def __contains__(self, task_id: object) -> bool:
        return task_id in self.tasks and task_id not in self.endings


# A file or folder changed less than this long ago is read again every time, since a
# coarse or skewed clock could give a second change the same time stamp.
RACY_S = 120.0


class _Names(NamedTuple):
    """A tasks folder's file names by what each says: each task's file, and each task's
    endings (action, file), oldest first. ``stamp``: the folder's device, inode,
    modification and change times when listed, None if it changed within RACY_S."""

    tasks: dict[str, str]
    endings: dict[str, list[tuple[str, str]]]
    stamp: tuple[int, ...] | None


def _folder_stamp(where: Path) -> tuple[tuple[int, ...], bool]:
    """The folder's stamp, and whether it is old enough to trust; listdir's errors. Only
    the modification time need be old: a name added in the same tick as an earlier one
    could leave it as it was, while a change after a chmod or a `touch` of the folder
    moves a modification time that lies further back."""
    st = os.stat(where)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(20, "Not a directory", str(where))
    return ((st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns),
            st.st_mtime_ns < time.time_ns() - int(RACY_S * 1e9))


def _names(where: Path) -> _Names:
    """The folder's names, listed, or from this user's cache while the folder's stamp is
    the one they were listed under: a file added, removed or renamed in the folder moves
    its modification time, so the cache only ever saves the listing's time."""
    held = watched.kept(where)
    if held is not None:
        names: _Names = held["names"]
        return names
    stamp, trusted = _folder_stamp(where)
    cache = _CacheFile(where, "names")
    raw = cache.load() if trusted else None
    if raw is not None and raw.get("stamp") == list(stamp):
        try:
            if not all(isinstance(i, str) for i in raw["tasks"]):
                raise TypeError("a task id")
            return _Names({i: f"{i}.md" for i in raw["tasks"]},
                          _grouped((t, a, n) for t, a, n in raw["endings"]), stamp)
        except (KeyError, TypeError, ValueError):
            pass  # a damaged cache file: listed again below
    task_files: dict[str, str] = {}
    found: list[tuple[str, str, str]] = []
    match = layout.TASK_FILE.fullmatch
    for n, name in enumerate(sorted(os.listdir(where))):
        if not n % 1000:
            watched.checkpoint()
        m = match(name)
        if m is None:
            continue
        task_id, action, _ = m.groups()
        if action:
            found.append((task_id, action, name))
        else:
            task_files[task_id] = name
    if trusted:
        cache.save({"stamp": list(stamp), "tasks": list(task_files), "endings": found})
    return _Names(task_files, _grouped(found), stamp if trusted else None)


def _grouped(found: Iterable[tuple[str, str, str]]) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for task_id, action, name in found:
        if not (isinstance(action, str) and isinstance(name, str)):
            raise TypeError(name)
        out.setdefault(task_id, []).append((action, name))
    return out


def _name_endings(names: _Names) -> dict[str, Ending]:
    """A task ended when an ending's file is there: its name says which (the first by
    time counts), so every reader agrees on the state without opening it."""
    return {task_id: _new(Ending, (found[0][1][:-3], task_id, found[0][0], None, "", "", None,
                                   "")) for task_id, found in names.endings.items()}


def read_board(record: Record, project: str, *, full: bool = True,
               listed: _Names | None = None) -> Board:
    """The tasks of ``project``; a damaged file is listed as unreadable, never fatal.
    ``full``: every task and ending; else only what an open task's state needs.
    ``listed``: the folder's names, listed a moment ago by the caller."""
    where = folder(record, project)
    held = watched.kept(where)
    if held is not None and held["folder"] == str(where):
        board: Board = held["boards"][full]
        return board
    # A served command: the command server reads it ahead for the next (watching.py).
    watched.want("tasks", os.path.abspath(record.root), project)
    try:
        names = listed if listed is not None else _names(where)
    except FileNotFoundError:
        names = _Names({}, {}, None)
    except NotADirectoryError:
        return Board(project, {}, {}, (Unreadable(str(where),
                                                  entries.not_a_folder(where).message),))
    task_files, ending_files = names.tasks, names.endings
    bad: list[Unreadable] = []
    # An ending's details (who, when, why) are read for a full board, and for the tasks
    # an open one waits for.
    endings = _name_endings(names)
    # Open tasks and ended ones are cached apart: a board of open tasks reads only theirs.
    open_read = _TaskReader(where, "open", project)
    tasks = _read_tasks(open_read, task_files, [i for i in task_files if i not in endings],
                        bad)
    open_read.save({task_files[i] for i in tasks})
    detailed: Iterable[str] = endings
    waited = [i for i in task_files if i in endings]
    if not full:
        detailed = {d for t in tasks.values() for d in t.after if d in endings}
        waited = [d for d in detailed if d in task_files]
    if waited:
        ended_read = _TaskReader(where, "ended", project)
        tasks.update(_read_tasks(ended_read, task_files, waited, bad))
        tasks = dict(sorted(tasks.items()))
        ended_read.save(None if not full else {task_files[i] for i in waited})
    if detailed:
        details = _EndingReader(where, "endings")
        for task_id in detailed:
            action, name = ending_files[task_id][0]
            try:
                endings[task_id] = _ending(details(name), task_id, action)
            except (DamagedFile, OSError) as exc:
                bad.append(Unreadable(os.path.join(details.base, name), str(exc)))
        details.save(None if not full else {ending_files[i][0][1] for i in endings})
    return Board(project, tasks, endings, tuple(bad), names.stamp)


def _read_tasks(read: _TaskReader, files: dict[str, str], ids: Iterable[str],
                bad: list[Unreadable]) -> dict[str, Task]:
    out = {}
    for task_id in ids:
        try:
            out[task_id] = read(files[task_id])
        except (DamagedFile, OSError) as exc:
            bad.append(Unreadable(os.path.join(read.base, files[task_id]), str(exc)))
    return out


class _CacheFile:
    """One file of this user's cache (usercache) about one tasks folder: ``kind`` says
    what it holds. Any failure to read or write it only costs the time of reading the
    folder itself."""

    def __init__(self, where: Path, kind: str) -> None:
        self.real = os.path.realpath(where)
        self.folder = usercache.folder("tasks")
        tag = binascii.crc32(self.real.encode("utf-8", "surrogateescape"))
        self.path = os.path.join(self.folder, f"{tag:08x}.{kind}.json") \
            if self.folder else None

    def load(self) -> dict[str, Any] | None:
        """What was saved for this folder by this version of atlas, else None."""
        watched.checkpoint()
        if self.path is None or not usercache.private(self.folder or ""):
            return None
        try:
            with open(self.path, encoding="utf-8") as fh:
                raw = json.load(fh)
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(raw, dict) or raw.get("atlas") != __version__ \
                or raw.get("folder") != self.real:
            return None
        return raw

    def save(self, data: dict[str, Any]) -> None:
        watched.checkpoint()
        if self.path and self.folder:
            usercache.write_json(self.folder, self.path,
                                 {"atlas": __version__, "folder": self.real, **data})


class _EntryReader(Generic[_T]):
    """Reads the entries of one tasks folder through this user's cache: an entry whose
    file has the inode, size, modification and change times the cache noted is taken as
    read. Entries are never written in place, and an edit by hand changes the change time
    (and mostly the size), so it is read again; a file that changed less than RACY_S
    before is read every time. The cache only ever saves time. What a row keeps of an
    entry is the subclass's (``_row``, ``_from_row``)."""

    def __init__(self, where: Path, kind: str) -> None:
        self.where = where
        self.base = str(where)
        self.file = _CacheFile(where, kind)
        held = watched.kept(where)
        self.held: dict[str, _T] | None = held.get(kind) \
            if held is not None and held["folder"] == self.base else None
        raw = self.file.load() if self.held is None else None
        found = raw.get("entries") if raw is not None else None
        self.cached: dict[str, list[Any]] = found if isinstance(found, dict) else {}
        self.kept: dict[str, list[Any]] = {}
        self.changed = False
        self.racy_ns = time.time_ns() - RACY_S * 1e9

    def _convert(self, entry: entries.Entry) -> _T:
        raise NotImplementedError

    def _row(self, value: _T) -> list[Any]:
        raise NotImplementedError

    def _from_row(self, row: list[Any], name: str, path: str) -> _T:
        raise NotImplementedError

    def __call__(self, name: str) -> _T:
        watched.checkpoint()  # the server's reading ahead may stop before any entry
        if self.held is not None:
            value = self.held.get(name)
            if value is not None:
                return value
        path = f"{self.base}{os.sep}{name}"
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise fsio.damage(Path(path), exc, "entry") from None
        row = self.cached.get(name)
        # The common case, an entry read before, is one stat and four compares. The change
        # time too: an edit whose modification time was put back still moves it.
        if row is not None and row[0] == st.st_ino and row[1] == st.st_size \
                and row[2] == st.st_mtime_ns and row[3] == st.st_ctime_ns:
            try:
                return self._from_row(row, name, path)
            except (IndexError, TypeError, ValueError):
                pass  # a row of another shape: the file is read
        entry = entries.read_entry(Path(path))
        if entry.id != name[:-3]:
            raise DamagedFile(f"{path}: it holds the entry {entry.id}, not {name[:-3]}")
        value = self._convert(entry)
        if st.st_mtime_ns < self.racy_ns and not entry.body:
            self.kept[name] = [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                               *self._row(value)]
            self.changed = True
        return value

    def save(self, names: set[str] | None) -> None:
        """Note what was read. ``names``: the files of this kind in the folder now (rows
        of any other are dropped); None keeps every row (a partial read)."""
        if not self.changed and (names is None or self.cached.keys() <= names):
            return  # the common case: nothing new read, no row to drop (one set compare)
        rows = {**self.cached, **self.kept}
        if names is not None:
            rows = {k: v for k, v in rows.items() if k in names}
        if self.changed or len(rows) != len(self.cached):
            self.file.save({"entries": rows})


class _EndingReader(_EntryReader[_Read]):
    """Endings, kept as their front matter."""

    def _convert(self, entry: entries.Entry) -> _Read:
        return _Read.of(entry)

    def _row(self, value: _Read) -> list[Any]:
        return [value.id, {k: v for k, v in value.meta.items() if k != "digest"},
                value.digest_ok]

    def _from_row(self, row: list[Any], name: str, path: str) -> _Read:
        meta = row[5]
        if len(row) != 7 or not isinstance(meta, dict):
            raise ValueError(name)
        return _Read(str(row[4]), str(meta.get("kind")), meta, path, row[6])


class _TaskReader(_EntryReader[Task]):
    """Tasks of one project, kept as a Task's fields: a list of them parses and builds
    faster than front matter, and a queue lists thousands."""

    def __init__(self, where: Path, kind: str, project: str) -> None:
        super().__init__(where, kind)
        self.project = project

    def _convert(self, entry: entries.Entry) -> Task:
        if entry.kind != "task":
            raise DamagedFile(f"{entry.path}: it is a {entry.kind} entry, not a task")
        return _task(_Read.of(entry), self.project)

    def _row(self, value: Task) -> list[Any]:
        return [value.title, value.why, value.author, value.created_at, list(value.after),
                list(value.paths), value.digest_ok]

    def _from_row(self, row: list[Any], name: str, path: str) -> Task:
        if len(row) != 11:
            raise ValueError(name)
        # tuple.__new__: a named tuple's own constructor, run for each of thousands of
        # rows, takes twice as long for the same fields in the same order.
        return _new(Task, (name[:-3], self.project, row[4], row[5], row[6], row[7],
                           tuple(row[8]), tuple(row[9]), path, row[10]))


def _claims(record: Record, wanted: Container[str], at: datetime) -> dict[str, Lease]:
    """The lease of each task ``wanted`` holds that was ever claimed (one listing of
    leases/ tells which were); a damaged lease reads as ``damaged``."""
    try:
        have = os.listdir(record.leases_dir)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out = {}
    config = record.config
    read_at = timeutil.format_time(at)
    leases_dir = str(record.leases_dir)
    # From the side of the leases: a queue has far more tasks than claims.
    start = len(layout.TASK_LEASE_PREFIX)
    for resource in have:
        task_id = resource[start:]
        if not resource.startswith(layout.TASK_LEASE_PREFIX) or task_id not in wanted:
            continue
        try:
            gen = store.newest(os.path.join(leases_dir, resource), resource)
        except DamagedFile as exc:
            out[task_id] = damaged_lease(resource, 0, exc.message, at)
            continue
        out[task_id] = lease_state(resource, gen, at, config.clock_tolerance_s, read_at,
                                   cap_s=config.lease_cap_s)
    return out


# -- the state: one function ----------------------------------------------------------------


def state_of(task: Task, ending: Ending | None, claim: Lease | None,
             dependencies: dict[str, tuple[Task | None, Ending | None]]) -> TaskState:
    """Done or dropped (an entry), claimed (an unexpired claim), blocked (a task in
    ``after`` not done), else ready. ``dependencies``: each ``after`` id's task (None when
    it cannot be found) and ending."""
    if ending is not None:
        return TaskState(task, ending.action, ended=ending,
                         generation=claim.generation if claim else 0)
    if claim is not None and claim.held:
        return TaskState(task, "claimed", claim.holder, claim.expires_at, claim.expires_in_s,
                         claim.generation)
    if claim is not None and claim.damaged:
        # Nobody can say who holds it: never offered as ready (`atlas lease break
        # task.<id>` takes it over, and `atlas check` names the damage).
        return TaskState(task, "claimed", generation=claim.generation)
    blockers = []
    for dep_id in task.after:
        dep, dep_end = dependencies.get(dep_id, (None, None))
        if dep_end is not None and dep_end.action == "done":
            continue
        if dep is None:
            blockers.append(Blocker(dep_id, None, "unknown",
                                    "no such task here (not synced yet, or unreadable)"))
        elif dep_end is not None:
            blockers.append(Blocker(dep_id, dep.title, "dropped",
                                    f"dropped by {dep_end.author} at {dep_end.at}: "
                                    f"{dep_end.why or 'no why given'}; it will never be done"))
        else:
            blockers.append(Blocker(dep_id, dep.title, "open", "not done yet"))
    generation = claim.generation if claim else 0
    if blockers:
        return TaskState(task, "blocked", generation=generation, blocked_by=tuple(blockers))
    return TaskState(task, "ready", generation=generation)


def states(record: Record, board: Board, ids: Iterable[str] | None = None) -> list[TaskState]:
    """The state of each task of ``board`` (or of ``ids``), oldest first."""
    at = timeutil.now()
    # Worked out ahead (``snapshot``): only a task with a lease is worked out now.
    ahead = board.ahead
    if ahead is not None and ids is None:
        claims = _claims(record, _Open(board.tasks, board.endings), at)
        found = list(ahead.states)
        for i, st in zip(claims, _states_now(board, list(claims), claims), strict=True):
            found[ahead.place[i]] = st
        return found
    chosen = list(board.tasks) if ids is None else list(ids)
    claims = _claims(record, {i for i in chosen if i not in board.endings}, at)
    if ahead is None:
        return _states_now(board, chosen, claims)
    now = dict(zip(claims, _states_now(board, list(claims), claims), strict=True))
    return [now[i] if i in now else ahead.of(i) for i in chosen]


def _states_now(board: Board, chosen: list[str], claims: dict[str, Lease]) -> list[TaskState]:
    deps = {d: (board.tasks.get(d), board.endings.get(d))
            for i in chosen for d in board.tasks[i].after}
    return [state_of(board.tasks[i], board.endings.get(i), claims.get(i), deps) for i in chosen]


def snapshot(record: Record, project: str) -> dict[str, Any]:
    """Everything this module's readers take from the tasks folder of ``project``, read
    now, with each task's state while unclaimed worked out: what the command server keeps
    while the kernel says the folder did not change (storage/watched.py)."""
    where = folder(record, project)
    names = _names(where)
    every = _worked_out(read_board(record, project, full=True, listed=names), None)
    open_only = _worked_out(read_board(record, project, full=False, listed=names), every)
    boards = {True: every, False: open_only}
    endings = _one_copy(open_only.endings.get, _name_endings(names))
    return {"folder": str(where), "names": names, "boards": boards, "endings": endings,
            "open_ids": [i for i in names.tasks if i not in endings],
            "open": {names.tasks[i]: t for i, t in every.tasks.items() if i not in every.endings},
            "ended": {names.tasks[i]: t for i, t in every.tasks.items() if i in every.endings}}


def _worked_out(board: Board, every: Board | None) -> Board:
    """``board`` with each task's state while unclaimed worked out ahead. Given the full
    board ``every``, each task, ending and state that reads the same in both is its object,
    not a second one: a server keeps a third fewer objects, and every spare it forks writes
    to a third fewer (server/spare.py)."""
    if every is not None:
        board = board._replace(tasks=_one_copy(every.tasks.get, board.tasks),
                               endings=_one_copy(every.endings.get, board.endings))
    ids = list(board.tasks)
    worked_out: list[TaskState] = []
    for start in range(0, len(ids), 1000):
        watched.checkpoint()
        worked_out += _states_now(board, ids[start:start + 1000], {})
    unclaimed = dict(zip(ids, worked_out, strict=True))
    if every is not None and every.ahead is not None:
        unclaimed = _one_copy(every.ahead.get, unclaimed)
    return board._replace(ahead=Ahead(list(unclaimed.values()),
                                      {i: n for n, i in enumerate(unclaimed)}))


def _one_copy(kept: Callable[[str], _T | None], values: dict[str, _T]) -> dict[str, _T]:
    """``values``, each one equal to what ``kept`` gives for its key being that itself."""
    return {key: found if (found := kept(key)) == value else value
            for key, value in values.items()}


def one_state(record: Record, board: Board, task_id: str) -> TaskState:
    return states(record, board, [task_id])[0]


# -- naming a task --------------------------------------------------------------------------


def check_prefix(text: str | None, what: str = "task id") -> str:
    value = (text or "").strip().lower()
    if not value or len(value) > layout.TASK_ID_LENGTH or not set(value) <= _ID_CHARS:
        shown = repr(text[:40]) if text else "nothing"
        raise BadInput(f"{shown} is not a {what}: ids are up to {layout.TASK_ID_LENGTH} "
                       "characters of 0-9 and a-z (no i, l, o, u)",
                       hint="`atlas task ls --all` lists every task with its id")
    return value


def resolve(board: Board, text: str | None, what: str = "task id") -> str:
    """The one task whose id starts with ``text``; NotFound or an ambiguity (both exit 2)
    name what to type instead."""
    prefix = check_prefix(text, what)
    found = [i for i in board.tasks if i.startswith(prefix)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFound(f"no task of project {board.project} has an id starting with "
                       f"{prefix!r}", hint="`atlas task ls --all` lists every task")
    shown = ", ".join(f"{i} ({board.tasks[i].title[:40]})" for i in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    raise BadInput(f"{prefix!r} names {len(found)} tasks: {shown}{more}",
                   hint="type more of the id")


# -- writes ---------------------------------------------------------------------------------


def add(record: Record, project: str, *, title: str, author: str | None,
        why: str | None = None, after: Sequence[str] = (),
        paths: Sequence[str] = ()) -> TaskState:
    """Write a new task; every input is checked before anything is written."""
    author = require_identity(author)
    fields: dict[str, Any] = {
        "author": author, "project": project,
        "title": clean_text(title, "the title", one_line=True, limit=MAX_TITLE,
                            elsewhere="--why"),
        "why": clean_text(why, "the why (--why)", one_line=False, limit=MAX_WHY)
        if why is not None else None,
    }
    if len(after) > MAX_AFTER:
        raise BadInput(f"{len(after)} --after ids: a task waits for at most {MAX_AFTER}")
    board = read_board(record, project) if after else None
    waits = []
    for text in after:
        assert board is not None
        dep = resolve(board, text, "task id (--after)")
        if dep not in waits:
            waits.append(dep)
    fields["after"] = waits or None
    fields["paths"] = list(check_globs(paths, "the path glob (--paths)")) or None
    entry = entries.publish(folder(record, project), "task", fields, within=record.opened,
                            make_id=new_id)
    task = _task(_Read.of(entry), project)
    deps = {d: (board.tasks.get(d), board.endings.get(d)) for d in waits} if board else {}
    return state_of(task, None, None, deps)


def _stop(st: TaskState) -> VersionConflict:
    end = st.ended
    assert end is not None
    return VersionConflict(
        f"task {st.id} ({st.task.title}) was {end.action} by {end.author} at {end.at}"
        + (f": {end.why}" if end.why else ""),
        hint="nothing was changed; `atlas task next` takes another ready task")


def _held(st: TaskState) -> LeaseHeld:
    left = timeutil.format_duration(st.expires_in_s or 0)
    return LeaseHeld(
        f"task {st.id} ({st.task.title}) is claimed by {st.holder} for {left} more (until "
        f"{st.expires_at})",
        hint="take another with `atlas task next`; the claim frees itself when it expires")


def _blocked(st: TaskState) -> BadInput:
    said = "; ".join(f"{b.id} ({b.title or '?'}): {b.why}" for b in st.blocked_by)
    return BadInput(f"task {st.id} ({st.task.title}) is blocked: it waits for {said}",
                    hint="nothing was claimed; `atlas task next` takes a ready task")


def _ended_since(record: Record, board: Board, task_id: str) -> Ending | None:
    """An ending of ``task_id`` written since the board was read: none while the folder
    keeps the stamp it was listed under (one stat), else one listing."""
    where = folder(record, board.project)
    if watched.kept(where) is not None:
        return None  # nothing in the folder changed since the server read it, nor since
    try:
        if board.stamp is not None and _folder_stamp(where) == (board.stamp, True):
            return None
        names = sorted(n for n in os.listdir(where) if n.startswith(task_id + "."))
    except OSError:
        return None
    for name in names:
        m = layout.TASK_FILE.fullmatch(name)
        if m and m.group(2):
            try:
                return _ending(_Read.of(entries.read_entry(where / name)), task_id,
                               m.group(2))
            except (DamagedFile, OSError):
                continue
    return None


def _take(record: Record, board: Board, st: TaskState, holder: str, duration_s: float,
          given: str | None, doing: str = "task") -> TaskState:
    """Claim the task's lease (the compare-and-set), then look again for an ending written
    meanwhile: a finish holds the lease while it writes, so one that came first shows."""
    task = st.task
    try:
        lease = leases.claim(record, lease_resource(task.id), holder=holder,
                             duration_s=duration_s, why=f"{doing}: {task.title}"[:leases.MAX_WHY],
                             paths=task.paths,
                             given=given)
    except LeaseHeld:
        now = one_state(record, board, task.id)
        if now.state == "claimed":
            raise _held(now) from None
        raise
    ending = _ended_since(record, board, task.id)
    if ending is not None:
        _let_go(record, task.id, holder)
        raise _stop(TaskState(task, ending.action, ended=ending))
    return TaskState(task, "claimed", lease.holder, lease.expires_at, lease.expires_in_s,
                     lease.generation)


def _let_go(record: Record, task_id: str, holder: str) -> None:
    try:
        leases.release(record, lease_resource(task_id), holder=holder)
    except (BadInput, LeaseHeld):
        pass  # it expired, or someone took it over meanwhile: nothing of ours to give back


def claim(record: Record, project: str, task_ref: str, *, holder: str | None,
          duration_s: float, given: str | None = None) -> TaskState:
    """Claim a task for ``duration_s`` (or renew your claim): 3 if it is done or dropped,
    4 if another holds it, 2 if it is blocked."""
    holder = require_identity(holder)
    leases.check_duration(record, duration_s, given)
    board = read_board(record, project)
    st = one_state(record, board, resolve(board, task_ref))
    if st.state in ("done", "dropped"):
        raise _stop(st)
    if st.state == "claimed" and st.holder != holder:
        raise _held(st)
    if st.state == "blocked":
        raise _blocked(st)
    return _take(record, board, st, holder, duration_s, given)


def next_task(record: Record, project: str, *, holder: str | None, duration_s: float,
              given: str | None = None) -> TaskState | None:
    """Claim the oldest ready task; on a lost race, the next one. None if none is ready.
    Tasks are read oldest first only until one is ready: whether a task waits is told by
    the names of its dependencies' endings, so the queue behind it is never opened."""
    holder = require_identity(holder)
    leases.check_duration(record, duration_s, given)
    where = folder(record, project)
    held = watched.kept(where)
    if held is None:
        watched.want("tasks", os.path.abspath(record.root), project)
    try:
        names = _names(where)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if held is not None and held["names"] is names:
        endings, open_ids = held["endings"], held["open_ids"]
    else:
        endings = _name_endings(names)
        open_ids = [i for i in names.tasks if i not in endings]
    board = Board(project, {}, endings, (), names.stamp)
    claims = _claims(record, _Open(names.tasks, endings), timeutil.now())
    read = _TaskReader(where, "open", project)
    try:
        for task_id in open_ids:
            claim_now = claims.get(task_id)
            if claim_now is not None and (claim_now.held or claim_now.damaged):
                continue
            found = _read_tasks(read, names.tasks, [task_id], [])
            if not found:
                continue  # unreadable: `task ls` names it
            task = board.tasks[task_id] = found[task_id]
            # Only readiness counts here: a waited-for task that is not done blocks, read
            # or not.
            deps: dict[str, tuple[Task | None, Ending | None]] = {
                d: (None, endings.get(d)) for d in task.after}
            st = state_of(task, None, claim_now, deps)
            if st.state != "ready":
                continue
            try:
                return _take(record, board, st, holder, duration_s, given)
            except (LeaseHeld, VersionConflict):
                continue
    finally:
        read.save(None)
    return None


def _finish(record: Record, board: Board, task_id: str, holder: str,
            verb: str) -> tuple[TaskState, bool]:
    """Check that ``holder`` may finish or release the task; (its state, whether the
    holder has a claim on it now)."""
    st = one_state(record, board, task_id)
    if st.state in ("done", "dropped"):
        raise _stop(st)
    if st.state == "claimed" and st.holder != holder:
        raise _held(st)
    return st, st.state == "claimed"


def end(record: Record, project: str, task_ref: str, action: str, *, author: str | None,
        why: str | None = None, link: str | None = None) -> TaskState:
    """Mark a task done or dropped. Its holder may, and so may anyone while it is
    unclaimed: the finisher takes the task's lease while it writes (4 if another holds
    it), so a claim racing the finish either comes first or sees the ending."""
    author = require_identity(author)
    if action not in ENDINGS:
        raise BadInput(f"a task ends as done or dropped, not {action!r}")
    fields: dict[str, Any] = {
        "author": author, "project": project,
        "why": clean_text(why, "the why (--why)", one_line=False, limit=MAX_WHY)
        if why is not None or action == "dropped" else None,
    }
    board = read_board(record, project)
    task_id = resolve(board, task_ref)
    fields["task"] = task_id
    fields["link"] = corrections.resolve_refs(record, project, [link], "--link")[0] \
        if link else None
    st, mine = _finish(record, board, task_id, author, action)
    if not mine:
        _take(record, board, st, author, min(_FINISH_S, record.config.lease_cap_s), None,
              f"marking it {action}")
    entry = entries.publish(
        folder(record, project), ENDINGS[action], fields, within=record.opened,
        make_id=lambda at: f"{task_id}.{action}.{new_id(at)}")
    ending = Ending(entry.id, task_id, action, fields["why"], author,
                    str(entry.meta.get("at")), fields["link"], str(entry.path))
    _let_go(record, task_id, author)
    return TaskState(st.task, action, generation=st.generation, ended=ending)


def release(record: Record, project: str, task_ref: str, *, holder: str | None) -> TaskState:
    """Give a claimed task back, ready for the next taker; on an unclaimed task nothing
    changes."""
    holder = require_identity(holder)
    board = read_board(record, project)
    task_id = resolve(board, task_ref)
    _st, mine = _finish(record, board, task_id, holder, "release")
    if mine:
        _let_go(record, task_id, holder)
    return one_state(record, board, task_id)


# -- history --------------------------------------------------------------------------------


def history(record: Record, board: Board, task_id: str) -> list[dict[str, Any]]:
    """Each claim, renewal, release and expiry of the task's lease, and each entry, by time."""
    st = one_state(record, board, task_id)
    task = st.task
    rows: list[dict[str, Any]] = [{"at": task.created_at, "action": "added", "who": task.author,
                                   "why": task.why}]
    resource = lease_resource(task_id)
    if os.path.isdir(record.leases_dir / resource):
        _lease, gens = leases.show(record, resource)
        for gen in gens:
            rows.append({"at": gen.written_at, "action": gen.action, "who": gen.written_by,
                         "holder": gen.holder, "generation": gen.generation,
                         "expires_at": gen.expires_at})
            if (gen.ended or "").startswith("expired at") and gen.expires_at:
                rows.append({"at": gen.expires_at, "action": "expired", "who": gen.holder,
                             "generation": gen.generation})
    where = folder(record, board.project)
    for name in sorted(os.listdir(where)):
        m = layout.TASK_FILE.fullmatch(name)
        if m and m.group(1) == task_id and m.group(2):
            try:
                e = _ending(_Read.of(entries.read_entry(where / name)), task_id, m.group(2))
            except (DamagedFile, OSError):
                continue
            rows.append({"at": e.at, "action": e.action, "who": e.author, "why": e.why,
                         "link": e.link, "id": e.id})
    rows.sort(key=lambda r: timeutil.parse_time(r["at"]) if r["at"] else timeutil.now())
    return rows
