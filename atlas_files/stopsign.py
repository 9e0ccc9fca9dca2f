"""The version-jump stop sign: a write checked against what its writer read.

A write names the version it was based on (``expect``, or what the writer's receipt says
it read); if the stream moved past it, nothing is written and the writer gets
VersionConflict (optimistic concurrency control: validate at commit, redo rather than
overwrite). Reads through here record what was read, so the next write knows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from atlas_files import fsio, receipts
from atlas_files.documents import Stream, Version, check_body_size
from atlas_files.errors import BadInput, NotFound, warn
from atlas_files.names import check_name
from atlas_files.record import Record


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
    """Write the next version of ``stream`` under the stop sign, then update the receipt.

    ``expect`` is the version the writer read; None means "whatever my receipt says". A
    writer that never read an existing stream, or whose read is out of date, is refused
    with VersionConflict and nothing is written.
    """
    # Before anything is read: too large a body is bad input whatever the versions say.
    check_body_size(body.encode("utf-8"), record.config.body_limit)
    with contextlib.ExitStack() as stack:
        # The writer's receipts are locked and read once, for the stop sign and for the
        # mark of what it wrote. Where they cannot be had (or have no lock file yet: a
        # refused write makes nothing), the write goes on without them, the receipt read
        # unlocked and marked after (a lost receipt errs on the safe side), except that a
        # write that must judge by a damaged receipt stops.
        try:
            row: receipts.Row | None = stack.enter_context(
                receipts.held(record, author, make=False))
        except BadInput:
            if expect is None:
                raise
            row = None
        except OSError:
            row = None
        # The topic's folder is opened once, to list it and to publish in it.
        try:
            folder: fsio.Folder | None = stack.enter_context(
                fsio.open_folder(stream.folder, within=stream.within))
        except OSError:  # not made yet, or damaged: the write opens (or refuses) it
            folder = None
        versions, temps = stream.scan(folder)
        latest = versions[-1] if versions else 0
        if expect is not None:
            if expect < 0:
                raise BadInput(f"--expect {expect}: versions start at 0 (nothing read yet)")
            if expect > latest:
                raise BadInput(
                    f"you expect {stream.label} to be at v{expect}, but it is at v{latest}",
                    hint="check the number you passed to --expect (`atlas history` lists "
                    "versions)",
                )
            if expect < latest:
                raise stream.conflict(expect)
        else:
            read = row.current if row is not None else receipts.read(record, author)
            read_version = read.get(key)
            if read_version is not None and not 0 <= read_version <= latest:
                # The receipt names a version that does not exist (removed by hand, or a
                # negative number written by hand): it says nothing about what this writer
                # has seen.
                read_version = None
            if latest and (read_version or 0) < latest and author_of(stream, latest) == author:
                # A write counts as a read of what it wrote: the author's next write expects
                # its own version even if the receipt update after that write was lost.
                read_version = latest
            if read_version is None and latest > 0:
                raise stream.conflict(0, never_read=True)
            expect = read_version or 0
            if expect < latest:
                raise stream.conflict(expect)
        written = stream.write(
            body, author=author, based_on=expect, summary=summary, proposal=proposal,
            links=links, temps=temps, folder=folder,
        )
        done = f"wrote {written.path.name}"
        if row is None:
            _mark_quietly(record, author, key, written.version, done)
        else:
            try:
                row.update({key: written.version})
            except (OSError, BadInput) as exc:
                _receipt_lost(author, done, exc)
    return written


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
    warn(f"{done}, but could not update {identity}'s read receipt ({reason})")


def author_of(stream: Stream, version: int) -> str | None:
    """Who wrote ``version``; None if the file cannot be read."""
    try:
        return stream.read(version).author
    except BadInput:
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
