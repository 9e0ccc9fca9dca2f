"""frames.py: messages between atlas's own processes, over a real socket pair and pipe."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atlas_files.facts import frames

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.binary() | st.floats(
        allow_nan=False),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5)
    | st.tuples(inner, inner), max_leaves=20)


def _open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


@settings(max_examples=60, deadline=None)
@given(values=st.lists(VALUES, min_size=1, max_size=4), with_fds=st.booleans())
def test_messages_sent_back_to_back_come_back_one_by_one(values: list[Any],
                                                         with_fds: bool) -> None:
    ours, theirs = socket.socketpair()
    try:
        passed = [os.open(os.devnull, os.O_RDONLY) for _ in range(2)] if with_fds else []
        for value in values:  # all sent before any is read: none may swallow the next
            frames.send(ours, value, passed)
        for value in values:
            got, fds = frames.receive(theirs)
            assert got == value
            assert len(fds) == len(passed)
            for fd in fds:
                assert os.path.samestat(os.fstat(fd), os.fstat(passed[0]))
                os.close(fd)
        for fd in passed:
            os.close(fd)
    finally:
        ours.close()
        theirs.close()


def test_a_cut_or_oversized_message_is_refused_and_leaves_no_descriptor_open() -> None:
    before = _open_fds()
    ours, theirs = socket.socketpair()
    data = frames.pack({"op": "run", "argv": ["atlas"] * 100})
    fd = os.open(os.devnull, os.O_RDONLY)
    ours.sendmsg([data[:10]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                fd.to_bytes(4, sys.byteorder))])
    ours.close()
    with pytest.raises(EOFError):
        frames.receive(theirs)
    theirs.close()
    os.close(fd)
    assert _open_fds() == before

    ours, theirs = socket.socketpair()
    ours.sendall((1 << 30).to_bytes(frames.HEADER, "big"))
    with pytest.raises(ValueError, match="too long"):
        frames.receive(theirs, max_size=1 << 20)
    ours.close()
    theirs.close()


def test_a_pipe_carries_a_message_larger_than_its_buffer() -> None:
    reader, writer = os.pipe()
    big = {"page.md": ["id"] * 200_000}
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(reader)
        frames.write(writer, big)
        os._exit(0)
    os.close(writer)
    try:
        assert frames.read(reader) == big
        with pytest.raises(EOFError):
            frames.read(reader)
    finally:
        os.close(reader)
        os.waitpid(pid, 0)
