"""Peak memory of a child process as a test can judge it.

Linux folds the memory a child had before its exec into the child's ``ru_maxrss``, and
that memory is the parent's (a vfork child shares it), so a child started by a pytest
worker reads at least the worker's own peak: late in a full run, several hundred MB for
a command that needed fifty. A bound on a command's peak is therefore judged above the
worker's peak at the time it started the command.
"""

from __future__ import annotations


def own_peak_kb() -> int:
    """This process's peak resident memory so far (VmHWM), in KiB; 0 where unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def bound_kb(limit_kb: int, inherited_kb: int, slack_kb: int = 64 * 1024) -> int:
    """The bound to hold a child's ``ru_maxrss`` (KiB) to: ``limit_kb``, or the parent's
    peak when it started the child plus ``slack_kb`` (the interpreter's own), whichever
    is higher."""
    return max(limit_kb, inherited_kb + slack_kb)
