"""How long atlas lets a parser work on text someone else wrote.

Python-Markdown spends time on some texts that grows as a power of their length (thousands
of ``[a](`` in a row), and a Jinja template is a program (a loop in a loop runs for hours).
The site generator renders record bodies, and the links check renders and expands a
repository's pages: each page gets ``RENDER_CPU_S`` seconds of CPU (``cpu_limit``), and a
page that takes longer is shown or said as not rendered. The links check renders in child
processes, where a wall-clock deadline in the parent holds too (linkcheck/renderpool.py).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

RENDER_CPU_S = 5.0
# Seconds of CPU a page of a checked site may take to render or expand (unset: RENDER_CPU_S).
CHECK_ENV = "ATLAS_CHECK_RENDER_S"


class TooSlow(BaseException):
    """Raised inside ``cpu_limit``'s block when its time is spent. Not an Exception: a
    parser's own ``except Exception`` must not swallow it and go on."""


def check_seconds() -> float:
    """Seconds of CPU the links check gives a page (``ATLAS_CHECK_RENDER_S``, else
    ``RENDER_CPU_S``)."""
    try:
        asked = float(os.environ.get(CHECK_ENV, ""))
    except ValueError:
        return RENDER_CPU_S
    return asked if 0 < asked < 86400 else RENDER_CPU_S


@contextmanager
def cpu_limit(seconds: float) -> Iterator[None]:
    """Raise TooSlow inside the block once the process has spent ``seconds`` of CPU in
    it. Only in the main thread, where signals are delivered (a build, the links check's
    children); serve's watcher thread renders without a limit."""
    if (threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "setitimer")):
        yield
        return

    def expired(_signum: int, _frame: Any) -> None:
        raise TooSlow

    previous = signal.signal(signal.SIGVTALRM, expired)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)
