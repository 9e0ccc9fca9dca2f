"""This machine's clock against the clock of the volume a record lives on.

A file system stamps a new file's mtime with its own clock: the kernel's on a local disk,
the server's on NFS, the master's on MooseFS. Creating an empty file and reading its
mtime back, between two readings of this machine's clock, bounds how far the two clocks
disagree. Machines that share a volume share that one reference, so each one's offset
to it says how far apart their clocks are: what a lease's expiry, written by one clock
and judged by another, depends on.

The bound is only as fine as the volume's stamps: a volume that keeps whole seconds
(MooseFS, ext3) leaves a second of doubt per reading, which ``measure_best`` narrows by
reading a few times. On a record that travels by git every clone is its own volume, so
the offset says nothing about the other machines there.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

from atlas_files.facts import layout

# File times come from the kernel's coarse clock, a tick (1-10 ms) behind the clock a
# process reads; without this slack a local disk would seem a few ms behind its machine.
SLACK_S = 0.02
_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
          | getattr(os, "O_CLOEXEC", 0))


class ClockOffset(NamedTuple):
    """This machine's clock minus the volume's, in seconds (positive: this machine is
    ahead); the true offset lies within ``offset_s`` +/- ``error_s``."""

    offset_s: float
    error_s: float
    resolution_s: float  # how finely the volume stamps file times (1.0: whole seconds)

    @property
    def low(self) -> float:
        return self.offset_s - self.error_s

    @property
    def high(self) -> float:
        return self.offset_s + self.error_s

    def beyond(self, allowance_s: float) -> float:
        """How far the offset surely exceeds ``allowance_s`` either way (0 if it may not)."""
        return max(0.0, abs(self.offset_s) - self.error_s - allowance_s)

    def to_json(self) -> dict[str, Any]:
        return {"offset_s": round(self.offset_s, 3), "error_s": round(self.error_s, 3),
                "resolution_s": self.resolution_s}


def _interval(low: float, high: float, resolution_s: float) -> ClockOffset:
    return ClockOffset((low + high) / 2, (high - low) / 2, resolution_s)


def _sample(folder: Path) -> tuple[float, float, float]:
    """(low, high, resolution) of one reading; OSError if ``folder`` takes no new file."""
    probe = folder / f"{layout.TEMP_PREFIX}clock-{os.getpid()}-{os.urandom(4).hex()}"
    before = time.time_ns()
    fd = os.open(probe, _FLAGS, 0o600)
    try:
        stamped = os.fstat(fd).st_mtime_ns
        after = time.time_ns()
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)
    # A stamp with no fraction of a second: the volume keeps whole seconds and the write
    # happened anywhere in the second after it. (A finer volume lands on a whole second
    # one time in a billion, and then only widens this bound.)
    resolution = 1.0 if stamped % 1_000_000_000 == 0 else 0.0
    low = (before - stamped) / 1e9 - resolution - SLACK_S
    high = (after - stamped) / 1e9 + SLACK_S
    return low, high, resolution


def measure(folder: Path) -> ClockOffset:
    """One reading in ``folder`` (an empty temp file, created and removed at once)."""
    low, high, resolution = _sample(folder)
    return _interval(low, high, resolution)


def measure_best(folder: Path, readings: int = 5, spacing_s: float = 0.13) -> ClockOffset:
    """The bound narrowed by several readings a little apart: on a volume of whole
    seconds each reading falls at another point of the second, and the offset lies in
    every reading's interval. Clocks stepped between readings (intervals that share no
    point) fall back to the last reading."""
    low, high, resolution = _sample(folder)
    if resolution == 0.0:
        return _interval(low, high, resolution)
    for _ in range(readings - 1):
        time.sleep(spacing_s)
        lo, hi, _ = _sample(folder)
        if max(low, lo) > min(high, hi):
            return _interval(lo, hi, resolution)
        low, high = max(low, lo), min(high, hi)
    return _interval(low, high, resolution)


def skew(writer: ClockOffset, reader: ClockOffset) -> ClockOffset:
    """The writer's clock minus the reader's, each measured against the same volume."""
    return ClockOffset(writer.offset_s - reader.offset_s, writer.error_s + reader.error_s,
                       max(writer.resolution_s, reader.resolution_s))
