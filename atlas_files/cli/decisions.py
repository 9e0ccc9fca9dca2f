"""Commands of the decision log: decide, decisions, correct, retract."""

from __future__ import annotations

from typing import Any

import click

from atlas_files.api import decisions as api
from atlas_files.cli.app import Invocation, json_option, pass_ctx, sync_option
from atlas_files.cli.render import emit_json, print_warning
from atlas_files.facts import timeutil


def _when(at: str) -> str:
    """``2026-11-29 11:05:12`` for a stored time (UTC); the text itself if it is no time."""
    try:
        return timeutil.format_time(timeutil.parse_time(at))[:19].replace("T", " ")
    except ValueError:
        return at[:19]


def _field(label: str, text: str) -> list[str]:
    """``label`` then ``text`` in full; each further line of the text indented under it.

    Long lines are left for the terminal to wrap, so a grep for a phrase still finds it.
    """
    lead = f"    {label:<13}"
    pad = " " * len(lead)
    return [(lead if i == 0 else pad) + line for i, line in enumerate(text.split("\n"))]


def _decision_lines(d: Any) -> list[str]:
    head = f"{_when(d.at):<20} {d.relation:<10} {d.topic}"
    lines = [head, f"    {'id':<13}{d.id}   by {d.author}"]
    by = f" (by {d.recommended_by})" if d.recommended_by else ""
    lines += _field("recommended", d.recommended + by)
    lines += _field("chosen", d.chosen)
    lines += _field("why", d.why)
    if d.accepts:
        lines += _field("accepts", f"{d.accepts} (the proposal is accepted by this decision)")
    if d.links:
        lines += _field("links", ", ".join(d.links))
    for c in d.corrected_by:
        lines += _field("CORRECTED", f"by {c.author} ({c.id}, {_when(c.at)}): {c.text}")
    if d.digest_ok is False:
        lines += _field("EDITED", "this file no longer matches its digest: it was changed "
                        "after it was written (run `atlas check`)")
    return lines


@click.command()
@click.option("--topic", metavar="TEXT", help="What the decision is about (one line). Required.")
@click.option("--recommended", metavar="TEXT", help="What was recommended. Required.")
@click.option("--recommended-by", metavar="WHO", help="Who recommended it (an identity name).")
@click.option("--chosen", metavar="TEXT", help="What was chosen. Required.")
@click.option("--relation", metavar="agreed|disagreed|timed-out",
              help="How the choice stands to the recommendation, stated, never inferred. "
              "Required.")
@click.option("--why", metavar="TEXT", help="Why they stand where they do. Required.")
@click.option("--link", "links", multiple=True, metavar="REF",
              help="What the decision builds on: NAME@vN, status@vN or an entry id "
              "(repeatable; each must exist).")
@click.option("--accepts", metavar="NAME@vN",
              help="Accept this proposal (a version written with `atlas put --proposal`).")
@json_option
@sync_option
@pass_ctx
def decide(ctx: Invocation, topic: str | None, recommended: str | None,
           recommended_by: str | None, chosen: str | None, relation: str | None,
           why: str | None, links: tuple[str, ...], accepts: str | None,
           as_json: bool) -> None:
    """Append a decision to the log: recommended, chosen, relation and why.

    The relation is given, not inferred: the same two texts can be "agreed" or
    "timed-out", and two different texts can be a timing override that --why explains.
    Nothing is ever edited: to fix a decision, `atlas correct ID --what TEXT`. Any
    missing field or a reference that does not exist: exit 2, nothing written.
    """
    result = api.decide(
        ctx.worker, topic=topic or "", recommended=recommended or "", chosen=chosen or "",
        relation=relation or "", why=why or "", recommended_by=recommended_by, links=links,
        accepts=accepts,
    )
    for w in result.warnings:
        print_warning(w)
    if as_json:
        emit_json(result.to_json())
        return
    d = result.decision
    what = f", accepting the proposal {d.accepts}" if d.accepts else ""
    click.echo(f"recorded decision {d.id} on {d.topic!r} ({d.relation}){what}")


@click.command()
@click.option("--topic", metavar="TEXT", help="Only decisions on this topic (exact text).")
@click.option("--relation", metavar="agreed|disagreed|timed-out", help="Only this relation.")
@click.option("--since", metavar="TIME", help="Only decisions at or after TIME (RFC 3339, a "
              "date, or an age such as 2h or 7d).")
@json_option
@pass_ctx
def decisions(ctx: Invocation, topic: str | None, relation: str | None, since: str | None,
              as_json: bool) -> None:
    """The decision log of the project in time order, why in full, corrections shown.

    Time order is the writers' clocks: entries from machines whose clocks disagree
    interleave by those clocks.
    """
    log = api.decisions(ctx.worker, topic=topic, relation=relation, since=since)
    for message in log.unreadable:
        print_warning(f"left out an unreadable entry: {message}")
    if as_json:
        emit_json(log.to_json())
        return
    project, rows = log.project, log.decisions
    for d in rows:
        if d.digest_ok is False:
            print_warning(f"{d.path} was edited after it was written (its digest no longer "
                          "matches)")
    if not rows:
        click.echo(f"no decisions match in project {project}" if log.filtered else
                   f"project {project} has no decisions yet; record one with `atlas decide`")
        return
    click.echo(f"{'AT (UTC)':<20} {'RELATION':<10} TOPIC")
    blocks = ["\n".join(_decision_lines(d)) for d in rows]
    click.echo("\n\n".join(blocks))


@click.command()
@click.argument("ref", metavar="REF")
@click.option("--what", metavar="TEXT", help="What was wrong, and what is right. Required.")
@json_option
@sync_option
@pass_ctx
def correct(ctx: Invocation, ref: str, what: str | None, as_json: bool) -> None:
    """Write down a bad write: REF (status@vN, NAME@vN or a decision id) was wrong.

    The corrected item is never touched; wherever it is shown (get, status show,
    decisions, the site) it is marked "corrected by" you, with your text.
    """
    result = api.correct(ctx.worker, ref, what or "")
    if as_json:
        emit_json(result.to_json())
        return
    c = result.entry
    click.echo(f"recorded correction {c.id} of {c.ref}: it shows wherever {c.ref} is read")


@click.command()
@click.argument("ref", metavar="NAME@vN")
@click.option("--why", metavar="TEXT", help="Why the conclusion no longer holds. Required.")
@json_option
@sync_option
@pass_ctx
def retract(ctx: Invocation, ref: str, why: str | None, as_json: bool) -> None:
    """Retract the version NAME@vN: its conclusion no longer holds.

    The version stays, shown as retracted; `atlas check` reports whatever still links to
    it ("builds on a retracted conclusion"). A version already retracted when you write is
    refused (exit 2); two retractions written at the same moment can both land, and then
    both are kept and listed, the earliest shown as the retraction.
    """
    result = api.retract(ctx.worker, ref, why or "")
    for w in result.warnings:
        print_warning(w)
    if as_json:
        emit_json(result.to_json())
        return
    c = result.entry
    click.echo(f"recorded retraction {c.id} of {c.ref}")
