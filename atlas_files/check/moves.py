"""Fix the links in the same commit that moves the files.

When a commit deletes or moves a Markdown file, every Markdown file the commit leaves in
the repository (inside a record or not) is searched for a link that still resolves to the
old path. ``git grep`` over the index finds the few files that mention the old name; only
those are read and parsed. Limits: a link to a moved folder (``docs/``) is not followed,
and the search costs a pass over the repository's Markdown, paid only by commits that
move or delete Markdown files.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from atlas_files.check.staged import Change, index_source
from atlas_files.linkcheck import markdown
from atlas_files.linkcheck.filesources import IndexSource, read_page
from atlas_files.linkcheck.findings import Report
from atlas_files.linkcheck.links import is_markdown, resolve, split_target
from atlas_files.storage.gitcmd import Git


def _candidates(repo: Path, names: set[str]) -> list[str]:
    args = ["grep", "--cached", "-l", "-z", "-F"]
    for name in sorted(names):
        args += ["-e", name]
    args += ["--", "*.md", "*.markdown"]
    done = Git(repo, read_only=True).run(*args, ok=(0, 1))  # exit 1: nothing matched
    return [os.fsdecode(x) for x in done.out.split(b"\0") if x]


def check_moves(report: Report, repo: Path, changes: list[Change],
                source: IndexSource | None = None) -> None:
    source = source or index_source(repo, changes)
    removed: dict[str, Change] = {}
    for change in changes:
        gone = change.removed
        if gone and is_markdown(gone) and not source.is_file(repo / gone):
            removed[gone] = change
    if not removed:
        return
    names: set[str] = set()
    for gone in removed:
        base = gone.rsplit("/", 1)[-1]
        names.update({base, quote(base)})
    for rel in _candidates(repo, names):
        linking = repo / rel
        try:
            data = read_page(source, linking)
        except OSError:
            continue
        report.files += 1
        body, first = markdown.split_front_matter(data.decode("utf-8", "replace"))
        for link in markdown.links(body, first):
            parts = split_target(link.target)
            if parts is None or not parts[0]:
                continue
            target = resolve(linking, parts[0])
            try:
                old = target.relative_to(repo).as_posix()
            except ValueError:
                continue
            moved = removed.get(old)
            if moved is not None:
                _report(report, repo, linking, link, old, moved, parts[1])


def _report(report: Report, repo: Path, linking: Path, link: markdown.Link, old: str,
            change: Change, fragment: str | None) -> None:
    if change.status == "R":
        fixed = os.path.relpath(repo / change.path, linking.parent)
        suggestion = Path(fixed).as_posix() + (f"#{fragment}" if fragment else "")
        report.add(linking, link.line, "ATL042",
                   f"links '{link.target}', which this commit moves to {change.path}",
                   f"fix the links in the same commit that moves the files: link "
                   f"'{suggestion}' instead")
    else:
        report.add(linking, link.line, "ATL042",
                   f"links '{link.target}', which this commit deletes ({old})",
                   "fix the links in the same commit that moves the files: remove the link "
                   "or point it at what replaces the file")
