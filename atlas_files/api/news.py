"""News while a session works: what changed since it began, or since it last heard.

A harness's post-tool hook (`atlas news --hook H`, see ``hooks.tools``) asks this after
every tool call, and it looks at most once every ``news.every`` (atlas.yaml): the rest of
the time it costs one read of the session row. It tells only what concerns the session,
and only once:

* a topic this identity read has a newer version (by whom, with its summary);
* a correction or retraction of something it read, or of something a version it read
  links to;
* a new path lease of another identity covering a file it edited this session;
* a task it wrote or holds waits for one that is now done; a task it held was taken by
  another after its claim expired;
* the status of its project moved.

Said as context (bounded by ``news.limit`` characters; what was cut is counted), never a
block. What was told becomes the session's new baseline (the row's ``heard``), so the
next news starts after it; the session's own writes are never news.

The same call keeps the session's edits (``edited``: the news above asks about them) and
notes when an edit the guard stopped or refused went through after all (``after``), so
that `atlas end` and the next `atlas begin` can say so; and it hands over context the
guard left for a harness whose pre-tool hook cannot carry any (``pending``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import AtlasError, DamagedFile
from atlas_files.facts.names import split_version_ref
from atlas_files.facts.text import fence, field
from atlas_files.protocol import pathleases, sessions, stopsign
from atlas_files.protocol.sessions import Baseline, Row, Told
from atlas_files.storage import fsio, jsonfile, receipts, volcase
from atlas_files.storage.record import Record

LINKS_SCANNED = 200  # versions read whose links a new correction is compared with
LINE = 240  # characters of one item
# Characters of the guard's notes handed over at once: a note names a few commits, and a
# session row, which anyone who writes the record can write, may hold megabytes of them.
PENDING_CHARS = 4000


class Item:
    """One piece of news: ``kind`` (version, correction, retraction, lease, status), the
    line said, and the versions it names (``plan@v3``)."""

    __slots__ = ("kind", "line", "refs")

    def __init__(self, kind: str, line: str, refs: Sequence[str] = ()) -> None:
        self.kind = kind
        self.line = line
        self.refs = list(refs)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.line, "refs": list(self.refs)}


class News:
    """What the session is told now: ``text`` (None: nothing), within the limit."""

    __slots__ = ("identity", "since", "items", "shown", "pending", "text")

    def __init__(self, identity: str, since: str | None, items: list[Item], shown: int,
                 pending: list[str], text: str | None) -> None:
        self.identity = identity
        self.since = since
        self.items = items
        self.shown = shown
        self.pending = pending
        self.text = text

    def to_json(self) -> dict[str, Any]:
        return {"as": self.identity, "since": self.since,
                "news": [i.to_json() for i in self.items], "shown": self.shown,
                "cut": len(self.items) - self.shown, "guard": list(self.pending),
                "text": self.text}


def _one_line(text: str) -> str:
    return field(text, LINE)


def _pending_text(pending: Sequence[str], identity: str) -> list[str]:
    """The guard's notes kept in the session row, each fenced and labelled with where it
    was kept (the row is a file, not atlas's voice), within PENDING_CHARS in all."""
    out: list[str] = []
    room = PENDING_CHARS
    for i, note in enumerate(pending):
        if room <= 0:
            out.append(f"[… {len(pending) - i} more of the edit guard's notes not shown]")
            break
        shown = note[:room]
        room -= len(shown)
        out.append(fence(shown, "the edit guard's note before an earlier edit, as kept in "
                                f"sessions/{identity}.json")
                   + (f"\n[… {len(note) - len(shown)} more characters of it not shown]"
                      if len(shown) < len(note) else ""))
    return out


# -- what changed ---------------------------------------------------------------------------


def _topics(record: Record, row: Row, read: dict[str, int], base: Baseline,
            identity: str) -> tuple[list[Item], dict[str, int]]:
    """Newer versions, by others, of the topics this identity read."""
    items: list[Item] = []
    moved: dict[str, int] = {}
    prefix = receipts.artifact_key(row.project, "")
    artifacts = str(record.path(layout.PROJECTS, row.project, layout.ARTIFACTS))
    for key, version_read in sorted(read.items()):
        if not key.startswith(prefix):
            continue
        name = key[len(prefix):]
        seen = max(version_read, base.topics.get(name, 0))
        folder = f"{artifacts}{os.sep}{name}"
        # One stat for a topic that did not move: this runs over every topic read.
        if not os.path.exists(f"{folder}{os.sep}{layout.version_filename(name, seen + 1)}"):
            continue
        writes = list(sessions.versions_after(folder, name, seen, "put"))
        if not writes:
            continue
        moved[name] = writes[-1].version or seen
        theirs = [w for w in writes if w.author != identity]
        if not theirs:
            continue
        last = theirs[-1]
        by = ", ".join(dict.fromkeys(w.author or "someone" for w in theirs))
        versions = (f"v{last.version}" if len(theirs) == 1
                    else f"v{theirs[0].version}-v{last.version}")
        items.append(Item("version", _one_line(
            f"{name} {versions} by {by}, {timeutil.age_of(last.at)} (you read "
            f"v{version_read}): {last.summary} — read it before you build on it: "
            f"`atlas get {name}`"), [f"{name}@v{last.version}"]))
    return items, moved


def _linked(record: Record, row: Row, read: dict[str, int]) -> set[str]:
    """What the versions this identity read link to (``NAME@vN``, ``NAME``)."""
    out: set[str] = set()
    prefix = receipts.artifact_key(row.project, "")
    artifacts = record.path(layout.PROJECTS, row.project, layout.ARTIFACTS)
    for key, version in sorted(read.items())[:LINKS_SCANNED]:
        if key.startswith(prefix):
            name = key[len(prefix):]
            meta = sessions.head(str(artifacts / name / layout.version_filename(name, version)))
            links = meta.get("links") if meta else None
            if isinstance(links, list):
                out.update(str(x) for x in links)
    return out


def _corrections(record: Record, row: Row, read: dict[str, int], since: str,
                 identity: str) -> list[Item]:
    """Corrections and retractions by others, since ``since``, of what this identity read
    or of what a version it read links to."""
    where = str(record.path(layout.PROJECTS, row.project, layout.CORRECTIONS))
    entries = [w for w in sessions.entries_since(where, since) if w.author != identity]
    if not entries:
        return []
    linked: set[str] | None = None
    items = []
    for w in entries:
        ref = w.summary
        split = split_version_ref(ref)
        name = ref if split is None else split[0]
        key = (receipts.status_key(row.project) if name == "status"
               else receipts.artifact_key(row.project, name))
        you_read = split is not None and read.get(key, 0) >= split[1]
        if not you_read:
            if linked is None:
                linked = _linked(record, row, read)
            if ref not in linked and name not in linked:
                continue
        meta = sessions.head(os.path.join(where, f"{w.name}.md")) or {}
        said = meta.get("why") if w.kind == "retraction" else meta.get("what")
        how = "which you read" if you_read else "which a version you read links to"
        verb = "retracted" if w.kind == "retraction" else "corrected"
        items.append(Item(w.kind, _one_line(
            f"{w.author} {verb} {ref}, {how}: {said or ''} ({w.name})"), [ref]))
    return items


def _leases(record: Record, base: Baseline, edited: Sequence[str],
            identity: str) -> tuple[list[Item], dict[str, int]]:
    """New path leases of others covering a file this session edited. Asked only once
    the session edited something; a lease taken before that edit but after the session
    began is news then too. Read through the guard's index of path leases (pathleases):
    a sheet of a thousand leases costs a folder listing and a stat each."""
    if not edited:
        return [], {}
    try:
        items = pathleases.read(str(record.leases_dir))
    except OSError:
        return [], {}
    moved: dict[str, int] = {}
    found = []
    for item in items:
        number = item.name[1:-5] if item.name else ""
        generation = int(number) if number.isdigit() else 0
        if generation <= base.leases.get(item.resource, 0):
            continue
        moved[item.resource] = generation
        if item.state != pathleases.PATHS or item.holder == identity:
            continue
        found.append(item)
    if not found:
        return [], moved
    from atlas_files.protocol.leases.paths import covers  # noqa: PLC0415 - only when a lease changed

    # On a volume that folds case (the record's, taken for the work tree beside it, as
    # the session's edits are kept without their repository), SRC/a.py is src/a.py.
    fold = volcase.folds_case(str(record.root), layout.CONFIG_NAME)
    out = []
    now = timeutil.format_time(timeutil.now())
    for item in found:
        expires = item.expires_at
        if not isinstance(expires, str) or expires <= now:
            continue
        globs = [volcase.fold(g) for g in item.globs] if fold else item.globs
        hit = [p for p in edited
               if any(covers(g, volcase.fold(p) if fold else p) for g in globs)]
        if not hit:
            continue
        path = os.path.join(item.folder, item.name or "")
        try:
            why = jsonfile.need_object(jsonfile.read(path, 1 << 20), "a generation").get("why")
        except (OSError, ValueError):
            why = None
        out.append(Item("lease", _one_line(
            f"{item.holder} took the path lease {item.resource} on {', '.join(hit[:3])}, "
            f"which you edited this session, until {expires}: {why or ''} — tell "
            f"{item.holder} through the record what you changed there")))
    return out, moved


def _task_claims(record: Record, base: Baseline,
                 identity: str) -> tuple[list[Item], dict[str, int]]:
    """Task claims of this identity that another took after they expired: the newest
    generation of a ``task.*`` lease that moved, when it is a claim by someone else whose
    previous generation was this identity's."""
    leases_dir = str(record.leases_dir)
    items: list[Item] = []
    moved: dict[str, int] = {}
    for name in sessions.lease_names(leases_dir, layout.TASK_LEASE_PREFIX):
        where = os.path.join(leases_dir, name)
        newest = sessions.newest_generation(where)
        if newest <= base.leases.get(name, 0):
            continue
        moved[name] = newest
        try:
            gen = jsonfile.need_object(jsonfile.read(
                os.path.join(where, layout.generation_filename(newest)), 1 << 20), "a generation")
        except (OSError, ValueError):
            continue
        previous = gen.get("previous")
        holder = gen.get("holder")
        if gen.get("action") != "claim" or not isinstance(holder, str) or holder == identity \
                or not isinstance(previous, dict) or previous.get("holder") != identity:
            continue
        task_id = name[len(layout.TASK_LEASE_PREFIX):]
        items.append(Item("task", _one_line(
            f"your claim on task {task_id} expired and {holder} took it "
            f"({timeutil.age_of(str(gen.get('written_at') or ''))}): stop working on it, or "
            f"tell {holder} through the record what you did — `atlas task show {task_id}`")))
    return items, moved


def _tasks_done(record: Record, row: Row, since: str, identity: str) -> list[Item]:
    """Tasks finished by others since ``since`` that a task this identity wrote waits for.
    A finish is found by its file name alone (its id carries its time); the tasks that
    wait are read only when one was found."""
    folder = os.path.join(str(record.root), layout.PROJECTS, row.project, layout.TASKS)
    try:
        names = os.listdir(folder)
        after = timeutil.parse_time(since).timestamp() * 1000
    except (OSError, ValueError):
        return []
    finished: dict[str, str] = {}
    open_tasks = []
    for name in names:
        m = layout.TASK_FILE.fullmatch(name)
        if m is None:
            continue
        if m.group(2) is None:
            open_tasks.append(m.group(1))
        elif m.group(2) == "done" and layout.task_id_millis(m.group(3)) >= after:
            finished[m.group(1)] = name
    if not finished:
        return []
    ended = {n.split(".", 1)[0] for n in names if n.count(".") > 1}
    items = []
    for task_id in sorted(set(open_tasks) - ended):
        meta = sessions.head(os.path.join(folder, f"{task_id}.md"))
        waits = meta.get("after") if meta else None
        if not meta or meta.get("author") != identity or not isinstance(waits, list):
            continue
        for dep in waits:
            done = finished.get(dep) if isinstance(dep, str) else None
            entry = sessions.head(os.path.join(folder, done)) if done else None
            if entry is None or entry.get("author") == identity:
                continue
            items.append(Item("task", _one_line(
                f"task {dep}, which your task {task_id} ({meta.get('title')}) waits for, "
                f"was done by {entry.get('author')}: {entry.get('why') or ''} — "
                f"`atlas task ls`")))
    return items


def _status(record: Record, row: Row, base: Baseline,
            identity: str) -> tuple[list[Item], int]:
    folder = str(record.path(layout.PROJECTS, row.project, layout.STATUS))
    writes = list(sessions.versions_after(folder, "status", base.status, "status"))
    if not writes:
        return [], base.status
    latest = writes[-1].version or base.status
    theirs = [w for w in writes if w.author != identity]
    if not theirs:
        return [], latest
    w = theirs[-1]
    return [Item("status", _one_line(
        f"the status of {row.project} moved to v{w.version} (by {w.author}, "
        f"{timeutil.age_of(w.at)}): {w.summary} — `atlas status show`"),
        [f"status@v{w.version}"])], latest


def _fit(items: list[Item], limit: int) -> tuple[str | None, int]:
    if not items:
        return None, 0
    head = "atlas news (what others changed while you worked):"
    lines = [head]
    used = len(head)
    shown = 0
    for item in items:
        line = f"- {item.line}"
        rest = len(items) - shown - 1
        tail = len(f"\n… and {rest} more: `atlas feed`, `atlas lease ls`") if rest else 0
        if used + 1 + len(line) + tail > limit and shown:
            break
        lines.append(line[: max(40, limit - used - 1)])
        used += 1 + len(lines[-1])
        shown += 1
    if shown < len(items):
        lines.append(f"… and {len(items) - shown} more: `atlas feed`, `atlas lease ls`")
    return "\n".join(lines), shown


def _merge(base: Baseline, status: int, topics: dict[str, int],
           leases: dict[str, int]) -> Baseline:
    t = dict(base.topics)
    for name, version in topics.items():
        t[name] = max(t.get(name, 0), version)
    g = dict(base.leases)
    for name, generation in leases.items():
        g[name] = max(g.get(name, 0), generation)
    return Baseline(max(base.status, status), t, g)


# -- the hook's one call ------------------------------------------------------------------------


def _stamp(record: Record, identity: str) -> str:
    """The file whose time says when the news hook last looked (hidden, beside the row)."""
    return str(sessions.folder(record) / f".{identity}.news")


def _due(stamp: str, every_s: float) -> bool:
    # A stamp's time is never read through a symlink (a planted one would let another
    # file's age decide).
    mtime = fsio.file_mtime(stamp)
    return mtime is None or time.time() - mtime >= every_s


def _looked(record: Record, stamp: str) -> None:
    # Through fsio: a symlink planted at the stamp's name is replaced, never followed
    # (it would create or touch whatever it points at, a repository's index.lock say).
    with contextlib.suppress(OSError, AtlasError):
        fsio.touch(Path(stamp), within=record.opened)


def after_tool(record: Record, identity: str, *, edited: Sequence[str] = (),
               files: Sequence[str] = (), force: bool = False) -> News | None:
    """After a tool call of ``identity``'s session: note the repository paths it
    ``edited`` (``files``: the same edit's files, as absolute paths), hand over what the
    guard left, and, when ``news.every`` has passed since it last looked (or ``force``),
    the news. None without a session row (no `atlas begin`: nothing to measure from);
    DamagedFile for a row that cannot be read. The row is written only when something
    changed: looking and finding nothing touches one small file."""
    row = sessions.read(record, identity)
    if row is None:
        return None
    cfg = record.config.guard
    stamp = _stamp(record, identity)
    due = force or _due(stamp, cfg.news_every_s)
    pending = list(row.pending)
    items: list[Item] = []
    before = row.heard or row.saw
    baseline = before
    since = row.heard_at or row.since
    # Taken before anything is listed: an entry written while this looks is after it, so
    # the next look (which starts from here) still finds it.
    at = timeutil.format_time(timeutil.now())
    if due:
        _looked(record, stamp)
        try:
            read = stopsign.what_was_read(record, identity)
        except DamagedFile:
            read = {}
        status_items, status = _status(record, row, baseline, identity)
        topic_items, topics = _topics(record, row, read, baseline, identity)
        lease_items, leases = _leases(record, baseline, [*row.edited, *edited], identity)
        claim_items, claims = _task_claims(record, baseline, identity)
        items = (topic_items + _corrections(record, row, read, since, identity)
                 + lease_items + claim_items + _tasks_done(record, row, since, identity)
                 + status_items)
        baseline = _merge(baseline, status, topics, {**claims, **leases})
    news_text, shown = _fit(items, cfg.news_limit)
    moved = baseline.to_json() != before.to_json()
    edited_new = [p for p in edited if p not in row.edited]
    if not (items or moved or pending or edited_new or _overridden(row, files)):
        return News(identity, since, items, shown, [], None)

    def change(fresh: Row) -> bool:
        fresh.edited += [p for p in edited if p not in fresh.edited]
        for told in fresh.told:
            if told.kind in ("stopped", "refused") and told.after is None \
                    and set(told.paths) & set(files):
                told.after = "edited"
        fresh.pending = [p for p in fresh.pending if p not in pending]
        if items or moved:
            fresh.heard = _merge(fresh.heard or fresh.saw, baseline.status,
                                 dict(baseline.topics), dict(baseline.leases))
            fresh.heard_at = at
            for item in items[:shown]:
                fresh.told.append(Told(at, "news", [], item.line, refs=item.refs))
        return True

    sessions.update(record, identity, change)
    parts = [*_pending_text(pending, identity), *([news_text] if news_text else [])]
    return News(identity, since, items, shown, pending, "\n\n".join(parts) if parts else None)


def _overridden(row: Row, files: Sequence[str]) -> bool:
    return any(t.kind in ("stopped", "refused") and t.after is None
               and set(t.paths) & set(files) for t in row.told)
