"""The session ritual: `atlas begin` reads everything first, `atlas end` writes last.

``begin`` gathers what a session must read before acting, most urgent first and bounded
in size, marks the status read (it is shown in full) and records the session's row.
``end`` writes the status if given one (under the stop sign), then checks that the
session wrote the project's status since it began, and reports what others wrote
meanwhile, the leases still held and the proposals still open. (What a harness's Stop
hook asks at every turn end is ``api.stop``, kept apart so that it stays light.)

The MCP server calls ``begin`` and ``end`` unchanged: their results' ``to_json()`` are the
documents ``atlas begin --json`` and ``atlas end --json`` print.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from atlas_files.api import Worker, briefing, budget, reads, writes
from atlas_files.api.activity import repository_briefing
from atlas_files.api.stop import Claim, claims_held
from atlas_files.facts import timeutil
from atlas_files.facts.errors import AtlasError, BadInput, DamagedFile, warn
from atlas_files.protocol import corrections, leases, sessions, stopsign
from atlas_files.protocol import status as statusmod
from atlas_files.protocol.artifacts import TopicSummary, topic_hints, topic_names
from atlas_files.protocol.artifacts import ls as list_topics
from atlas_files.protocol.leases import Lease
from atlas_files.protocol.leases import view as leaseview
from atlas_files.protocol.sessions import Row, Write
from atlas_files.storage import receipts
from atlas_files.storage.record import Record

MIN_CHARS = 800  # below this, not even the briefing's headings fit
WRITE_STATUS = "`atlas end --status TEXT` (or `atlas end -f FILE`)"


def _repository(worker: Worker) -> tuple[dict[str, Any] | None, list[str]]:
    """The repository section: recent commits on every branch of the git repository
    holding the current folder, and the path leases (api.activity); null outside one,
    with a line saying why."""
    return repository_briefing(worker)


class Briefing(NamedTuple):
    """What `atlas begin` shows: ``text`` (within max_chars) and the same items as JSON."""

    identity: str
    project: str
    started_at: str
    continued: bool  # the same session goes on (after a compaction or a resume)
    status: dict[str, Any] | None
    sections: dict[str, list[dict[str, Any]]]
    repository: dict[str, Any] | None
    truncated: tuple[dict[str, Any], ...]
    text: str

    def to_json(self) -> dict[str, Any]:
        s = self.sections
        return {"identity": self.identity, "project": self.project,
                "started_at": self.started_at, "status": self.status, "new": s["new"],
                "corrections": s["corrections"], "proposals": s["proposals"],
                "decisions": s["decisions"], "tasks": s["tasks"],
                "leases": {"advisory": briefing.LEASE_ADVISORY, "held": s["leases"]},
                "machines": s["machines"], "repository": self.repository,
                "truncated": list(self.truncated), "guard": s["guard"]}


class Ending(NamedTuple):
    """What `atlas end` found; ``ok`` is False (exit 1) while the status is unwritten."""

    identity: str
    project: str
    started_at: str | None  # None: no session row (no `atlas begin`)
    ended_at: str | None  # None: the session goes on
    ok: bool
    written: dict[str, Any] | None  # the status version this call wrote
    warnings: tuple[str, ...]
    wrote: tuple[Write, ...]
    others: tuple[Write, ...]
    leases_held: tuple[Lease, ...]
    leases_released: tuple[Lease, ...]
    proposals_open: tuple[TopicSummary, ...]
    todo: str | None
    told: tuple[dict[str, Any], ...] = ()  # what the guard and the news hook told, newest first
    told_lines: tuple[str, ...] = ()
    tasks_held: tuple[Claim, ...] = ()  # task claims still held (their leases are in leases_held)

    def to_json(self) -> dict[str, Any]:
        return {"identity": self.identity, "project": self.project,
                "started_at": self.started_at, "ended_at": self.ended_at, "ok": self.ok,
                "status": self.written, "wrote": [w.to_json() for w in self.wrote],
                "others": [w.to_json() for w in self.others],
                "leases_held": [lease.to_json() for lease in self.leases_held],
                "leases_released": [lease.to_json() for lease in self.leases_released],
                "proposals_open": [t.to_json() for t in self.proposals_open],
                "todo": self.todo, "guard": list(self.told),
                "tasks_held": [c.to_json() for c in self.tasks_held]}


def _row(record: Record, identity: str) -> Row | None:
    try:
        return sessions.read(record, identity)
    except (DamagedFile, OSError) as exc:
        warn(f"{getattr(exc, 'message', exc)}; treating it as no session row")
        return None


def _time(text: str | None) -> datetime | None:
    try:
        return timeutil.parse_time(text) if text else None
    except ValueError:
        return None


# -- begin --------------------------------------------------------------------------------------


@reads
def begin(worker: Worker, *, max_chars: int = 6000) -> Briefing:
    """Start a session: everything to read before acting, within ``max_chars``."""
    return _begin(worker, max_chars, go_on=False)


@reads
def begin_again(worker: Worker, *, max_chars: int = 6000) -> Briefing:
    """The briefing again for a session that goes on (after a compaction or a resume):
    its row, and so what counts as written since it began, stays as it was. Without an
    open row it is ``begin``."""
    return _begin(worker, max_chars, go_on=True)


def _begin(worker: Worker, max_chars: int, go_on: bool) -> Briefing:
    if max_chars < MIN_CHARS:
        raise BadInput(f"--max-chars {max_chars}: a briefing needs at least {MIN_CHARS}",
                       hint="the default is 6000")
    record, identity, project = worker.record, worker.author, worker.project_name
    started = timeutil.format_time(timeutil.now())
    previous = _row(record, identity)
    goes_on = go_on and previous is not None and previous.open and previous.project == project
    if goes_on and previous is not None:
        started, since = previous.started_at, previous.previous
    else:
        since = (previous.ended_at or previous.started_at) if previous else None
    try:
        read = stopsign.what_was_read(record, identity)
    except (DamagedFile, OSError) as exc:
        warn(f"{getattr(exc, 'message', exc)}; the briefing treats everything as unread")
        read = {}
    after = _time(since)
    status = briefing.status_part(record, identity, project,
                            read.get(receipts.status_key(project), 0))
    new, proposals, latest = briefing.topics(record, identity, project, read)
    lease_sheet, generations, held = briefing.lease_section(record, identity)
    sections = [briefing.correction_section(record, identity, project, read, after), new, proposals,
                briefing.decision_section(record, identity, project, after),
                briefing.task_section(record, identity, project), lease_sheet,
                briefing.machine_section(record, held),
                briefing.told_section(previous, read, "What the edit guard and the news hook told "
                                + ("this session so far" if goes_on else "your last session"))]
    repository, repository_lines = _repository(worker)
    if not goes_on:
        saw = sessions.Baseline(status.data["version"] if status.data else 0, latest,
                                generations)
        sessions.write(record, Row(identity, project, sessions.OPEN, started, None, saw,
                                   since))
    header = [
        f"atlas begin: you are {identity}, on project {project}; this session "
        + ("goes on (after a compaction or a resume)" if goes_on else "begins now")
        + f" ({started}).",
        "Read this before you act. Before you stop, write where things stand: "
        f"{WRITE_STATUS}.",
        (f"Since your last session ({timeutil.age_of(since)}), newest first." if since
         else f"This is {identity}'s first session here."),
    ]
    fitted = budget.fit(header, status, sections, repository_lines, max_chars)
    status_json = status.data
    if status_json is not None and fitted.body_chars < len(status.body):
        status_json = {**status_json, "body": status.body[:fitted.body_chars]}
    shown = {s.key: [item.data for item in s.items[:fitted.shown[s.key]]] for s in sections}
    return Briefing(identity, project, started, goes_on, status_json, shown, repository,
                    fitted.truncated, fitted.text)


# -- end ----------------------------------------------------------------------------------------


def _baseline(record: Record, project: str) -> sessions.Baseline:
    """What stands now: the status, each topic's latest version, each lease's newest
    generation (the numbers from folder listings and the latest-version hints)."""
    hints = topic_hints(record, project)
    topics = {name: hints.latest(name) for name in topic_names(record, project)}
    hints.save()
    leases_dir = str(record.leases_dir)
    generations = {name: sessions.newest_generation(f"{leases_dir}/{name}")
                   for name in sessions.lease_names(leases_dir)}
    return sessions.Baseline(record.status_stream(project).latest(), topics, generations)


@writes("end")
def end(worker: Worker, *, status: str | None = None, summary: str | None = None,
        release_leases: bool = False) -> Ending:
    """End the session: write ``status`` first if given (exit 3 if it moved since you read
    it), then check that the session wrote the status since it began."""
    record, identity = worker.record, worker.author
    row = _row(record, identity)
    # The session's own project unless one was named: `atlas end` after `atlas -p ml begin`.
    project = worker.project_name if worker.project or row is None else row.project
    written: dict[str, Any] | None = None
    warnings: tuple[str, ...] = ()
    if status is not None:
        if not status.strip():
            raise BadInput("the status is empty; nothing was written",
                           hint="say where things stand: what was done, what is next")
        doc, notes = statusmod.write(record, status, author=identity, project=project,
                                     summary=summary)
        written = {"name": "status", "version": doc.version, "path": str(doc.path)}
        warnings = tuple(notes)
    writes = sessions.writes_since(record, row) if row and row.project == project else []
    mine = tuple(sessions.mine(writes, identity))
    # A session that already ended and wrote nothing since has nothing left to write.
    ok = written is not None or any(w.kind == "status" for w in mine) or (
        row is not None and not row.open and row.project == project and not mine)
    held = tuple(lease for lease in leaseview.read_all(record)[1]
                 if lease.held and lease.holder == identity)
    released = []
    if release_leases and ok:
        for lease in held:
            try:
                released.append(leases.release(record, lease.resource, holder=identity,
                                               generation=lease.generation))
            except AtlasError as exc:
                warn(f"{lease.resource} was not released: {exc.message}")
    proposals = tuple(t for t in list_topics(record, project) if t.author == identity
                      and corrections.proposal_state(record, project, t.name, t.version,
                                                     t.proposal) == "proposed")
    ended = None
    if ok:
        ended = timeutil.format_time(timeutil.now())
        # What the hooks told this session stays in the ended row: the next `begin` says it.
        sessions.write(record, Row(identity, project, sessions.ENDED,
                                   row.started_at if row else ended, ended,
                                   _baseline(record, project),
                                   row.previous if row else None,
                                   told=row.told if row else None))
    todo = None if ok else (
        f"write where things stand: {WRITE_STATUS}; you have not written the status of "
        f"{project} since " + ("this session began" if row and row.open else
                               "your last `atlas end`" if row else "any `atlas begin`"))
    released_names = {lease.resource for lease in released}
    told = briefing.told_section(row, _receipts(record, identity), "")
    return Ending(identity, project, row.started_at if row else None, ended, ok, written,
                  warnings, mine, tuple(sessions.others(writes, identity)),
                  tuple(lease for lease in held if lease.resource not in released_names),
                  tuple(released), proposals, todo, tuple(i.data for i in told.items),
                  tuple(i.line for i in told.items),
                  tuple(claims_held(record, identity, project)) if not release_leases or not ok
                  else ())


def _receipts(record: Record, identity: str) -> dict[str, int]:
    try:
        return stopsign.what_was_read(record, identity)
    except (DamagedFile, OSError):
        return {}
