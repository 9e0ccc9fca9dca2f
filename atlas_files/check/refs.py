"""References between record files: ``links:``/``accepts``/``ref`` fields and Markdown links
to version files. A reference must name something that exists; where it can still be acted
on (the newest version of a stream, a Markdown file that is not a version) it is also
judged for pointing at a superseded version (a warning) or a retracted one (an error)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from atlas_files.check.context import CheckRun

MAX_LINKS = 100


def check_ref(ctx: CheckRun, path: Path, line: int, project: str, value: Any, *,
              current: bool, field: str, entry: bool = False) -> None:
    state = ctx.index.ref_state(project, value, current=current)
    if state.state == "ok":
        return
    if state.state in ("missing", "bad"):
        ctx.report.add(path, line, "ATL014", f"{field} {value!r}: {state.detail}")
    elif state.state == "retracted":
        if entry:
            ctx.report.add(path, line, "ATL015",
                           f"{field} {value!r}: this entry builds on a retracted version")
        elif current:
            ctx.report.add(path, line, "ATL013",
                           f"{field} {value!r} names a retracted version")
    elif state.state == "superseded" and current:
        ctx.report.add(path, line, "ATL012", f"{field} {value!r}: {state.detail}")


def check_meta_links(ctx: CheckRun, path: Path, project: str, links: Any, line: int, *,
                     current: bool, entry: bool = False) -> None:
    if links is None:
        return
    if not isinstance(links, list):
        return  # the schema check has reported it
    # The schemas allow 50; past that the schema check has reported the list, and a file
    # with a million of them is not judged a million times.
    for item in links[:MAX_LINKS]:
        check_ref(ctx, path, line, project, item, current=current, field="links:", entry=entry)


def on_link_target(ctx: CheckRun) -> Any:
    """A hook for the link checker: a Markdown link to a version file of the record is
    judged like a ``NAME@vN`` reference in the file that makes it."""

    def hook(linking: Path, line: int, written: str, target: Path) -> None:
        where = ctx.index.version_of_path(target)
        if where is None:
            return
        ref = where.ref
        if ref in ctx.index.retracted(where.project):
            ctx.report.add(linking, line, "ATL013",
                           f"link '{written}' names {ref} of project {where.project}, which was "
                           "retracted")
            return
        latest = ctx.index.latest(where.project, where.name)
        if where.version < latest:
            ctx.report.add(linking, line, "ATL012",
                           f"stale link '{written}': {ref} is superseded, v{latest} exists")

    return hook
