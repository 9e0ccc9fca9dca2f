"""The decision log: what was recommended, what was chosen, and why the two stand as they do.

``relation`` (agreed, disagreed, timed-out) is given by the writer, never worked out from
the two choices: the same texts can be a recommendation that went ahead because the clock
ran out, and different texts can be a timing override rather than a disagreement about the
content. ``why`` is required and is its own field, because it is the part that ages best.

Each decision is an append-only entry (see entries.py) under
``projects/<project>/decisions/``. A decision may accept a proposal (``accepts``
NAME@vN): that is the only way a version written with ``--proposal`` becomes accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from atlas_files.facts import layout, timeutil
from atlas_files.facts.errors import BadInput, NotFound
from atlas_files.facts.names import check_name, parse_version_ref
from atlas_files.facts.text import clean_text
from atlas_files.protocol import corrections
from atlas_files.storage import entries
from atlas_files.storage.record import require_identity

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

RELATIONS = {
    "agreed": "the decider agreed with the recommendation",
    "disagreed": "the choice overrules the recommendation (say in --why whether on content "
    "or on timing)",
    "timed-out": "the clock ran out; the choice stands without agreement either way",
}
MAX_TOPIC = 200
MAX_CHOICE = 2000
MAX_WHY = 8000
MAX_LINKS = corrections.MAX_LINKS


class Decision(NamedTuple):
    id: str
    at: str
    project: str
    topic: str
    recommended: str
    chosen: str
    relation: str
    why: str
    author: str
    path: Path
    recommended_by: str | None = None
    links: tuple[str, ...] = ()
    accepts: str | None = None
    corrected_by: tuple[corrections.Correction, ...] = ()
    digest_ok: bool | None = True

    @property
    def time(self) -> datetime:
        return timeutil.parse_time(self.at)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "at": self.at, "topic": self.topic,
            "recommended": self.recommended, "chosen": self.chosen,
            "relation": self.relation, "why": self.why, "author": self.author,
            "recommended_by": self.recommended_by, "links": list(self.links),
            "accepts": self.accepts,
            "corrected_by": [c.mark_json() for c in self.corrected_by],
            "project": self.project, "path": str(self.path), "digest_ok": self.digest_ok,
        }


def check_relation(relation: str | None) -> str:
    value = (relation or "").strip()
    if value not in RELATIONS:
        shown = "no relation given" if not value else f"unknown relation {value[:40]!r}"
        raise BadInput(
            f"{shown}: --relation is one of agreed, disagreed, timed-out, stated by you "
            "(it is never inferred from the two choices)",
            hint="; ".join(f"{k}: {v}" for k, v in RELATIONS.items()),
        )
    return value


def _check_accepts(record: Record, project: str, text: str) -> str:
    ref = parse_version_ref(text.strip())
    if ref is None or ref.is_status:
        raise BadInput(
            f"--accepts {text.strip()[:60]!r}: expected a topic version, NAME@vN",
            hint="`atlas ls` shows proposals as [proposal]",
        )
    target = corrections.resolve_ref(record, project, str(ref), "--accepts")
    doc = record.artifact_stream(ref.name, project).read(ref.version)
    if not doc.proposal:
        raise BadInput(
            f"--accepts {target}: that version is not a proposal, so there is nothing to "
            "accept",
            hint="write proposals with `atlas put NAME --proposal`; link other versions "
            "with --link",
        )
    retraction = corrections.retraction_of(record, project, target)
    if retraction is not None:
        raise BadInput(
            f"--accepts {target}: it was retracted by {retraction.author} ({retraction.id}): "
            f"{retraction.text}",
            hint="accept a newer version of the proposal instead",
        )
    # As `retract` refuses a second retraction: the look and the write are two steps, so
    # two deciders at the same moment can both land, and both are listed.
    earlier = corrections.accepted_by(record, project, target)
    if earlier is not None:
        raise BadInput(
            f"--accepts {target}: it was accepted already, by decision {earlier}",
            hint="a proposal is accepted once; to change what was chosen, record a new "
            "decision without --accepts (or correct that one: `atlas correct ID`)",
        )
    return target


def decide(
    record: Record,
    *,
    topic: str,
    recommended: str,
    chosen: str,
    relation: str,
    why: str,
    author: str | None,
    project: str | None = None,
    recommended_by: str | None = None,
    links: Sequence[str] = (),
    accepts: str | None = None,
) -> Decision:
    """Append a decision to the log; every input is checked before anything is written."""
    author = require_identity(author)
    project = record.project(project)
    fields: dict[str, Any] = {
        "author": author,
        "project": project,
        "topic": clean_text(topic, "the topic (--topic)", one_line=True, limit=MAX_TOPIC,
                            elsewhere="--why"),
        "recommended": clean_text(recommended, "what was recommended (--recommended)",
                                  one_line=False, limit=MAX_CHOICE),
        "recommended_by": (check_name(recommended_by.strip(), "identity (--recommended-by)")
                           if recommended_by is not None else None),
        "chosen": clean_text(chosen, "what was chosen (--chosen)", one_line=False,
                             limit=MAX_CHOICE),
        "relation": check_relation(relation),
        "why": clean_text(why, "the why (--why)", one_line=False, limit=MAX_WHY),
    }
    fields["links"] = corrections.resolve_refs(record, project, links, "--link") or None
    fields["accepts"] = _check_accepts(record, project, accepts) if accepts else None
    entry = entries.publish(corrections.decisions_dir(record, project), "decision", fields,
                            within=record.opened)
    return _from_entry(entry, project, ())


def _from_entry(
    entry: entries.Entry, project: str, fixes: Sequence[corrections.Correction]
) -> Decision:
    m = entry.meta
    links = m.get("links")
    return Decision(
        id=entry.id, at=str(m.get("at", "")), project=str(m.get("project") or project),
        topic=str(m.get("topic", "")), recommended=str(m.get("recommended", "")),
        chosen=str(m.get("chosen", "")), relation=str(m.get("relation", "")),
        why=str(m.get("why", "")), author=str(m.get("author", "")), path=entry.path,
        recommended_by=m.get("recommended_by") if isinstance(m.get("recommended_by"), str)
        else None,
        # Only text is a link; anything else (a list nested by a bad edit) is left for
        # `atlas check` to report, never printed.
        links=tuple(x for x in links if isinstance(x, str)) if isinstance(links, list) else (),
        accepts=m.get("accepts") if isinstance(m.get("accepts"), str) else None,
        corrected_by=tuple(fixes), digest_ok=entry.digest_ok,
    )


def parse_since(value: str | datetime) -> datetime:
    """A time (RFC 3339, or a date) or a duration meaning that long ago (``2h``, ``7d``)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = str(value).strip()
    try:
        return timeutil.parse_time(text)
    except ValueError:
        pass
    try:
        seconds = timeutil.parse_duration(text)
    except (BadInput, OverflowError):
        raise BadInput(
            f"--since {text[:60]!r} is neither a time nor a duration",
            hint="write a time like 2026-11-29T11:00:00Z or 2026-11-29, or an age like 2h "
            "or 7d",
        ) from None
    try:
        return timeutil.now() - timedelta(seconds=seconds)
    except OverflowError:
        raise BadInput(
            f"--since {text[:60]!r} reaches back before the year 1",
            hint="leave --since out to see every decision, or give a shorter age",
        ) from None


def list_decisions(
    record: Record,
    project: str | None = None,
    topic: str | None = None,
    relation: str | None = None,
    since: str | datetime | None = None,
    on_damaged: Callable[[Path, str], None] | None = None,
) -> list[Decision]:
    """The project's decisions in time order, each with the corrections made to it.

    A file that cannot be read as a decision is passed to ``on_damaged`` (path, message)
    and left out; one whose digest no longer matches is kept, with ``digest_ok`` False.
    """
    project = record.project(project)
    if relation is not None:
        relation = check_relation(relation)
    after = parse_since(since) if since is not None else None
    wanted_topic = topic.strip() if topic is not None else None
    fixes, _ = corrections._index(record, project)
    out = []
    for entry in corrections.read_entries(corrections.decisions_dir(record, project),
                                          on_damaged):
        if entry.kind != "decision":
            if on_damaged is not None:
                on_damaged(entry.path, f"{entry.path}: a {entry.kind} among the decisions")
            continue
        d = _from_entry(entry, project, fixes.get(entry.id, ()))
        if wanted_topic is not None and d.topic != wanted_topic:
            continue
        if relation is not None and d.relation != relation:
            continue
        if after is not None:
            try:
                if d.time < after:
                    continue
            except ValueError:
                pass  # an unreadable time is shown rather than hidden; `atlas check` flags it
        out.append(d)
    return out  # in file-name order, which is id order, which is time order


def get_decision(record: Record, decision_id: str, project: str | None = None) -> Decision:
    """One decision by id, with its corrections."""
    project = record.project(project)
    target = corrections.resolve_ref(record, project, decision_id, "decision")
    if not target.startswith("dec-"):
        raise NotFound(f"{target} is not a decision id")
    path = corrections.decisions_dir(record, project) / layout.entry_filename(target)
    found = corrections.read_one(path)
    return _from_entry(found, project, corrections.corrections_of(record, project, target))
