"""The body of a write, read from where its writer sent it, never past the record's limit.

A body is refused when it is larger than ``body_limit`` (atlas.yaml), and that is judged
while it is read, not after: at most the limit (plus the slack its caller asks for, such as
room for a whole version file's front matter) and one byte is ever read, from a file
(whose size is looked at first, so a huge or sparse one is refused without reading any of
it), a pipe, stdin, a device (``-f /dev/zero``) or a request's body arriving in chunks.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable

from atlas_files.facts.errors import BadInput
from atlas_files.storage import fsio

_HINT = "split it into several topics, or raise body_limit in atlas.yaml"


def too_large(source: str, limit: int, size: int | None = None, *,
              named: str = "this record's body_limit", hint: str = _HINT) -> BadInput:
    """The refusal of a body over ``limit`` bytes (``size``: its size, when known);
    ``named`` says whose limit it is."""
    what = f"is {size} bytes" if size is not None else f"is more than {limit} bytes"
    return BadInput(
        f"the body from {source} {what}; {named} is {limit} bytes, so nothing was written "
        "(and the rest of it was not read)",
        hint=hint,
    )


def read_fd(fd: int, limit: int, source: str, *, slack: int = 0) -> bytes:
    """Everything ``fd`` gives, or BadInput once it gives more than ``limit`` bytes (plus
    ``slack``: what the caller takes off before judging the body exactly, such as the
    front matter of a whole version file)."""
    try:
        size = os.fstat(fd)
    except OSError:
        size = None
    if size is not None and stat.S_ISREG(size.st_mode) and size.st_size > limit + slack:
        raise too_large(source, limit, size.st_size)
    try:
        return fsio.read_upto(fd, limit + slack, source)
    except fsio.FileTooLarge:
        raise too_large(source, limit) from None


def read_file(path: str, limit: int, *, slack: int = 0) -> bytes:
    """The file the writer named (``-f FILE``): followed where it leads, as the writer
    chose it, and waited on if it is a pipe (``-f <(command)``)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}", hint="check the path") from None
    try:
        return read_fd(fd, limit, path, slack=slack)
    except IsADirectoryError:
        raise BadInput(f"cannot read {path}: it is a folder", hint="name a file") from None
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}", hint="check the path") from None
    finally:
        os.close(fd)


def read_stdin(limit: int, *, slack: int = 0) -> bytes:
    """This process's stdin, to its end or to one byte past ``limit`` (plus ``slack``)."""
    stream = sys.stdin
    if stream is None:
        return b""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # replaced by a caller (a test, an embedder)
        data = stream.buffer.read(limit + slack + 1)
        if len(data) > limit + slack:
            raise too_large("stdin", limit) from None
        return data
    return read_fd(fd, limit, "stdin", slack=slack)


def collect(chunks: Iterable[bytes], limit: int, source: str, *,
            named: str = "this record's body_limit", hint: str = _HINT) -> bytes:
    """The chunks of a body arriving in parts (an HTTP request's), joined; BadInput as soon
    as they pass ``limit`` bytes, without taking the next chunk. ``named`` and ``hint``
    say whose limit it is and what to do, for a limit other than body_limit."""
    parts = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise too_large(source, limit, named=named, hint=hint)
        parts.append(chunk)
    return b"".join(parts)
