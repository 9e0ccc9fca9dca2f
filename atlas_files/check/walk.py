"""Walking a record: each folder is listed once, each file read once and then dropped.

Where a file lies says what kind it is (a version, an entry, a lease generation, a live
row, the config, or plain Markdown); the walk hands it to that kind's check. The whole
record, some PATHs of it, or just the files a commit changes go through the same
dispatch, so each way of checking finds the same problems in the files it looks at.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from atlas_files.check import debris, kinds
from atlas_files.check.context import CheckRun, per_file, unreadable_folder
from atlas_files.check.versions import check_stream
from atlas_files.facts import layout
from atlas_files.linkcheck.links import is_markdown
from atlas_files.storage import fsio

ALL, SOME = "all", "some"


class Scope:
    """Which part of the record to check: everything, or the PATHs given."""

    def __init__(self, paths: Iterable[Path] | None = None) -> None:
        self.paths = None if paths is None else [Path(os.path.abspath(p)) for p in paths]

    def __call__(self, path: Path) -> str | None:
        if self.paths is None:
            return ALL
        some = False
        for p in self.paths:
            if path == p or p in path.parents:
                return ALL
            if path in p.parents:
                some = True
        return SOME if some else None

    def only(self, folder: Path) -> set[str] | None:
        """None if all of ``folder`` is in scope, else the names of its files that are."""
        if self(folder) == ALL:
            return None
        return {p.name for p in self.paths or () if p.parent == folder}


def _dirs(ctx: CheckRun, folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:  # no permission: a finding, and the rest is still checked
        unreadable_folder(ctx, folder, exc)
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    # The record never follows a symlink: one leading outside would check another tree.
    return entry.is_dir(follow_symlinks=False)


# The record's own folders, as commands reach them: each must be a real folder. Commands
# refuse a symlink (even to a folder inside the record, which would give one set of files
# two names) and a file in its place, so the check reports them instead of passing.
_TOP_FOLDERS = {f: f"the {f} folder" for f in (*layout.ROOT_FOLDERS, layout.SESSIONS)}
# Folders of live rows: folder -> (the rows' schema, the field that names the file).
_ROW_FOLDERS = {layout.TELEMETRY: ("telemetry", "machine"),
                layout.RECEIPTS: ("receipt", "identity"),
                layout.SESSIONS: ("session", "identity")}


def _record_folder(ctx: CheckRun, entry: os.DirEntry[str], path: Path, what: str) -> bool:
    """Whether ``path`` (a record folder: ``what``) is a real folder to walk into; a
    symlink or a file there is reported (ATL037) and not followed."""
    try:
        if entry.is_symlink():
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            real = os.path.realpath(path)
            inside = real == str(ctx.root) or real.startswith(str(ctx.root) + os.sep)
            where = "to a folder inside the record" if inside else "leading outside the record"
            ctx.report.add(path, 1, "ATL037",
                           f"{what} {ctx.rel(path)} is a symlink {where} ({target}): "
                           "commands refuse it, and nothing behind it was checked")
            return False
        if not entry.is_dir(follow_symlinks=False):
            ctx.report.add(path, 1, "ATL037",
                           f"{what} {ctx.rel(path)} is a file, where a folder should be: "
                           "commands refuse it")
            return False
    except OSError as exc:
        unreadable_folder(ctx, path, exc)
        return False
    return True


def check_tree(ctx: CheckRun, scope: Scope) -> None:
    root = ctx.root
    for entry in _dirs(ctx, root):
        path = root / entry.name
        if scope(path) is None:
            continue
        name = entry.name
        if name in _TOP_FOLDERS and not _record_folder(ctx, entry, path, _TOP_FOLDERS[name]):
            continue
        if fsio.is_temp(name):
            debris.check_temp(ctx, path)
        elif name == layout.CONFIG_NAME:
            kinds.check_config(ctx, path)
        elif name == layout.PROJECTS:
            for project in _dirs(ctx, path):
                where = path / project.name
                if scope(where) and not project.name.startswith(".") \
                        and (_is_dir(project) or project.is_symlink()) \
                        and _record_folder(ctx, project, where, "the project folder"):
                    check_project(ctx, where, scope)
        elif name == layout.LEASES:
            for resource in _dirs(ctx, path):
                where = path / resource.name
                if scope(where) and not resource.name.startswith(".") \
                        and (_is_dir(resource) or resource.is_symlink()) \
                        and _record_folder(ctx, resource, where, "the lease folder"):
                    kinds.check_lease_folder(ctx, where, scope.only(where))
        elif name in _ROW_FOLDERS:
            kind, key = _ROW_FOLDERS[name]
            for row in _dirs(ctx, path):
                if row.name.endswith(".json") and scope(path / row.name):
                    kinds.check_row(ctx, path / row.name, kind, key)
                elif fsio.is_temp(row.name):
                    debris.check_temp(ctx, path / row.name)
        elif _is_dir(entry):
            if not name.startswith("."):
                check_plain_tree(ctx, path, scope)
        elif is_markdown(name):
            check_markdown(ctx, path)


_PROJECT_FOLDERS = {f: f"the {f} folder" for f in (*layout.PROJECT_FOLDERS, layout.TASKS)}


def check_project(ctx: CheckRun, folder: Path, scope: Scope) -> None:
    project = folder.name
    if ctx.limits.projects and project not in ctx.limits.projects and scope(folder) == ALL:
        ctx.report.add(folder, 1, "ATL033",
                       f"project folder {project!r} is not listed in atlas.yaml: commands "
                       "refuse it")
    for entry in _dirs(ctx, folder):
        path = folder / entry.name
        if not scope(path):
            continue
        if entry.name in _PROJECT_FOLDERS and not _record_folder(
                ctx, entry, path, _PROJECT_FOLDERS[entry.name]):
            continue
        if entry.name == layout.STATUS:
            check_stream(ctx, path, project, "status", scope.only(path))
        elif entry.name == layout.ARTIFACTS:
            for topic in _dirs(ctx, path):
                where = path / topic.name
                if scope(where) and not topic.name.startswith(".") \
                        and (_is_dir(topic) or topic.is_symlink()) \
                        and _record_folder(ctx, topic, where, "the topic folder"):
                    check_stream(ctx, where, project, topic.name, scope.only(where))
        elif entry.name in kinds.ENTRY_FOLDERS:
            kinds.check_entry_folder(ctx, path, project, kinds.ENTRY_FOLDERS[entry.name],
                                     scope.only(path))
        elif _is_dir(entry):
            check_plain_tree(ctx, path, scope)
        elif fsio.is_temp(entry.name):
            debris.check_temp(ctx, path)
        elif entry.name == layout.CONFIG_NAME:
            nested_record(ctx, path)
        elif is_markdown(entry.name):
            check_markdown(ctx, path)


def nested_record(ctx: CheckRun, config: Path) -> None:
    """An atlas.yaml below the record's root: a second record inside this one. Each
    record's commands find the nearest atlas.yaml, so the two would share folders: this
    record's check reads the inner one's files as its own, and a writer in there never
    knows which record it wrote to."""
    ctx.report.add(config, 1, "ATL035",
                   f"{ctx.rel(config.parent)} is a record inside this record (it holds its "
                   "own atlas.yaml)")


def check_plain_tree(ctx: CheckRun, folder: Path, scope: Scope) -> None:
    """Any other folder: its Markdown files' links, and crash debris."""
    for entry in _dirs(ctx, folder):
        path = folder / entry.name
        if not scope(path):
            continue
        if _is_dir(entry):
            if not entry.name.startswith("."):
                check_plain_tree(ctx, path, scope)
        elif fsio.is_temp(entry.name):
            debris.check_temp(ctx, path)
        elif entry.name == layout.CONFIG_NAME:
            nested_record(ctx, path)
        elif is_markdown(entry.name):
            check_markdown(ctx, path)


@per_file
def check_markdown(ctx: CheckRun, path: Path) -> None:
    if ctx.links is not None:
        ctx.report.files += 1
        ctx.links.check_file(path)


def check_changed(ctx: CheckRun, files: Iterable[Path]) -> None:
    """Check just these files of the record (those a commit adds or changes), each with
    the folder around it as context (a version skip is a property of its folder)."""
    groups: dict[Path, set[str]] = defaultdict(set)
    for path in files:
        groups[path.parent].add(path.name)
    for folder, names in sorted(groups.items()):
        _check_group(ctx, folder, names)


def _check_group(ctx: CheckRun, folder: Path, names: set[str]) -> None:
    try:
        parts = folder.relative_to(ctx.root).parts
    except ValueError:
        return
    if parts == ():
        for name in sorted(names):
            if name == layout.CONFIG_NAME:
                kinds.check_config(ctx, folder / name)
            elif is_markdown(name):
                check_markdown(ctx, folder / name)
        return
    head = parts[0]
    if head == layout.PROJECTS and len(parts) == 3 and parts[2] == layout.STATUS:
        check_stream(ctx, folder, parts[1], "status", names)
    elif head == layout.PROJECTS and len(parts) == 4 and parts[2] == layout.ARTIFACTS:
        check_stream(ctx, folder, parts[1], parts[3], names)
    elif head == layout.PROJECTS and len(parts) == 3 and parts[2] in kinds.ENTRY_FOLDERS:
        kinds.check_entry_folder(ctx, folder, parts[1], kinds.ENTRY_FOLDERS[parts[2]], names)
    elif head == layout.LEASES and len(parts) == 2:
        kinds.check_lease_folder(ctx, folder, names)
    elif head in _ROW_FOLDERS and len(parts) == 1:
        kind, key = _ROW_FOLDERS[head]
        for name in sorted(names):
            if name.endswith(".json"):
                kinds.check_row(ctx, folder / name, kind, key)
    else:
        for name in sorted(names):
            if is_markdown(name):
                check_markdown(ctx, folder / name)
