"""How versions are shown on a terminal: marks, lists and diffs, shared by the status and
topic commands (the header line and the digest warning are in fast/versions.py, which
`status show` answered before click shares)."""

from __future__ import annotations

from typing import Any

import click

from atlas_files.api.versions import DiffView, VersionList
from atlas_files.cli.render import emit_json
from atlas_files.fast.versions import age


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

