"""The version-jump stop sign: a write checked against what its writer read.

A write names the version it was based on (``expect``, or what the writer read: its
receipt, or a later version it wrote itself); if the stream moved past it, nothing is
written and the writer gets VersionConflict (optimistic concurrency control: validate at
commit, redo rather than overwrite). Reads through here record what was read, so the next
write knows; what_was_read is what every reader of receipts asks.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from atlas_files.facts.errors import BadInput, NotFound, warn
from atlas_files.facts.names import check_name
from atlas_files.storage import fsio, receipts
from atlas_files.storage.documents import LatestHints, Stream, Version, check_body_size
from atlas_files.storage.record import Record


def write_checked(
    record: Record,
    stream: Stream,
    key: str,
    body: str,
    *,
    author: str,
    expect: int | None,
    summary: str | None = None,
    proposal: bool = False,
    links: Sequence[str] = (),
) -> Version:
    """Write the next version of ``stream`` under the stop sign.

    ``expect`` is the version the writer read; None means "what it read": its receipt, or
    a later version it wrote itself. A writer that never read an existing stream, or whose
    read is out of date, is refused with VersionConflict and nothing is written.
    """
    # Before anything is read: too large a body is bad input whatever the versions say.
    check_body_size(body.encode("utf-8"), record.config.body_limit)
    with contextlib.ExitStack() as stack:
        # The topic's folder is opened once, to list it and to publish in it.
        try:
            folder: fsio.Folder | None = stack.enter_context(
                fsio.open_folder(stream.folder, within=stream.within))
        except OSError:  # not made yet, or damaged: the write opens (or refuses) it
            folder = None
        versions, temps = stream.scan(folder)
        latest = versions[-1] if versions else 0
        # A write counts as a read of what it wrote: when the latest version is the
        # writer's own, it has read the stream to there, whatever its receipt says.
        latest_author = author_of(stream, latest) if latest > 0 else None
        own_latest = latest_author == author
        receipt: int | None = None
        if expect is not None:
            if expect < 0:
                raise BadInput(f"--expect {expect}: versions start at 0 (nothing read yet)")
            if expect > latest:
                raise BadInput(
                    f"you expect {stream.label} to be at v{expect}, but it is at v{latest}",
                    hint="check the number you passed to --expect (`"
                    + ("atlas status log" if stream.name == "status"
                       else f"atlas history {stream.name}")
                    + "` lists its versions)",
                )
            if expect < latest:
                raise stream.conflict(expect)
            if not own_latest:
                receipt = _receipt_or_none(record, author, key, latest)
        elif own_latest:
            expect = latest
        else:
            # Judging by the receipt: a damaged one stops the write (DamagedFile).
            receipt = _receipt(receipts.read(record, author).get(key), latest)
            expect = read_through_writes(stream, author, receipt or 0, latest,
                                         latest_author=latest_author)
            if receipt is None and expect == 0 and latest > 0:
                raise stream.conflict(0, never_read=True)
            if expect < latest:
                raise stream.conflict(expect)
        written = stream.write(
            body, author=author, based_on=expect, summary=summary, proposal=proposal,
            links=links, temps=temps, folder=folder,
        )
    # The receipt row is written only where what the writer read cannot be told from the
    # versions (read_through_writes): its first write of the stream, or a write based on a
    # version that was neither its own nor on its receipt. Its writes in a row after that
    # cost no second file.
    if not own_latest and receipt != expect:
        _mark_quietly(record, author, key, written.version, f"wrote {written.path.name}")
    return written


def _receipt(version: int | None, latest: int) -> int | None:
    """A receipt's version, or None where it says nothing about what its writer saw: a
    version that does not exist (removed by hand, or a negative number written by hand)."""
    return version if version is not None and 0 <= version <= latest else None


def _receipt_or_none(record: Record, identity: str, key: str, latest: int) -> int | None:
    """The receipt, for a write that does not judge by it: one that cannot be read counts
    as none (and the mark after the write says why)."""
    try:
        return _receipt(receipts.read(record, identity).get(key), latest)
    except (OSError, BadInput):
        return None


def read_through_writes(stream: Stream, identity: str, read: int, latest: int, *,
                        latest_author: str | None = None) -> int:
    """What ``identity`` has read of ``stream``: its receipt's ``read``, or the newest
    version after it that it wrote itself (a write counts as a read of what it wrote:
    writing vN took a read of vN-1), up to ``latest`` (whose author the caller may know:
    ``latest_author``).

    write_checked writes a receipt row only where the versions cannot tell, so after
    ``read`` come the identity's own run of writes, then only others'; the run's end is
    found in O(log n) reads of front matter, one in the common cases. Where the row was
    lost or edited by hand the versions may not lie so; any version found is still one
    the identity wrote, so the answer can only be too low, which errs on the safe side
    (the stop sign asks for a read, the feed offers a version again).
    """
    if latest <= read:
        return read
    if (latest_author or author_of(stream, latest)) == identity:
        return latest
    if read + 1 == latest or author_of(stream, read + 1) != identity:
        return read
    low, high = read + 1, latest  # low: written by identity; high: not
    while high - low > 1:
        middle = (low + high) // 2
        if author_of(stream, middle) == identity:
            low = middle
        else:
            high = middle
    return low


def what_was_read(record: Record, identity: str) -> dict[str, int]:
    """What ``identity`` has read: its receipts (receipts.read, and its errors), each
    moved on through the versions it wrote itself since (read_through_writes). A stream
    it never read nor wrote has no receipt, and no version of it is looked at."""
    read = receipts.read(record, identity)
    hints: dict[Path, LatestHints] = {}
    for key, version in list(read.items()):
        stream = _stream_of(record, key)
        # One stat for a stream that did not move: this runs over every receipt.
        if stream is None or not os.path.exists(stream.path(version + 1)):
            continue
        folder = stream.folder.parent
        if folder not in hints:
            hints[folder] = LatestHints(folder, record.opened)
        latest = hints[folder].latest(stream.name, stream)
        read[key] = read_through_writes(stream, identity, version, latest)
    for hint in hints.values():
        hint.save()
    return read


def _stream_of(record: Record, key: str) -> Stream | None:
    """The stream a receipt key names; None for one that names none (a project gone from
    atlas.yaml, a row edited by hand)."""
    parts = receipts.parse_key(key)
    if parts is None or parts[0] not in record.config.projects:
        return None
    project, name = parts
    try:
        return (record.status_stream(project) if name is None
                else record.artifact_stream(name, project))
    except BadInput:
        return None


def _mark_quietly(record: Record, identity: str, key: str, version: int, done: str) -> None:
    """Update a receipt after the real work is done; a failure is a warning, not an error.

    The version is published (or read) already: reporting failure would invite a retry
    that can only hit the stop sign. A lost receipt errs on the safe side.
    """
    try:
        receipts.mark(record, identity, {key: version})
    except (OSError, BadInput) as exc:
        _receipt_lost(identity, done, exc)


def _receipt_lost(identity: str, done: str, exc: OSError | BadInput) -> None:
    reason = exc.strerror if isinstance(exc, OSError) else exc.message
    todo = f"; {exc.hint}" if isinstance(exc, BadInput) and exc.hint else ""
    warn(f"{done}, but could not update {identity}'s read receipt ({reason}){todo}")


def author_of(stream: Stream, version: int) -> str | None:
    """Who wrote ``version``; None if the file cannot be read."""
    try:
        return stream.read(version, head_only=True).author
    except (BadInput, OSError):
        return None


def read_marked(
    record: Record, stream: Stream, key: str, *, reader: str | None, version: int | None
) -> Version:
    """Read a version (the latest by default) and record the read in ``reader``'s receipt."""
    if reader is not None:
        check_name(reader, "identity")  # before anything is read or written
    if version is None:
        version = stream.latest_for_reading()
        if version == 0:
            raise NotFound(f"{stream.label} has no versions yet", hint="`atlas ls` lists topics")
    doc = stream.read(version)
    if reader:
        _mark_quietly(record, reader, key, doc.version, f"read {doc.path.name}")
    return doc
