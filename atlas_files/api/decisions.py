"""The decision log and bad writes written down: decide, decisions, correct, retract."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from atlas_files.api import Worker, reads, writes
from atlas_files.protocol import corrections
from atlas_files.protocol import decisions as decisionsmod
from atlas_files.protocol.corrections import Correction
from atlas_files.protocol.decisions import Decision


@dataclass(frozen=True)
class Decided:
    """A decision just appended, with what the writer should know (a retracted link)."""

    decision: Decision
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return self.decision.to_json()


@dataclass(frozen=True)
class DecisionLog:
    project: str
    decisions: tuple[Decision, ...]
    unreadable: tuple[str, ...] = ()
    filtered: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"project": self.project, "decisions": [d.to_json() for d in self.decisions],
                "unreadable": list(self.unreadable)}


@dataclass(frozen=True)
class Corrected:
    """A correction or retraction just written. For a retraction, ``retractions`` lists
    every retraction of the same version (two written at once both land)."""

    entry: Correction
    retractions: tuple[Correction, ...] | None = None

    @property
    def warnings(self) -> tuple[str, ...]:
        if not self.retractions:
            return ()
        others = [r for r in self.retractions if r.id != self.entry.id]
        if not others:
            return ()
        who = ", ".join(f"{r.author} ({r.id})" for r in others)
        return (f"{self.entry.ref} was retracted at the same time by {who}: every "
                f"retraction is kept and listed; the earliest, {self.retractions[0].id}, is "
                "shown as the retraction",)

    def to_json(self) -> dict[str, Any]:
        out = self.entry.to_json()
        if self.retractions is not None:
            out["retractions"] = [r.mark_json() for r in self.retractions]
        return out


@writes("decide")
def decide(worker: Worker, *, topic: str, recommended: str, chosen: str, relation: str,
           why: str, recommended_by: str | None = None, links: Sequence[str] = (),
           accepts: str | None = None) -> Decided:
    """Append a decision: recommended, chosen, the relation (given, never inferred), why."""
    d = decisionsmod.decide(
        worker.record, topic=topic, recommended=recommended, chosen=chosen,
        relation=relation, why=why, author=worker.identity, project=worker.project,
        recommended_by=recommended_by, links=links, accepts=accepts,
    )
    retracted = corrections.retracted_refs(worker.record, d.project)
    warnings = tuple(
        f"this decision links {link}, which is retracted: it builds on a retracted "
        "conclusion (`atlas get` shows why)" for link in d.links if link in retracted)
    return Decided(d, warnings)


@reads
def decisions(worker: Worker, *, topic: str | None = None, relation: str | None = None,
              since: str | None = None) -> DecisionLog:
    """The project's decision log in time order; an unreadable entry is left out and named."""
    project = worker.project_name
    damaged: list[str] = []
    rows = decisionsmod.list_decisions(
        worker.record, project, topic=topic, relation=relation, since=since,
        on_damaged=lambda path, message: damaged.append(message),
    )
    filtered = topic is not None or relation is not None or since is not None
    return DecisionLog(project, tuple(rows), tuple(damaged), filtered)


@writes("correct", "ref")
def correct(worker: Worker, ref: str, what: str) -> Corrected:
    """Write down a bad write: ``ref`` was wrong; it is marked wherever it is shown."""
    return Corrected(corrections.correct(worker.record, ref, what=what, author=worker.identity,
                                         project=worker.project))


@writes("retract", "ref")
def retract(worker: Worker, ref: str, why: str) -> Corrected:
    """Retract ``NAME@vN``: its conclusion no longer holds."""
    c = corrections.retract(worker.record, ref, why=why, author=worker.identity,
                            project=worker.project)
    return Corrected(c, tuple(corrections.retractions_of(worker.record, c.project, c.ref)))
