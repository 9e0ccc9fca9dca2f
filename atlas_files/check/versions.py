"""Streams of versioned documents (status and topics): numbering, contents, digests, links.

A stream folder must hold ``NAME.v0001.md`` .. ``NAME.vNNNN.md`` without a gap, each file's
front matter agreeing with its name, each body matching its digest, and each version based
on the one before it. The newest version is also checked for what can still be acted on:
links, references to superseded or retracted versions, and the status length limit. Older
versions are history: a reference in them that has since gone stale is no finding.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from atlas_files.check import debris, fix, refs
from atlas_files.check.bom import BOM, strip_bom
from atlas_files.check.context import CheckRun, check_not_ahead, list_folder, per_file
from atlas_files.check.index import canonical_number
from atlas_files.check.schema import key_lines, plain, validate
from atlas_files.facts import layout
from atlas_files.linkcheck.filesources import why_unreadable
from atlas_files.storage import frontmatter, fsio

# Room for the front matter when reading a version whose body may be up to body_limit.
HEAD_ROOM = 64 * 1024


def check_stream(ctx: CheckRun, folder: Path, project: str, name: str,
                 only: set[str] | None = None) -> None:
    """Check the stream in ``folder``. ``only``: file names to check (numbering is still
    judged on the whole folder, since a gap is a property of the folder)."""
    found: dict[int, list[str]] = {}
    for entry in sorted(list_folder(ctx, folder)):
        if fsio.is_temp(entry):
            debris.check_temp(ctx, folder / entry)
            continue
        m = layout.VERSION_FILE.fullmatch(entry)
        if m and m.group("name") == name and canonical_number(m.group("number")):
            found.setdefault(int(m.group("number")), []).append(entry)
        elif only is None or entry in only:
            path = folder / entry
            if not ctx.source.is_file(path) or is_private(entry):
                continue
            if m and m.group("name") == name:
                number = int(m.group("number"))
                ctx.report.add(path, 1, "ATL034",
                               f"{entry} is not a version readers see: v{number} of {name!r} "
                               f"is named {layout.version_filename(name, number)}",
                               f"rename it to {layout.version_filename(name, number)} (if that "
                               "number is free; else write the next version)")
            elif m:
                ctx.report.add(path, 1, "ATL004",
                               f"{entry} is named as a version of {m.group('name')!r} but lies "
                               f"in the folder of {name!r}")
            else:
                ctx.report.add(path, 1, "ATL032",
                               f"{entry} is not a version of {name!r}: readers ignore it")
    if not found:
        return
    numbers = sorted(found)
    latest = numbers[-1]
    expected = 1
    for number in numbers:
        files = found[number]
        if only is not None and not any(f in only for f in files):
            expected = number + 1
            continue
        if number > expected:
            missing = f"v{expected}" if number == expected + 1 else f"v{expected}..v{number - 1}"
            before = f"after v{expected - 1}" if expected > 1 else "as the first version"
            deleted = number != latest or _was_published(ctx, folder / files[0], expected)
            ctx.report.add(folder / files[0], 1, "ATL003",
                           f"version skip: {files[0]} is v{number} {before}; {missing} is "
                           "missing", _restore_hint(name, expected, number) if deleted
                           else _skip_hint(name, expected))
        expected = number + 1
        if len(files) > 1:
            ctx.report.add(folder / files[0], 1, "ATL004",
                           f"{len(files)} files claim v{number} of {name!r}: "
                           f"{', '.join(files)}")
        for entry in files:
            path = folder / entry
            check_version_file(ctx, path, project, name, number, latest=latest,
                               present=numbers)


def is_private(name: str) -> bool:
    """Hidden files (``.atlas-latest.json``, readers' hints) and lock files belong to
    the tools, not to the record's contents."""
    return name.startswith(".") or name.endswith(".lock")


def _skip_hint(name: str, expected: int) -> str:
    return (f"a new version takes the next number: rename it to "
            f"{layout.version_filename(name, expected)} (and set version: {expected})")


def _was_published(ctx: CheckRun, path: Path, expected: int) -> bool:
    """Whether the version after a gap was written when the missing ones existed: it says
    it was based on one of them, or carries a digest (written by atlas, or stamped). Then
    the gap is a deletion, and renaming a published version is no fix."""
    try:
        raw, _ = ctx.source.read_limited(path, HEAD_ROOM)
        meta = frontmatter.parse(raw.removeprefix(BOM)).meta
    except (OSError, frontmatter.FrontMatterError):
        return False
    based_on = meta.get("based_on")
    return (isinstance(based_on, int) and based_on >= expected) or "digest" in meta


def _restore_hint(name: str, expected: int, number: int) -> str:
    """A version was deleted from the middle of a stream: published versions are never
    renumbered, so what is missing comes back from history."""
    first = layout.version_filename(name, expected)
    which = (first if number == expected + 1
             else f"{first}..{layout.version_filename(name, number - 1)}")
    return (f"a published version was deleted: restore {which} from git (in its folder, "
            "`git log --diff-filter=D --name-only -- .` finds the commit that deleted it, "
            f"`git restore --source COMMIT^ {first}` brings it back) or from a backup; "
            "never renumber the versions after it")


@per_file
def check_version_file(ctx: CheckRun, path: Path, project: str, name: str, number: int,
                       *, latest: int, present: Sequence[int] = ()) -> None:
    """One version file. ``present``: the version numbers its folder holds, sorted."""
    report = ctx.report
    report.files += 1
    limit = ctx.limits.body_limit
    try:
        # Enough for any body within the limit and its front matter; a larger file is
        # measured, not loaded.
        raw, size = ctx.source.read_limited(path, limit + HEAD_ROOM)
    except OSError as exc:
        report.add(path, 1, "ATL002", f"cannot read this version: {why_unreadable(exc)}")
        return
    whole = len(raw) >= size
    data = strip_bom(ctx, path, raw, "version") if whole else raw.removeprefix(BOM)
    try:
        parsed = frontmatter.parse(data)
    except frontmatter.FrontMatterError as exc:
        if whole:
            report.add(path, exc.line, "ATL002", str(exc))
        else:
            report.add(path, 1, "ATL039",
                       f"this version is {size:,} bytes, more than the record's body_limit "
                       f"of {limit:,} bytes, and its front matter was not found in its first "
                       f"{limit + HEAD_ROOM:,} bytes; it was not read further")
        return
    # The body is the end of the file: its size is the file's less what precedes it.
    body_size = len(parsed.body) if whole else size - (len(raw) - len(parsed.body))
    if body_size > limit:
        report.add(path, parsed.body_line, "ATL039",
                   f"this version's body is {body_size:,} bytes, more than the record's "
                   f"body_limit of {limit:,} bytes (readers may refuse it)"
                   + ("" if whole else "; it was not read further"))
    meta = plain(parsed.meta)
    lines = _lazy_lines(data, parsed.body_line)
    clean = _check_meta(ctx, path, meta, lines, name, number, latest, present)
    if not whole:
        return  # the body was not loaded: its digest and links are not judged
    body_text = _body_text(ctx, path, parsed)
    digest_ok = parsed.digest_ok
    if digest_ok is False:
        clean = False
        report.add(path, lines().get("digest", 2), "ATL005",
                   f"v{number} was edited in place: its body no longer matches its digest "
                   "(versions are immutable; write the next version)")
    current = number == latest
    refs.check_meta_links(ctx, path, project, meta.get("links"),
                          lines().get("links", 2) if meta.get("links") else 2, current=current)
    if current and body_text is not None:
        if name == "status" and len(body_text) > ctx.limits.status_limit:
            report.add(path, parsed.body_line, "ATL031",
                       f"this status is {len(body_text)} characters, over the record's "
                       f"status_limit of {ctx.limits.status_limit}")
        if ctx.links is not None:
            ctx.links.check_text(path, body_text, parsed.body_line)
    if digest_ok is None:
        # Last, so that any other finding on this file (from here or from its folder's
        # numbering) keeps --fix from stamping it.
        if ctx.fix and clean and body_text is not None and not report.has_findings(path):
            fix.stamp_version(ctx, path, data, parsed)
        elif clean and body_text is not None and not report.has_findings(path):
            report.add(path, 1, "ATL006",
                       f"v{number} has no digest yet: an in-place edit of it cannot be detected")
        else:
            # --fix stamps only a version that is otherwise right: "run --fix" here would
            # send the reader round in a circle.
            report.add(path, 1, "ATL006",
                       f"v{number} has no digest yet: an in-place edit of it cannot be "
                       "detected", "fix the other findings on this file first: `atlas check "
                       "--fix` stamps only a version that is otherwise right (it never "
                       "renames or renumbers one), then run it again")


def _check_meta(ctx: CheckRun, path: Path, meta: dict[str, Any], lines: Any, name: str,
                number: int, latest: int, present: Sequence[int]) -> bool:
    """The front matter against the schema, the file's name and its folder; True if no
    finding was made."""
    report = ctx.report
    clean = validate(report, path, "version", meta, lines, 2)
    here = f"v{number}"
    version = meta.get("version")
    if meta.get("name") != name and isinstance(meta.get("name"), str):
        clean = False
        report.add(path, lines().get("name", 2), "ATL004",
                   f"the front matter says name {meta['name']!r}, the file is a version of "
                   f"{name!r}")
    if isinstance(version, int) and version != number:
        clean = False
        report.add(path, lines().get("version", 2), "ATL004",
                   f"the front matter says version {version}, the file name says {number}")
    check_not_ahead(ctx, path, lines().get("written_at", 2), meta.get("written_at"),
                    f"{here} says it was written at")
    based_on = meta.get("based_on")
    if isinstance(based_on, int) and not isinstance(based_on, bool):
        if based_on >= number:
            clean = False
            report.add(path, lines().get("based_on", 2), "ATL009",
                       f"{here} says it is based on v{based_on}, which is not an earlier version")
        else:
            # Versions between what the writer read and what it wrote: the writer never read
            # them. (Missing ones are a version skip, reported on its own.)
            # ``present`` is sorted: two bisections, however long the stream.
            unread = present[bisect.bisect_right(present, based_on):
                             bisect.bisect_left(present, number)]
            if unread:
                clean = False
                code = "ATL007" if number == latest else "ATL008"
                shown = f"v{unread[0]}" if len(unread) == 1 else f"v{unread[0]}..v{unread[-1]}"
                report.add(path, lines().get("based_on", 2), code,
                           f"version jump: {here} is based on v{based_on}, but {shown} was "
                           f"written before it; you read v{based_on}, but v{unread[0]} exists: "
                           "read it, merge, write again")
    return clean


def _body_text(ctx: CheckRun, path: Path, parsed: frontmatter.Parsed) -> str | None:
    try:
        return parsed.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        ctx.report.add(path, parsed.body_line, "ATL002",
                       f"the body is not UTF-8 text (byte {exc.start} of the body)")
        return None


def _lazy_lines(data: bytes, body_line: int) -> Any:
    cache: dict[str, int] = {}
    done = [False]

    def get() -> dict[str, int]:
        if not done[0]:
            head = data.decode("utf-8", "replace").split("\n")[1: body_line - 2]
            cache.update(key_lines(head, 2))
            done[0] = True
        return cache

    return get
