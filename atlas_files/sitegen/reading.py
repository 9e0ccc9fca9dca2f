"""Reading record files for the site, where one bad file must never stop the build.

Versions are opened here rather than through ``Stream.read`` for three reasons: a version
whose body is over the record's ``body_limit`` is not read whole (only its front matter,
so its page can say what is missing), a named pipe in place of a version must not block
the build, and a folder or device in its place is a damaged file, not an OSError. The
front matter is still parsed by ``documents.parse_version``, the record's one reader.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING

from atlas_files.facts.errors import AtlasError, DamagedFile
from atlas_files.storage import fsio
from atlas_files.storage.documents import FRONT_MATTER_ALLOWANCE, Version, parse_version

if TYPE_CHECKING:
    from atlas_files.storage.documents import Stream

# What a damaged or hostile file can make a reader raise, besides AtlasError: bad text
# (UnicodeError is a ValueError), numbers YAML or JSON read as infinite or huge, nesting
# deeper than the interpreter's stack, values of the wrong type, a file the system will
# not open. Caught per file, so the file is named and the build goes on.
UNREADABLE: tuple[type[BaseException], ...] = (
    AtlasError, OSError, ValueError, OverflowError, RecursionError, TypeError, KeyError,
    AttributeError,
)
# The most front matter read from a version whose body is over the limit (the same
# allowance as the record's own reader).
HEAD_MAX = FRONT_MATTER_ALLOWANCE
_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
          | getattr(os, "O_CLOEXEC", 0))


class Withheld(Version):
    """A version whose body is over the body limit: its front matter, with an empty body.
    Shown as a version, with ``note`` where its text would be."""

    body_bytes: int
    limit: int

    @classmethod
    def of(cls, doc: Version, body_bytes: int, limit: int) -> Withheld:
        withheld = cls._make(doc._replace(body=""))
        withheld.body_bytes = body_bytes
        withheld.limit = limit
        return withheld

    @property
    def note(self) -> str:
        return f"body of {self.body_bytes} bytes is over the record's body_limit; not shown"


def describe(exc: BaseException) -> str:
    """One line about why a file could not be read."""
    if isinstance(exc, AtlasError):
        return exc.message
    if isinstance(exc, OSError):
        return f"cannot be read ({exc.strerror or exc})"
    if isinstance(exc, RecursionError):
        return "cannot be read: it is nested too deeply"
    return f"cannot be read ({type(exc).__name__}: {str(exc)[:200]})"


def _read_at_most(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _header_length(data: bytes) -> int | None:
    """Bytes up to and including the closing ``---`` line, or None if it is not in
    ``data``."""
    start = data.find(b"\n") + 1
    if data[:start].rstrip(b"\r\n") != b"---":
        return None
    while start:
        end = data.find(b"\n", start)
        line = data[start:end if end >= 0 else len(data)]
        if line.rstrip(b"\r") == b"---":
            return end + 1 if end >= 0 else len(data)
        if end < 0:
            return None
        start = end + 1
    return None


def read_version(stream: Stream, version: int, limit: int) -> Version:
    """Version ``version`` of ``stream``, or its front matter alone if its body is over
    ``limit`` bytes. Raises one of UNREADABLE for a file that cannot be shown."""
    path = stream.path(version)
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise fsio.damage(path, exc, "version") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what: OSError = (
                IsADirectoryError(errno.EISDIR, "it is a folder", str(path))
                if stat.S_ISDIR(st.st_mode)
                else fsio.NotAFile(errno.EINVAL, "it is not a plain file", str(path)))
            raise fsio.damage(path, what, "version")
        data = _read_at_most(fd, limit + HEAD_MAX + 1)
    finally:
        os.close(fd)
    whole = len(data) <= limit + HEAD_MAX
    header = _header_length(data)
    if whole or header is None:  # None: let the parser say what is wrong with it
        doc = parse_version(path, data, stream.name, head_only=not whole)
        body_bytes = len(data) - (header or 0)
    else:
        body_bytes = st.st_size - header
        if body_bytes <= limit:
            raise DamagedFile(f"{path}: its front matter is over {HEAD_MAX} bytes")
        doc = parse_version(path, data[:header], stream.name, head_only=True)
    if doc.version != version or doc.name != stream.name:
        raise DamagedFile(
            f"{path}: its front matter says {doc.name} v{doc.version}, its file name "
            f"says {stream.name} v{version}"
        )
    if body_bytes > limit:
        return Withheld.of(doc, body_bytes, limit)
    return doc
