"""``--fix``: the only repairs that are safe without a person deciding.

Stamping a digest on a hand-written file that has none changes nothing it says: the line
is added to the front matter, the body stays byte for byte, and the file is published
read-only like every version. A file that has any other finding is left alone, since
stamping it would bless what is wrong with it. The rewrite replaces the file atomically;
that is safe here because a file without a digest has never been stamped, so nothing can
have relied on its exact bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from atlas_files.check.context import CheckRun
from atlas_files.storage import entries, frontmatter, fsio


def _with_digest(data: bytes, parsed: frontmatter.Parsed, digest: str) -> bytes:
    lines = data.split(b"\n")
    closing = parsed.body_line - 2  # index of the closing '---' line
    newline = b"\r" if lines[closing].endswith(b"\r") else b""
    lines.insert(closing, b"digest: " + json.dumps(digest).encode() + newline)
    return b"\n".join(lines)


def _stamp(ctx: CheckRun, path: Path, data: bytes, parsed: frontmatter.Parsed,
           digest: str, check: Callable[[bytes], bool]) -> None:
    new = _with_digest(data, parsed, digest)
    if not check(new):  # never write a file that would not read back as stamped
        ctx.report.add(path, 1, "ATL006", "has no digest, and stamping it failed; "
                       "add the digest line by hand")
        return
    try:
        current = fsio.read_nofollow(path, len(data))
    except OSError:  # a symlink or anything else in its place now: never written through
        return
    if current != data:  # changed while we looked: leave it to the next run
        return
    fsio.replace_atomic(path, new, mode=0o444)
    ctx.report.fixed.append(f"stamped the digest of {ctx.report.show(path)} (now read-only)")


def stamp_version(ctx: CheckRun, path: Path, data: bytes, parsed: frontmatter.Parsed) -> None:
    digest = frontmatter.digest_of(parsed.body)

    def ok(new: bytes) -> bool:
        try:
            return frontmatter.parse(new).digest_ok is True
        except frontmatter.FrontMatterError:
            return False

    _stamp(ctx, path, data, parsed, digest, ok)


def stamp_entry(ctx: CheckRun, path: Path, data: bytes, parsed: frontmatter.Parsed) -> None:
    digest = entries.digest_of_entry(dict(parsed.meta), parsed.body)

    def ok(new: bytes) -> bool:
        try:
            again = frontmatter.parse(new)
        except frontmatter.FrontMatterError:
            return False
        return again.meta.get("digest") == entries.digest_of_entry(dict(again.meta), again.body)

    _stamp(ctx, path, data, parsed, digest, ok)


def remove_bom(ctx: CheckRun, path: Path, data: bytes, rest: bytes) -> bool:
    """Rewrite ``path`` without its leading byte-order mark (see check/bom.py); False if
    the file changed while we looked or cannot be replaced."""
    try:
        current, st = fsio.read_with_stat(path, len(data))
        if current != data:
            return False
        mode = st.st_mode & 0o777
        fsio.replace_atomic(path, rest, mode=mode)
    except OSError:
        return False
    ctx.report.fixed.append(f"removed the byte-order mark from {ctx.report.show(path)}")
    return True
