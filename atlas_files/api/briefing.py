"""What `atlas begin` gathers from the record, section by section, most urgent first.

Each section is a list of items, each item the JSON a script reads and the one line a
session reads, plus the short name that says what was cut when the briefing runs out of
room (``api.budget`` decides how much of each section fits).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import AtlasError, warn
from atlas_files.facts.names import split_version_ref
from atlas_files.facts.text import field
from atlas_files.protocol import corrections, decisions, status, tasks, telemetry
from atlas_files.protocol.artifacts import topic_hints, topic_names
from atlas_files.protocol.leases import view as leaseview
from atlas_files.protocol.sessions import Row, Told
from atlas_files.storage import receipts
from atlas_files.storage.documents import Head
from atlas_files.storage.record import Record

MAX_LINE = 240  # one item's line; the whole text stays in `atlas get` and friends
# Ready tasks listed at most, newest first: the rest are one `atlas task ls --ready` away.
READY_TASKS = 10
# The short form of the lease sheet's limits, said wherever the briefing lists leases.
LEASE_ADVISORY = ("Leases are advisory: nothing enforces them, and a machine nobody "
                  "leased may still be busy.")


class Item:
    """One item of a section: ``data``, what --json shows; ``line``, what the text shows;
    ``name``, how a cut names it. An item of a section that can hold thousands (the topics
    new to you) makes its data and line only when they are shown (``later``)."""

    __slots__ = ("name", "_data", "_line", "_make")

    def __init__(self, data: dict[str, Any] | None, line: str | None, name: str,
                 make: Callable[[], tuple[dict[str, Any], str]] | None = None) -> None:
        self._data, self._line, self.name, self._make = data, line, name, make

    @classmethod
    def later(cls, name: str, make: Callable[[], tuple[dict[str, Any], str]]) -> Item:
        return cls(None, None, name, make)

    def _made(self) -> tuple[dict[str, Any], str]:
        if self._data is None or self._line is None:
            assert self._make is not None
            self._data, self._line = self._make()
        return self._data, self._line

    @property
    def data(self) -> dict[str, Any]:
        return self._made()[0]

    @property
    def line(self) -> str:
        return self._made()[1]


class Section(NamedTuple):
    key: str  # the JSON key: new, corrections, proposals, decisions, leases, machines
    title: str
    items: tuple[Item, ...]
    see: str  # the command that lists everything
    empty: str | None = None  # the text when there is nothing; None: leave the section out
    footer: str | None = None  # a line said under the items (the leases' advisory)


class StatusPart(NamedTuple):
    data: dict[str, Any] | None  # None: the project has no status yet
    head: tuple[str, ...]
    body: str
    label: str = ""  # who wrote the body and where, said above its fence


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """One item's line, the record text in it escaped (``text.field``): whatever a writer
    put in a summary or a why, the item stays one line."""
    return field(text, limit)


def _after(at: str, since: datetime | None) -> bool:
    if since is None:
        return True
    try:
        return timeutil.parse_time(at) > since
    except ValueError:
        return True  # an unreadable time is shown rather than hidden


# -- the status -----------------------------------------------------------------------------


def status_part(record: Record, identity: str, project: str, read_before: int) -> StatusPart:
    """The status, read (and so marked read) for ``identity``: shown in full, it is read."""
    doc = status.show(record, reader=identity, project=project)
    if doc is None:
        return StatusPart(None, (f"Status of {project}: none yet. Write the first with "
                                 "`atlas end --status TEXT` before you stop.",), "")
    marks = corrections.marks_json(record, project, "status", "status", doc.version)
    age = timeutil.age_of(doc.written_at)
    head = [f"Status of {project}: v{doc.version}, written {age} by {field(doc.author, 80)}"
            + (f" ({one_line(doc.summary, 120)})" if doc.summary else "")]
    if read_before < doc.version and doc.author != identity:
        head.append(f"NEW to you: you had read v{read_before}." if read_before
                    else "NEW to you: you had never read it.")
    retracted = marks.get("retracted")
    if retracted:
        head.append(one_line(f"RETRACTED by {retracted['author']}: {retracted['why']}"))
    for c in marks.get("corrected_by", []):
        head.append(one_line(f"CORRECTED by {c['author']}: {c['what']}"))
    data = {"version": doc.version, "author": doc.author, "written_at": doc.written_at,
            "age": age, "summary": doc.summary, "read_before": read_before,
            "body": doc.body, "corrected_by": marks.get("corrected_by", []),
            "retracted": retracted}
    return StatusPart(data, tuple(head), doc.body,
                      f"status v{doc.version} of {project} by {field(doc.author, 80)}")


# -- topics: what is new, and the proposals that wait --------------------------------------


def topics(record: Record, identity: str, project: str,
           read: dict[str, int]) -> tuple[Section, Section, dict[str, int]]:
    """(new to you, proposals waiting, each topic's latest version): one pass over the
    topics, reading the front matter of each latest version once, as `atlas ls` does."""
    latest_of: dict[str, int] = {}
    new: list[tuple[str, Item]] = []
    waiting: list[tuple[str, Item]] = []
    hints = topic_hints(record, project)
    for name in topic_names(record, project):
        try:
            latest = hints.latest(name)
            if latest == 0:
                continue
            doc = hints.head(name, latest)
        except (AtlasError, OSError) as exc:
            warn(f"{getattr(exc, 'message', exc)} (left out of the briefing)")
            continue
        latest_of[name] = latest
        seen = read.get(receipts.artifact_key(project, name), 0)
        state = corrections.proposal_state(record, project, name, latest, doc.proposal)
        if latest > seen and doc.author != identity:
            new.append((doc.written_at, _new_item(doc, seen, state)))
        if state == "proposed":
            waiting.append((doc.written_at, _proposal_item(doc)))
    hints.save()
    new.sort(key=lambda pair: pair[0], reverse=True)
    waiting.sort(key=lambda pair: pair[0], reverse=True)
    return (Section("new", "New to you since you last read", tuple(i for _, i in new),
                    "atlas feed", empty="Nothing new to you."),
            Section("proposals", "Proposals waiting for acceptance",
                    tuple(i for _, i in waiting), "atlas ls"),
            latest_of)


def _new_item(doc: Head, seen: int, state: str) -> Item:
    def make() -> tuple[dict[str, Any], str]:
        age = timeutil.age_of(doc.written_at)
        tag = {"proposed": " [proposal]", "accepted": " [accepted proposal]"}.get(state, "")
        read = f"you read v{seen}" if seen else "never read"
        data = {"kind": "artifact", "name": doc.name, "version": doc.version,
                "read_version": seen, "author": doc.author, "written_at": doc.written_at,
                "summary": doc.summary, "proposal": doc.proposal}
        return data, one_line(f"{doc.name} v{doc.version}{tag} by {doc.author}, {age} "
                              f"({read}): {doc.summary}")

    return Item.later(f"{doc.name} v{doc.version}", make)


def _proposal_item(doc: Head) -> Item:
    ref = f"{doc.name}@v{doc.version}"
    data = {"name": doc.name, "version": doc.version, "author": doc.author,
            "written_at": doc.written_at, "summary": doc.summary}
    line = one_line(f"{ref} by {doc.author}, {timeutil.age_of(doc.written_at)}: "
                    f"{doc.summary} (accept with `atlas decide ... --accepts {ref}`)")
    return Item(data, line, ref)


# -- entries since the last session ----------------------------------------------------------


def correction_section(record: Record, identity: str, project: str, read: dict[str, int],
                       since: datetime | None) -> Section:
    """Corrections and retractions by others since the last session; first those of
    versions this identity had read."""
    found: list[tuple[bool, str, Item]] = []
    if record.has_entries(project, "corrections"):
        for c in corrections.list_corrections(record, project):
            if c.author == identity or not _after(c.at, since):
                continue
            you_read = _had_read(read, project, c.ref)
            found.append((you_read, c.at, _correction_item(c, you_read)))
    found.sort(key=lambda t: t[1], reverse=True)  # newest first ...
    found.sort(key=lambda t: not t[0])  # ... within: versions you had read, then the rest
    return Section("corrections", "Corrections and retractions since your last session",
                   tuple(i for _, _, i in found), "atlas decisions; atlas get NAME")


def _had_read(read: dict[str, int], project: str, ref: str) -> bool:
    split = split_version_ref(ref)
    if split is None:
        return False
    name, version = split
    key = (receipts.status_key(project) if name == "status"
           else receipts.artifact_key(project, name))
    return read.get(key, 0) >= version


def _correction_item(c: corrections.Correction, you_read: bool) -> Item:
    ref = c.ref.replace("@v", " v")
    if c.kind == "retraction":
        text = (f"you read {ref}; {c.author} retracted it since: {c.text}" if you_read
                else f"{c.author} retracted {ref}: {c.text}")
    else:
        text = (f"you read {ref}; {c.author} corrected it since: {c.text}" if you_read
                else f"{c.author} corrected {ref}: {c.text}")
    data = {"id": c.id, "kind": c.kind, "at": c.at, "author": c.author, "ref": c.ref,
            "text": c.text, "you_read": you_read}
    return Item(data, one_line(f"{text} ({c.id})"), c.id)


def decision_section(record: Record, identity: str, project: str,
                     since: datetime | None) -> Section:
    items = []
    for d in reversed(decisions.list_decisions(record, project, since=since)):
        if d.author == identity:
            continue
        data = {"id": d.id, "at": d.at, "topic": d.topic, "recommended": d.recommended,
                "chosen": d.chosen, "relation": d.relation, "why": d.why, "author": d.author}
        line = one_line(f"{d.topic}: chose {d.chosen} ({d.relation}; by {d.author}, "
                        f"{timeutil.age_of(d.at)}): {d.why}")
        items.append(Item(data, line, d.id))
    return Section("decisions", "Decisions since your last session", tuple(items),
                   "atlas decisions")


# -- tasks ------------------------------------------------------------------------------------


def _record_line(text: str | None, limit: int = 120) -> str:
    """Record text (a title, a why) on one line, escaped as every item line is
    (``one_line``), so it never starts a line of its own."""
    return one_line(text or "", limit)


def task_section(record: Record, identity: str, project: str) -> Section:
    """The tasks you hold (time left), the ones others hold (never shown as ready), then
    the ready ones, newest first, at most READY_TASKS."""
    try:
        board = tasks.read_board(record, project, full=False)
        found = tasks.states(record, board)
    except (AtlasError, OSError) as exc:
        warn(f"the tasks cannot be read: {getattr(exc, 'message', exc)}")
        found = []
    mine = [t for t in found if t.state == "claimed" and t.holder == identity]
    others = [t for t in found if t.state == "claimed" and t.holder != identity]
    ready = sorted((t for t in found if t.state == "ready"),
                   key=lambda t: t.task.created_at, reverse=True)[:READY_TASKS]
    items = []
    for t, label in [*((t, "yours") for t in mine), *((t, "theirs") for t in others),
                     *((t, "ready") for t in ready)]:
        left = timeutil.format_duration(t.expires_in_s or 0)
        said = {"yours": f"held by you for {left} more",
                "theirs": f"held by {t.holder} for {left} more",
                "ready": "ready"}[label]
        why = f": {_record_line(t.task.why)}" if t.task.why else ""
        line = f"task {t.id} ({said}): {_record_line(t.task.title)}{why}"
        data = {"id": t.id, "title": t.task.title, "why": t.task.why, "state": t.state,
                "holder": t.holder, "expires_at": t.expires_at,
                "expires_in_s": t.expires_in_s, "paths": list(t.task.paths)}
        items.append(Item(data, line, t.id))
    return Section("tasks", "Tasks (take one with `atlas task next --for 2h`, finish with "
                   "`atlas task done ID`)", tuple(items), "atlas task ls", footer=None)


# -- leases and machines ---------------------------------------------------------------------


def lease_section(record: Record, identity: str) -> tuple[Section, dict[str, int], set[str]]:
    """(leases held now, each resource's newest generation, resources held)."""
    problems, leases, damaged = leaseview.read_all(record)
    for problem in problems:
        warn(f"{problem} (left out of the briefing)")
    items = []
    for lease in leases:
        if not lease.held or lease.resource.startswith(layout.TASK_LEASE_PREFIX):
            continue  # a task's claim is said in the tasks section
        who = "you" if lease.holder == identity else lease.holder
        data = {"resource": lease.resource, "holder": lease.holder, "why": lease.why,
                "generation": lease.generation, "expires_at": lease.expires_at,
                "expires_in_s": lease.expires_in_s, "paths": list(lease.paths)}
        covers = f" (covers {', '.join(lease.paths)})" if lease.paths else ""
        # Only when there is one: the briefing is read into a model's context, and a
        # warning that holds for no lease costs every lease a line.
        clock = ""
        if lease.clock_warning:
            data["clock_warning"] = lease.clock_warning
            clock = f" [{_clock_note(lease, record.config.clock_skew_allowance_s)}]"
        line = one_line(f"{lease.resource}: held by {who} for {leaseview.left_text(lease)} "
                        f"more{covers}: {lease.why}{clock}")
        items.append(Item(data, line, lease.resource))
    generations = {lease.resource: lease.generation for lease in (*leases, *damaged)}
    held = {lease.resource for lease in leases if lease.held} | {d.resource for d in damaged}
    section = Section("leases", "Leases held now", tuple(items), "atlas lease ls",
                      empty="No lease is held.", footer=LEASE_ADVISORY)
    return section, generations, held


def _clock_note(lease: leaseview.Lease, allowance_s: float) -> str:
    """A lease's clock warning short enough for one line of the briefing."""
    skew, error = lease.clock_skew_s, lease.clock_skew_error_s or 0.0
    if skew is None or abs(skew) - error <= allowance_s:
        return f"clock warning: {lease.clock_warning}"
    if skew < 0:
        return (f"clock: the holder's clock runs {-skew:.1f} s behind yours, so here this "
                f"lease may read as ended {-skew:.1f} s before its holder thinks")
    return (f"clock: the holder's clock runs {skew:.1f} s ahead of yours, so here this lease "
            f"may read as held {skew:.1f} s longer than its holder asked")


def machine_section(record: Record, held: set[str]) -> Section:
    """Machines whose telemetry is stale or unreachable, and GPUs busy without a lease."""
    items = []
    rows = telemetry.ls(record)
    for row in rows:
        if row.reachable and not row.stale:
            continue
        problem = "unreachable" if row.reachable is False else (
            "never probed" if row.reachable is None else "stale")
        seen = f"last seen {timeutil.age_of(row.observed_at)}" if row.observed_at else "no row"
        data = {"machine": row.machine, "problem": problem, "observed_at": row.observed_at,
                "age_s": row.age_s, "error": row.error}
        line = one_line(f"{row.machine}: {problem} ({seen})"
                        + (f": {row.error}" if row.error else ""))
        items.append(Item(data, line, row.machine))
    for gpu in telemetry.busy_gpus(record) if rows else ():
        if gpu["resource"] in held:
            continue
        data = {"machine": gpu["machine"], "problem": "busy without a lease",
                "resource": gpu["resource"], "memory_used_mib": gpu["memory_used_mib"],
                "observed_at": gpu["observed_at"], "stale": gpu["stale"]}
        line = one_line(f"{gpu['resource']}: busy without a lease "
                        f"({gpu['memory_used_mib']} MiB in use, "
                        f"{timeutil.age_of(str(gpu['observed_at']))})")
        items.append(Item(data, line, gpu["resource"]))
    return Section("machines", "Machines to know about", tuple(items), "atlas telemetry ls")


# -- what the edit-time hooks told the last session ----------------------------------------


def told_line(told: Told, read: dict[str, int], project: str) -> str:
    """One result of the guard or the news hook, and what the session did next."""
    if told.kind == "stopped":
        after = ("a person let it through: the session edited it anyway"
                 if told.after == "edited" else "the session did not edit it afterwards")
        return one_line(f"the guard stopped an edit: {told.what} ({after})")
    if told.kind == "refused":
        after = "; the file was changed afterwards" if told.after == "edited" else ""
        return one_line(f"the guard refused an edit of the record's own files: {told.what}"
                        f"{after}")
    if told.kind == "told":
        return one_line(f"the guard told of recent commits before an edit: {told.what}")
    unread = [ref for ref in told.refs if not _had_read(read, project, ref)]
    after = (f" (not read since: {', '.join(unread)})" if unread
             else " (read since)" if told.refs else "")
    return one_line(f"news: {told.what}{after}")


def told_section(row: Row | None, read: dict[str, int], title: str) -> Section:
    """What the edit guard and the news hook told ``row``'s session, newest first."""
    items = []
    for told in reversed(row.told if row is not None else []):
        data = {**told.to_json(), "paths": [os.path.basename(p) for p in told.paths]}
        items.append(Item(data, told_line(told, read, row.project if row else ""),
                          f"{told.kind} {told.at}"))
    return Section("guard", title, tuple(items), "atlas begin --json")
