"""A worker forked ahead of the next command, so that a command starts in a process that
already exists: the fork is no longer part of any served command's time (bench/bench_sync.py).

The server keeps one spare, which waits on its end of a socket pair. The server hands it
the client's connection and standard streams (the descriptors themselves, SCM_RIGHTS) and
the request, and it becomes that command's worker exactly as a freshly forked one would.
A spare left waiting for a while first writes to every object the server loaded: each
page it shares with the server is then its own, so the command does not stop at each
first write to copy one (the price is the spare's memory, a copy of the server's, which
the kernel frees as the worker exits: the worker reports its status before that,
worker.py). The strings and numbers those objects hold are left shared: writing to them
too costs several times as much, in every spare, on a machine with few CPUs the commands
also need. The server lists those objects once, each time what it holds changes
(``take_stock``), rather than each spare: a listing is one pass that cannot stop halfway,
milliseconds long with a large queue kept, which a command arriving meanwhile would
wait out, whereas the spare's own pass looks for a command every ``_BATCH`` objects.

A spare forked while a command runs waits SETTLE_S before it copies, or less if the
server tells it that no command is running any more (``settle``); one forked while none
runs is told at once. A spare is forked when the server holds no command's standard
streams (they are closed once handed over), and again whenever the server has learned new
imports (preload.py) or read a folder ahead (watching.py), which a spare forked earlier
would lack. A spare whose server goes away (its end of the
pair closes) exits. One that dies unexpectedly is not replaced after the third time: the
server then forks per command, as it would without spares.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from atlas_files.facts import frames

# How long a new spare waits before it copies the server's pages: long enough that a
# command running beside it is not slowed down on a machine with few CPUs.
SETTLE_S = 0.25
MAX_DEATHS = 3
# Signals whose server handlers must never run in a child: blocked across a fork.
BLOCKED_ACROSS_FORK = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
_BATCH = 1_000  # objects between two looks for a command: a fraction of a millisecond
SETTLE = "settle"  # the server's word for "no command runs beside you now"

Work = Callable[[socket.socket, dict[str, Any], list[int], list[socket.socket]], NoReturn]


class Spare:
    """The server's side of one spare: its pid, a pidfd to learn of its death, and the
    socket the command is handed over."""

    def __init__(self, pid: int, channel: socket.socket) -> None:
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.channel = channel

    def hand_over(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> bool:
        """Give the spare a command; False if it cannot take it (then fork as before)."""
        try:
            frames.send(self.channel, request, [conn.fileno(), *fds])
        except OSError:
            return False
        return True

    def settle(self) -> None:
        """Tell the spare that no command runs beside it now: it makes the server's pages
        its own at once rather than after SETTLE_S."""
        try:
            frames.send(self.channel, SETTLE)
        except OSError:
            pass  # it died: the server learns so from its pidfd

    def dismiss(self) -> None:
        """Close the spare's channel (it exits on its own) and wait for it."""
        if self.channel.fileno() != -1:
            self.channel.close()
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        os.close(self.pidfd)


@contextlib.contextmanager
def signals_blocked() -> Iterator[None]:
    """BLOCKED_ACROSS_FORK blocked while a child is forked: a signal that comes first (a
    client's Ctrl-C, passed on) must not run the server's handler in the child, which
    unblocks them once its handlers are its own."""
    signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED_ACROSS_FORK)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, BLOCKED_ACROSS_FORK)


def fork(inherited: list[socket.socket], work: Work) -> Spare:
    """Fork a spare that closes ``inherited`` (the server's listener and the connections of
    commands running now) and waits for a command to run with ``work``. Call it within
    signals_blocked(), while the server holds no command's streams (the spare would keep
    them open)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            for sock in inherited:
                sock.close()
            _wait(theirs, work)
        finally:
            os._exit(1)  # _wait never returns; this is for an exception in it
    theirs.close()
    return Spare(pid, ours)


def _wait(channel: socket.socket, work: Work) -> NoReturn:
    # The server's handlers and wakeup descriptor are not the spare's.
    signal.set_wakeup_fd(-1)
    for signum in BLOCKED_ACROSS_FORK:
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, BLOCKED_ACROSS_FORK)
    owned = False
    while True:
        if not owned and not select.select([channel], [], [], SETTLE_S)[0]:
            owned = _own_pages(channel)
            continue
        try:
            request, fds = frames.receive(channel)
        except (EOFError, OSError):
            os._exit(0)  # the server closed the pair: it is stopping
        if request != SETTLE:
            break
        if not owned:
            owned = _own_pages(channel)
    if not fds:
        os._exit(1)
    channel.close()
    conn = socket.socket(fileno=fds[0])
    work(conn, request, fds[1:], [])


# What the server held when it last took stock: the objects a spare writes to.
_stock: list[object] = []


def take_stock() -> None:
    """In the server, once what it holds has changed (started, imports learned, a folder
    read ahead): freeze it, shared with the workers and never scanned by the collector,
    and list it for the spares forked from now on."""
    global _stock
    _stock = []  # not listed itself, nor keeping alive what the server has let go
    gc.unfreeze()
    _stock = gc.get_objects()
    gc.freeze()


def _own_pages(channel: socket.socket) -> bool:
    """Write to every object the server listed (a reference taken and dropped), so the
    pages the spare shares with the server become its own before a command needs them;
    stopped as soon as a word from the server arrives (a command then waits at most one
    batch). Whether every object was written."""
    for start in range(0, len(_stock), _BATCH):
        if select.select([channel], [], [], 0)[0]:
            return False
        for obj in _stock[start:start + _BATCH]:
            sys.getrefcount(obj)
    return True
