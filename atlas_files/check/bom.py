"""A UTF-8 byte-order mark at the start of a record file: an editor's addition, never the
tools'. Before the ``---`` of a version or entry it hides the front matter from every
reader, so it is reported as what it is, not as a file without front matter.

``--fix`` removes it from a file not yet stamped with a digest (a hand-written new
version or entry): the three bytes are all that changes, the file says the same, and
nothing can have relied on its exact bytes. A stamped file is left to a person (restore
it from git), as is every other edit of an immutable file.
"""

from __future__ import annotations

from pathlib import Path

from atlas_files.check import fix
from atlas_files.check.context import CheckRun
from atlas_files.storage import frontmatter

BOM = b"\xef\xbb\xbf"


def strip_bom(ctx: CheckRun, path: Path, data: bytes, what: str) -> bytes:
    """``data`` without a leading byte-order mark, which is reported (or, with --fix and
    where safe, removed from the file). The check goes on with the rest either way."""
    if not data.startswith(BOM):
        return data
    rest = data[len(BOM):]
    try:
        stamped = frontmatter.parse(rest).meta.get("digest") is not None
    except frontmatter.FrontMatterError:
        stamped = None  # no front matter behind it either: not for --fix to judge
    if stamped is False and ctx.fix:
        if fix.remove_bom(ctx, path, data, rest):
            return rest
    if stamped is False:
        hint = (f"remove it: `atlas check --fix` does (this {what} has no digest yet, so "
                "nothing else changes)")
    else:
        hint = ("remove the three bytes before '---' (or restore the file from git); "
                "the tools never write one")
    ctx.report.add(path, 1, "ATL002",
                   f"this {what} starts with a UTF-8 byte-order mark (an editor added it), so "
                   "readers do not see its front matter; remove it", hint)
    return rest
