"""The edit guard: what an agent's next edit would run into, asked before every edit.

A harness's pre-tool hook (`atlas guard --hook H`, see ``hooks.tools``) asks this for
each file an edit would change; `atlas guard PATH...` asks it by hand. For each file:

* **A file of the record itself** (a published version, the status stream, a decision
  or correction entry, a lease generation, a live row): ``refused``, with the command
  that does what the edit meant (`atlas put TOPIC -f FILE --expect N`, ...).
* **Under an unexpired path lease of another identity**: ``stopped``, for a person to
  decide, with the holder, the why, the time left, the advisory sentence and what to do
  instead. The holder's own edits pass.
* **Committed to by another author on any ref within ``guard.recent``**: ``told``: the
  edit goes on, and the agent reads who, how long ago, on which branch, with what
  subject. A record that syncs fetches first, at most once per ``fetch_every``.
* Otherwise nothing, and fast: the lease index (``pathleases``) and the refs' file times
  (``gitrefs``) answer the common case without reading every lease or running git.

The guard never stops an edit for a reason the agent cannot act on, and never because it
could not look: whatever it could not check is a note, and the edit goes on. What it
cannot see is said wherever it speaks (``LIMITS``).
"""

from __future__ import annotations

import binascii
import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from atlas_files.facts import environment, layout, timeutil
from atlas_files.facts.errors import AtlasError, NotFound
from atlas_files.facts.names import is_name
from atlas_files.facts.text import field, quoted
from atlas_files.protocol import gitrefs, pathleases
from atlas_files.storage import fsio, volcase, worktree
from atlas_files.storage.documents import Stream
from atlas_files.storage.record import Record, locate, named_in_git

ALLOW, TOLD, STOPPED, REFUSED = "allow", "told", "stopped", "refused"
_RANK = {ALLOW: 0, TOLD: 1, STOPPED: 2, REFUSED: 3}
# A ref file changed this long before the window began may still hold a commit inside it
# (a clock that runs behind the committer's): git is asked.
REF_SLACK_S = 300.0
FETCH_TIMEOUT_S = 5.0
COMMITS_NAMED = 3  # commits named per file; the rest are counted
LIMITS = ("The guard sees the edits of the harness's file tools only: a shell command that "
          "writes a file is not seen, a file no lease covers is not protected, and a "
          "session that took no lease and has not committed is invisible. Leases are "
          "advisory: the guard only puts an edit to a person.")


class Finding:
    """What the guard found about one file. ``kind``: refused, stopped or told; ``path``:
    the file as a person would name it (relative to its repository, or to the record);
    ``what``: the sentences said to the agent; ``by``: the holder or the author."""

    __slots__ = ("kind", "path", "what", "by", "resource", "commit", "command", "file")

    def __init__(self, kind: str, path: str, what: str, by: str | None = None,
                 resource: str | None = None, commit: str | None = None,
                 command: str | None = None) -> None:
        self.kind = kind
        self.path = path
        self.file = path  # the absolute path, once check_edit knows it
        # One line of atlas's, whatever a lease's why, a commit's subject or a file's name
        # held: every line break in it escaped, so none starts a line of its own.
        self.what = field(what)
        self.by = by
        self.resource = resource
        self.commit = commit
        self.command = command

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "what": self.what, "by": self.by,
                "resource": self.resource, "commit": self.commit, "command": self.command}


class Verdict:
    """The guard's answer for one edit: the most serious finding decides (refused over
    stopped over told over allow)."""

    __slots__ = ("findings", "notes", "record", "identity", "checked")

    def __init__(self, findings: list[Finding], notes: list[str], record: str | None,
                 identity: str | None, checked: int) -> None:
        self.findings = findings
        self.notes = notes
        self.record = record
        self.identity = identity
        self.checked = checked

    @property
    def decision(self) -> str:
        return max((f.kind for f in self.findings), key=_RANK.__getitem__, default=ALLOW)

    def of(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def text(self, *kinds: str) -> str:
        """What the agent reads: the findings of ``kinds`` (default all), most serious
        first, then the limits."""
        chosen = [f for f in self.findings if not kinds or f.kind in kinds]
        chosen.sort(key=lambda f: -_RANK[f.kind])
        return "\n\n".join([*(f.what for f in chosen), LIMITS])

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "record": self.record, "identity": self.identity,
                "paths_checked": self.checked,
                "findings": [f.to_json() for f in self.findings],
                "notes": list(self.notes), "limits": LIMITS}


# -- where things are ---------------------------------------------------------------------


def repository_root(path: str, record: str | None = None, fold: bool = False) -> str | None:
    """The work tree holding ``path`` (the nearest folder upward with a ``.git``), None
    outside one. Asked of the file's folder, so a file of another repository than the
    session's counts against that repository.

    A ``.git`` below ``record`` (the record's root) is never taken: anyone who writes the
    record can plant a repository in one of its folders, whose config names programs git
    would run. A file of the record belongs to the record's own repository (the one its
    root lies in), or to none. ``fold``: the record lies on a volume that folds case."""
    folder = os.path.dirname(path)
    if record is not None and inside(folder, record, fold) is not None:
        folder = record
    return worktree.repository_root(folder)


def inside(path: str, root: str, fold: bool = False) -> str | None:
    """``path`` relative to ``root`` with / between folders, None if it lies outside.
    ``fold``: on a volume that folds case, where ``/Shared/Record`` is ``/shared/record``."""
    top = root.rstrip(os.sep)
    head = path[:len(top)]
    if (volcase.fold(head) != volcase.fold(top)) if fold else head != top:
        return None
    if len(path) == len(top):
        return ""
    if path[len(top)] != os.sep:
        return None
    return path[len(top) + 1:].replace(os.sep, "/")


def find_record(explicit: str | None, cwd: str | None, files: Sequence[str],
                 env: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """(the record's folder, notes): ``explicit`` (--record or ATLAS_RECORD), else the
    nearest atlas.yaml at or above the session's folder, else the one `git config
    atlas.record` of its repository names (as the commit guard finds it)."""
    try:
        return str(locate(environment.record(explicit, env), {},
                          starts=[cwd] if cwd else [])), []
    except NotFound as exc:
        if environment.record(explicit, env):
            return None, [f"{exc.message}: the guard checked nothing"]
    repo = repository_root(os.path.join(cwd or os.getcwd(), "."))
    if repo is None and files:
        repo = repository_root(files[0])
    if repo is None:
        return None, []
    from atlas_files.storage import gitcmd  # noqa: PLC0415 - only where no record was found

    try:
        configured = gitcmd.config(Path(repo), "atlas.").get("atlas.record")
    except AtlasError:
        return None, []
    if not configured:
        return None, []
    try:
        return str(named_in_git(repo, configured)), []
    except NotFound:
        return None, [f"`git config atlas.record` names {configured}, which holds no "
                      "record: the guard checked nothing"]


# -- the record's own files -----------------------------------------------------------------


def _latest(folder: str, name: str) -> int:
    try:
        return Stream(Path(folder), name, name).latest()
    except (OSError, AtlasError):
        return 0


def _who(identity: str | None, project: str | None) -> str:
    return "atlas " + (f"--as {identity} " if identity else "") + (
        f"-p {project} " if project else "")


def record_file(root: str, rel: str, identity: str | None,
                default_project: str | None) -> Finding | None:
    """A refusal for an edit of ``rel``, a file of the record at ``root``, if it is one
    that only atlas writes; None for the rest (atlas.yaml, the README, a draft, a plain
    note kept in the record)."""
    found = layout.record_file(rel)
    if found is None:
        return None
    folder = os.path.join(root, *rel.split("/")[:-1])
    cmd: str | None = None
    if found.kind == layout.VERSION and found.folder == layout.STATUS:
        project = found.project
        p = None if project == default_project else project
        n = _latest(folder, "status")
        cmd = f"{_who(identity, p)}status write -f FILE --expect {n}"
        what = (f"{rel} is a version of the status of {project}. Published versions are "
                "immutable: nothing edits one in place. Write the whole new status to a "
                f"file outside the record and publish it as the next version: `{cmd}` "
                f"(or `{_who(identity, p)}end --status TEXT`). Exit 3 means someone wrote "
                "since you read: read it, merge, write again.")
    elif found.kind == layout.VERSION:
        project, topic = found.project, found.name
        p = None if project == default_project else project
        n = _latest(folder, topic)
        cmd = f"{_who(identity, p)}put {topic} -f FILE --expect {n}"
        what = (f"{rel} is a version of the topic {topic}. Published versions are "
                "immutable: nothing edits one in place, and a new version is published by "
                "atlas, never written by hand here. Write the whole new text to a file "
                f"outside the record and publish it as the next version: `{cmd}` (add "
                "`--summary S`; `--proposal` for a proposal). Exit 3 means someone wrote "
                "since you read: read it, merge, write again.")
    elif found.kind == layout.ENTRY and found.folder in (layout.DECISIONS, layout.CORRECTIONS):
        entry = found.name
        p = None if found.project == default_project else found.project
        cmd = f"{_who(identity, p)}correct {entry} --what TEXT"
        kind = "decision" if found.folder == layout.DECISIONS else "correction"
        what = (f"{rel} is a {kind} entry. Entries are immutable: nothing is edited away. "
                f"Say what was wrong in a new entry: `{cmd}`"
                + (", or record the new choice with `atlas decide --topic T --recommended R "
                   "--chosen C --relation agreed|disagreed|timed-out --why W`."
                   if kind == "decision" else "."))
    elif found.kind == layout.GENERATION:
        cmd = f"{_who(identity, None)}lease renew|release|break {found.name}"
        what = (f"{rel} is a generation of the lease {found.name}. Generations are immutable; "
                "a lease changes only by the exclusive creation of the next one, which is "
                f"what makes a claim safe. Use `{cmd}` (or `atlas lease claim`).")
    elif found.kind == layout.ROW:
        by = {layout.RECEIPTS: "the reads themselves (`atlas get`, `atlas feed --mark-read`)",
              layout.SESSIONS: "`atlas begin` and `atlas end`",
              layout.TELEMETRY: "the prober (`atlas telemetry probe`)"}[found.folder]
        what = (f"{rel} is a live row that atlas replaces as a whole, written only by {by}. "
                "Edit nothing here by hand.")
    else:
        return None
    return Finding(REFUSED, rel, what, command=cmd)


# -- leases ---------------------------------------------------------------------------------


def _lease_findings(record: Record, identity: str | None, rels: Sequence[str],
                    notes: list[str], fold: bool) -> list[Finding]:
    leases_dir = str(record.leases_dir)
    now = timeutil.format_time(timeutil.now())
    try:
        items = pathleases.read(leases_dir)
    except FileNotFoundError:
        return []
    except (OSError, AtlasError) as exc:
        notes.append(f"the leases could not be listed ({exc}): no path lease was checked")
        return []
    if not pathleases.may_cover(items, identity, rels, now, fold=fold):
        return []
    from atlas_files.protocol.leases import view  # noqa: PLC0415 - only when a lease may cover
    from atlas_files.protocol.leases.guard import conflicts  # noqa: PLC0415 - idem

    problems, found = conflicts(record, identity, rels, fold=fold)
    notes += [f"{p} (not obeyed)" for p in problems]
    out = []
    for c in found:
        lease = c.lease
        left = view.left_text(lease)
        holder = field(lease.holder or "someone", 80)
        glob = "" if c.glob == c.path else f" (leased as {c.glob})"
        who = identity or "you (no identity is set: ATLAS_AS or --as)"
        what = (f"{c.path} is under {holder}'s path lease {lease.resource}{glob}, for {left} "
                f"more (until {lease.expires_at}): {quoted(lease.why, 500)}. You are {who}. "
                "The lease is advisory: nothing enforces it, and this stop only puts the edit "
                f"to a person. Instead of editing now: wait until it ends (`atlas lease show "
                f"{lease.resource}`); write to {holder} through the record (a topic or the "
                f"status, which {holder} reads in `atlas begin` and `atlas feed`); or record "
                f"the work as a proposal (`atlas put TOPIC -f FILE --proposal`) or as a "
                f"decision: `atlas decide --topic \"{c.path}\" --recommended \"...\" --chosen "
                f"\"wait for {holder}\" --relation disagreed --why \"timing: {holder} holds "
                f"{c.path} until {lease.expires_at}\"`.")
        out.append(Finding(STOPPED, c.path, what, by=lease.holder or "someone",
                           resource=lease.resource))
    return out


# -- recent commits -------------------------------------------------------------------------


def _me(root: str) -> tuple[str, str]:
    """(name, email) this clone commits as, lowercased; ("", "") if git cannot say."""
    from atlas_files.storage import gitcmd  # noqa: PLC0415 - only when a recent commit may matter

    try:
        ident = gitcmd.Git(root, read_only=True).run("var", "GIT_AUTHOR_IDENT").text
    except AtlasError:
        return "", ""
    name, _, rest = ident.partition(" <")
    return name.strip().lower(), rest.partition(">")[0].strip().lower()


def _commit_findings(root: str, rels: Sequence[str], identity: str | None,
                     recent_s: float, notes: list[str], fold: bool = False) -> list[Finding]:
    """Commits by others within ``recent_s`` to one of ``rels``. ``fold``: the work tree
    folds case, so ``SRC/a.py`` from the tool is git's ``src/a.py``, named as the tool
    spelled it."""
    cutoff = time.time() - recent_s
    moved = gitrefs.last_moved(root)
    if moved is not None and moved < cutoff - REF_SLACK_S:
        return []  # no ref moved since before the window: no commit lies in it
    from atlas_files.protocol.activity import recent  # noqa: PLC0415 - git, only when refs moved

    try:
        commits, _ = recent(Path(root), datetime.fromtimestamp(cutoff, UTC), paths=rels,
                            icase=fold)
    except AtlasError as exc:
        notes.append(f"recent commits could not be read ({exc.message})")
        return []
    if not commits:
        return []
    name, email = _me(root)
    mine = {n for n in (name, (identity or "").lower()) if n}
    now = time.time()
    by_path: dict[str, list[Any]] = {}
    asked = {volcase.fold(r) if fold else r: r for r in rels}
    for c in commits:  # newest first
        if c.author.lower() in mine or (email and c.email.lower() == email):
            continue
        for f in c.files:
            rel = asked.get(volcase.fold(f) if fold else f)
            if rel is not None:
                by_path.setdefault(rel, []).append(c)
    out = []
    for path, found in by_path.items():
        lines = []
        for c in found[:COMMITS_NAMED]:
            age = timeutil.format_duration(max(0.0, now - c.timestamp))
            lines.append(f"{c.author} <{c.email}> committed to {path} {age} ago on "
                         f"{c.ref}: {quoted(c.subject, 200)} ({c.sha[:10]})")
        more = (f" And {len(found) - COMMITS_NAMED} more commit(s) by others within "
                f"{timeutil.format_duration(recent_s)}." if len(found) > COMMITS_NAMED else "")
        newest = found[0]
        what = ("; ".join(lines) + "." + more + " Another session may be working in this "
                f"file right now. Read what it did before you edit (`git show "
                f"{newest.sha[:10]} -- {path}`, `atlas activity --paths {path}`); if the "
                "timing is wrong, record the work instead of starting it: `atlas decide "
                "--topic T --recommended R --chosen \"wait\" --relation disagreed --why "
                "\"timing: ...\"`. This edit goes ahead.")
        out.append(Finding(TOLD, path, what, by=newest.author, commit=newest.sha))
    return out


def _fetch_first(record: Record, roots: Sequence[str], notes: list[str]) -> None:
    """For a record that syncs: a fetch of each code repository's remote of the same name,
    at most once per ``fetch_every``, so that commits others pushed to any branch are
    seen. (The record's own refresh is the front end's, as for every read.)"""
    if record.config.sync is None:
        return
    from atlas_files import sync  # noqa: PLC0415 - only a record that syncs
    from atlas_files.storage import gitcmd, usercache  # noqa: PLC0415 - only a record that syncs

    try:
        # The settings a person on this clone accepted, never the record's own word: the
        # shared remote writes atlas.yaml.
        cfg = sync.settings(record)
    except AtlasError:
        return
    if cfg is None:
        return

    stamps = usercache.folder("fetched")
    for root in roots:
        tag = binascii.crc32(root.encode("utf-8", "surrogateescape"))
        stamp = os.path.join(stamps, f"{tag:08x}") if stamps else None
        fetched_at = fsio.file_mtime(stamp) if stamp else None
        if fetched_at is not None and time.time() - fetched_at < cfg.fetch_every_s:
            continue
        if stamp:
            with contextlib.suppress(OSError, AtlasError):
                os.makedirs(os.path.dirname(stamp), mode=0o700, exist_ok=True)
                fsio.touch(Path(stamp))
        try:
            git = gitcmd.Git(root)
            # git takes a name it does not know for a path or a URL: fetch only a remote
            # this repository's own config defines.
            if git.run("config", "--get", f"remote.{cfg.remote}.url", ok=(0, 1)).code:
                continue
            git.run("fetch", "--quiet", "--no-tags", cfg.remote, timeout=FETCH_TIMEOUT_S)
        except AtlasError as exc:
            notes.append(f"`git fetch {cfg.remote}` in {root} failed or took over "
                         f"{FETCH_TIMEOUT_S:.0f} s ({exc.message}): commits pushed "
                         "since the last fetch are not seen")


def _configured_identity(repo: str) -> str | None:
    """`git config atlas.as` of the repository (as the commit guard reads it)."""
    from atlas_files.storage import gitcmd  # noqa: PLC0415 - only without --as or ATLAS_AS

    try:
        who = gitcmd.config(Path(repo), "atlas.").get("atlas.as") or None
    except AtlasError:
        return None
    return who if who and is_name(who) else None


# -- the guard --------------------------------------------------------------------------------


def check_edit(files: Sequence[str], *, identity: str | None = None,
               record: str | None = None, cwd: str | None = None,
               env: Mapping[str, str] | None = None) -> Verdict:
    """The guard's verdict on an edit that would change ``files`` (absolute paths, or
    relative to ``cwd``). ``identity`` and ``record`` are what the caller was given
    (--as, --record); ``$ATLAS_AS``/``$ATLAS_RECORD``, then the repository's git config,
    fill in the rest. A record that syncs is refreshed once the identity is known and
    before it is read, as every read of the API is (at most once per ``fetch_every``).
    Never raises for what it finds: what it could not check is a note."""
    environ = os.environ if env is None else env
    base = cwd or os.getcwd()
    real = [os.path.realpath(os.path.join(base, f)) for f in files]
    notes: list[str] = []
    root, found_notes = find_record(record, cwd, real, environ)
    notes += found_notes
    who = environment.identity(identity, environ)
    if root is None:
        return Verdict([], notes, None, who, len(real))
    if who is not None and not is_name(who):
        return Verdict([], [*notes, f"--as {who!r} is not an identity name: the guard "
                            "checked nothing"], root, None, len(real))
    rec = Record(root)
    try:
        config = rec.config
    except AtlasError as exc:
        return Verdict([], [*notes, f"{exc.message}: the guard checked nothing"], root, who,
                       len(real))
    record_real = os.path.realpath(root)
    # On a volume that folds case, PROJECTS/main/status/status.v0001.md is the record's
    # own file (atlas's names are all lower case).
    folds = volcase.folds_case(record_real, layout.CONFIG_NAME)
    findings: list[Finding] = []
    by_repo: dict[str, list[str]] = {}
    for path in real:
        in_record = inside(path, record_real, folds)
        if in_record is not None:
            refusal = record_file(record_real, volcase.fold(in_record) if folds else in_record,
                                  who, config.default_project)
            if refusal is not None:
                refusal.file = path
                findings.append(refusal)
                continue
        repo = repository_root(path, record_real, folds)
        rel = inside(path, repo, folds) if repo else None
        if repo and rel:
            by_repo.setdefault(repo, []).append(rel)
    if by_repo:
        if who is None:
            who = _configured_identity(next(iter(by_repo)))
        if config.sync is not None:
            from atlas_files import sync  # noqa: PLC0415 - only a record that syncs

            sync.refresh(rec, who)
        _fetch_first(rec, list(by_repo), notes)
        for repo, rels in by_repo.items():
            fold = volcase.folds_case(repo, ".git")
            found = (_lease_findings(rec, who, rels, notes, fold)
                     + _commit_findings(repo, rels, who, config.guard.recent_s, notes, fold))
            for f in found:
                f.file = os.path.join(repo, *f.path.split("/"))
            findings += found
    return Verdict(findings, notes, root, who, len(real))


def remember(verdict: Verdict, *, pending: bool = False) -> bool:
    """Keep the verdict's findings in the session row of its identity (the next `atlas
    end` and `atlas begin` say them), and with ``pending`` the text of what it told, for
    the next post-tool hook to hand over (a harness whose pre-tool hook cannot). False
    when there is no row to keep them in (no identity, no `atlas begin`)."""
    if not verdict.findings or not verdict.identity or verdict.record is None:
        return False
    from atlas_files.protocol import sessions  # noqa: PLC0415 - only when something was found

    at = timeutil.format_time(timeutil.now())
    told_text = verdict.text(TOLD) if verdict.of(TOLD) else None

    def change(row: sessions.Row) -> bool:
        for f in verdict.findings:
            row.told.append(sessions.Told(at, f.kind, [f.file], _first(f.what), by=f.by))
        if pending and told_text and told_text not in row.pending:
            row.pending.append(told_text)
        return True

    try:
        return sessions.update(Record(verdict.record), verdict.identity, change) is not None
    except (AtlasError, OSError):
        return False


def _first(text: str) -> str:
    """The first sentence of ``text``, at most 240 characters: what a later briefing
    repeats."""
    end = text.find(". ")
    first = text if end == -1 else text[:end + 1]
    return first if len(first) <= 240 else first[:239] + "…"
