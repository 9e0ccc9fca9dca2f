"""How versions are shown on a terminal: the header line, marks, lists and diffs; shared
by the status and topic commands."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from atlas_files.api.versions import DiffView, VersionList
from atlas_files.cli.render import emit_json, print_warning
from atlas_files.facts import timeutil


def age(written_at: str, at: datetime | None = None) -> str:
    """How long ago ``written_at`` was; a table passes one ``at`` for all its rows."""
    return timeutil.age_of(written_at, at)


def header(label: str, doc: Any, marks: dict[str, Any]) -> list[str]:
    based = "the first version" if doc.based_on == 0 else f"based on v{doc.based_on}"
    lines = [f"{label} v{doc.version}, written {age(doc.written_at)} by {doc.author} "
             f"({doc.written_at}), {based}"]
    if doc.summary:
        lines.append(f"summary: {doc.summary}")
    if doc.proposal:
        accepted = marks.get("accepted_by")
        lines.append(f"ACCEPTED by decision {accepted}" if accepted else
                     "PROPOSAL: not accepted by any decision yet")
    retracted = marks.get("retracted")
    if retracted:
        lines.append(f"RETRACTED by {retracted['author']} ({retracted['id']}): "
                     f"{retracted['why']}")
    for r in marks.get("retractions", [])[1:]:
        lines.append(f"also retracted by {r['author']} ({r['id']}): {r['why']}")
    for c in marks.get("corrected_by", []):
        lines.append(f"CORRECTED by {c['author']} ({c['id']}): {c['what']}")
    return lines


def list_marks(marks: dict[str, Any]) -> str:
    """A version's corrections and retraction at the end of its line in a listing (`ls`,
    `feed`, `history`, `status log`); `get` shows what each says."""
    retracted = marks.get("retracted")
    if not retracted and not marks.get("corrected_by"):
        return ""  # most rows of a listing of thousands
    words = []
    if retracted:
        words.append(f"[RETRACTED by {retracted['author']}]")
    authors = list(dict.fromkeys(c["author"] for c in marks.get("corrected_by", [])))
    if authors:
        words.append(f"[CORRECTED by {', '.join(authors)}]")
    return "".join(f"  {w}" for w in words)


def warn_digest(doc: Any) -> None:
    if doc.digest_ok is False:
        print_warning(f"{doc.path} was edited in place: its body no longer matches its digest "
                      "(versions are immutable; run `atlas check`)")


def print_diff(view: DiffView, as_json: bool) -> None:
    if as_json:
        emit_json(view.to_json())
    else:
        click.echo(view.diff.text, nl=False)


def print_versions(listing: VersionList, as_json: bool) -> None:
    if as_json:
        emit_json(listing.to_json())
        return
    lines = {d.version: f"v{d.version}  {age(d.written_at):>16}  {d.author:<16} {d.summary}"
                        f"{list_marks(listing.marks[d.version])}" for d in listing.versions}
    # In its place among the others: the gap says which version it is.
    lines.update({u.version: f"v{u.version}  UNREADABLE (see the warning above)"
                              f"{list_marks(listing.marks[u.version])}"
                  for u in listing.unreadable})
    if lines:
        click.echo("\n".join(lines[v] for v in sorted(lines, reverse=True)))
