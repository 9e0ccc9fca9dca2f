"""`atlas search`: parse, call ``atlas_files.search.search``, render."""

from __future__ import annotations

import unicodedata
from typing import Any

import click

from atlas_files import api
from atlas_files.api import search as search_api
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json
from atlas_files.facts import timeutil

_KINDS = ("status", "artifact", "decision", "correction", "retraction", "task")


def _safe(text: object) -> str:
    """One line of text with no control characters (a hand-written file may hold some)."""
    value = " ".join(str(text).split())
    return "".join("?" if unicodedata.category(c) in ("Cc", "Cs") else c for c in value)


def _mark_words(marks: dict[str, Any]) -> list[str]:
    words = []
    if "relation" in marks:
        words.append(marks["relation"])
    if "corrected" in marks:
        n = len(marks["corrected"])
        words.append("corrected" if n == 1 else f"corrected {n}x")
    if "retracted" in marks:
        words.append(f"retracted by {marks['retracted']['author']}")
    if "superseded" in marks:
        words.append(f"superseded by v{marks['superseded']['newest_version']}")
    if "proposal" in marks:
        words.append("open proposal" if marks["proposal"]["state"] == "open"
                     else f"proposal accepted by {marks['proposal']['by']}")
    return words


def _lines(r: dict[str, Any]) -> list[str]:
    marks = " ".join(f"[{_safe(w)}]" for w in _mark_words(r["marks"]))
    head = (f"{r['kind']:<10} {r['id']}  ({r['project']})  by {_safe(r['author'])}, "
            f"{timeutil.age_of(r['written_at'])}")
    lines = [head + (f"  {marks}" if marks else "")]
    if r["kind"] in ("decision", "task"):
        label = "topic" if r["kind"] == "decision" else "title"
        lines.append(f"    {label}: {_safe(r['name'])}")
    lines.append(f"    {r['snippet']}")
    for fix in r["marks"].get("corrected", ()):
        lines.append(f"    CORRECTED by {_safe(fix['author'])} ({fix['id']}): "
                     f"{_safe(fix['what'])[:200]}")
    if "retracted" in r["marks"]:
        ret = r["marks"]["retracted"]
        lines.append(f"    RETRACTED by {_safe(ret['author'])} ({ret['id']}): "
                     f"{_safe(ret['why'])[:200]}")
    return lines


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--kind", "kinds", multiple=True, type=click.Choice(_KINDS),
              help="Only this kind (repeatable). correction includes retractions.")
@click.option("--project", "-p", "project", metavar="NAME",
              help="Search this project (default: the global --project, else the default "
              "project).")
@click.option("--all-projects", is_flag=True, help="Search every project of the record.")
@click.option("--all-versions", is_flag=True,
              help="Every version of each topic and status, not only the newest.")
@click.option("--limit", type=int, default=20, show_default=True, metavar="N",
              help="At most N results (1-1000).")
@json_option
@pass_ctx
def search(ctx: Invocation, query: tuple[str, ...], kinds: tuple[str, ...], project: str | None,
           all_projects: bool, all_versions: bool, limit: int, as_json: bool) -> None:
    """Full-text search over status, topics, decisions, corrections and retractions.

    QUERY: words (all must match), "quoted phrases" (quote them for the shell too:
    '"flaky runner"'), prefix*. Nothing else is special. Best match first; each result
    says what it is and its marks (relation, corrected, retracted, superseded, open
    proposal). Searches the newest version of each topic and of the status unless
    --all-versions.

    The index is derived (.atlas-cache/ in the record, out of git) and brought up to date
    by every search; deleting it is always safe. Where it cannot be written, the files
    are read directly instead, and a warning says so.
    """
    text = " ".join(query)
    # --all-projects overrides a project set globally (ATLAS_PROJECT), not one given here.
    worker = ctx.worker
    worker = api.Worker(worker.record, worker.identity,
                        project if all_projects else (project or ctx.project))
    found = search_api.search(worker, text, kinds=kinds, all_projects=all_projects,
                             all_versions=all_versions, limit=limit)
    if as_json:
        emit_json(found.to_json())
        return
    rows = found.results
    if not rows:
        click.echo(f"no results for {_safe(text)}")
        return
    out = []
    for r in rows:
        out += _lines(r)
    many = "" if len(rows) == 1 else "s"
    out.append(f"{len(rows)} result{many}" + (" (--limit reached)" if len(rows) == limit
                                               else ""))
    click.echo("\n".join(out))
