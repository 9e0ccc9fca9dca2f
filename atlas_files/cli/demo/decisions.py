"""Demo scene: the decision log's three relations, a correction of one's own bad write, and
a proposal that becomes accepted only through a decision."""

from __future__ import annotations

from collections.abc import Callable

from atlas_files.cli import demo
from atlas_files.protocol import artifacts, corrections, decisions, status
from atlas_files.storage.record import Record


def _latest_ref(record: Record, name: str, project: str) -> list[str]:
    latest = record.artifact_stream(name, project).latest()
    return [f"{name}@v{latest}"] if latest else []


def scene(record: Record, say: Callable[[str], None]) -> None:
    say("\n== decisions: recommended, chosen, and why, as three separate facts ==")
    d = decisions.decide(
        record, project="ml", author="carol", recommended_by="reviewer",
        topic="where machine state lives",
        recommended="one live row per machine, overwritten, written by an outside prober",
        chosen="one live row per machine, overwritten, written by an outside prober",
        relation="agreed",
        why="A prober writing every five minutes would put about 288 versions a day into the "
        "artifact channel and drown everyone's feed. An outside prober can also write "
        "'unreachable' as a fact, where a crashed machine writes nothing at all.",
    )
    say(f"carol decided {d.topic!r}: {d.relation} ({d.id})")

    d = decisions.decide(
        record, project="web", author="bob", recommended_by="alice",
        topic="measurement instruments",
        recommended="build the instruments in metrics.py now",
        chosen="record the work and freeze it until the other session's change to "
        "metrics.py has landed",
        relation="disagreed",
        why="A timing override, not a disagreement about the content: the recommendation is "
        "right, but the repository's history showed commits to metrics.py from eleven "
        "minutes earlier, by another session still working in that file.",
        links=_latest_ref(record, "plan", "web"),
    )
    say(f"bob decided {d.topic!r}: {d.relation}, the why says it was the timing ({d.id})")

    d = decisions.decide(
        record, project="ml", author="carol", recommended_by="carol",
        topic="seeds for run 7",
        recommended="report run 7 from a single seed",
        chosen="report run 7 from a single seed",
        relation="timed-out",
        why="No reviewer answered before the 18:00 report cut-off, so the single-seed number "
        "went out as recommended: by default, not by agreement. Rerun with three seeds when "
        "the GPUs are free.",
        links=_latest_ref(record, "eval-results", "ml"),
    )
    say(f"carol decided {d.topic!r}: same two texts as an agreement, but {d.relation} "
        f"({d.id})")

    code, _, err = demo.atlas_cli(record, "bob", "-p", "web", "decide", "--topic",
                                  "release date", "--recommended", "Friday", "--chosen",
                                  "Monday", "--why", "the holiday")
    say(f"bob: atlas decide without --relation -> exit {code}, nothing written")
    for line in err.splitlines()[:1]:
        say(f"    {line}")

    say("\n== corrections: write down your own bad writes ==")
    current = status.show(record, reader="dana", project="ml")
    if current is None:
        current, _ = status.write(record, "Stages E and F are open.\n", author="dana",
                                  project="ml", summary="stages E and F open")
    else:
        current, _ = status.write(
            record, current.body + "Stages E and F are open.\n", author="dana", project="ml",
            expect=current.version, summary="stages E and F open",
        )
    say(f"dana wrote the ml status v{current.version}: 'stages E and F are open'")
    fix = corrections.correct(
        record, f"status@v{current.version}", author="dana", project="ml",
        what="My error: I wrote that stages E and F were open, having read a broken README. "
        "Both closed last week; v" + str(current.version + 1) + " says so.",
    )
    say(f"{fix.author} corrected status@v{current.version} ({fix.id}); the version itself "
        "is untouched")
    fixed, _ = status.write(record,
        current.body.replace("Stages E and F are open.", "Stages E and F are closed."),
        author="dana", project="ml", expect=current.version, summary="stages E and F closed",
    )
    marks = corrections.marks_json(record, "ml", "status", "status", current.version)
    for c in marks["corrected_by"]:
        say(f"`atlas status show --version {current.version}` now says: CORRECTED by "
            f"{c['author']}: {c['what']}")
    say(f"dana wrote the ml status v{fixed.version} with the fix")

    say("\n== the gate between proposed and accepted ==")
    proposal = artifacts.put(record,
        "claim-store-access",
        "# Proposal: read the verified-claim store directly\n\n"
        "Working from someone else's summary costs three things: verification breaks at the "
        "summary, questions get written blind, and connections between claims are never "
        "found. Proposed: three read-only tools against the claim store.\n",
        author="chat-session", project="ml", proposal=True,
        summary="proposal: read-only tools against the claim store",
    )
    state = corrections.proposal_state(record, "ml", proposal.name, proposal.version, True)
    say(f"chat-session wrote {proposal.name} v{proposal.version} as a proposal: {state}")
    ref = f"{proposal.name}@v{proposal.version}"
    d = decisions.decide(
        record, project="ml", author="editor-session", recommended_by="chat-session",
        topic="claim store access", recommended="three read-only tools on the claim store",
        chosen="three read-only tools on the claim store, on the data server",
        relation="agreed", accepts=ref,
        why="The cost of summaries is real and the tools are read-only. They go on the data "
        "server, not the control plane; duplicate checks before a run are written into the "
        "tools' own descriptions so the discipline does not depend on memory.",
    )
    state = corrections.proposal_state(record, "ml", proposal.name, proposal.version, True)
    say(f"editor-session accepted {ref} by decision {d.id}: now {state}")

    say("\nthe ml decision log, in time order:")
    for d in decisions.list_decisions(record, "ml"):
        say(f"  {d.at[:19]}  {d.relation:<10} {d.topic}: chose {d.chosen!r}")
