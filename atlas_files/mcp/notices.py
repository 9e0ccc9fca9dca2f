"""What `atlas mcp --http` says on its owner's terminal about requests anyone can send.

Connection requests, malformed HTTP and refused client documents come from strangers as
often as from the owner, so each kind of line is said at most ``per_window`` times a
window; the rest are counted, and when the window ends one line says how many were not
shown and where to look instead (`atlas mcp pending` lists every waiting request). A
problem that lasts (a damaged state file) is said once, and again only once it changed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

PER_WINDOW = 5
WINDOW_S = 60.0


class Notices:
    """The terminal's lines, bounded per kind and window. ``say`` prints one line; it is
    called from the event loop and from worker threads, hence the lock."""

    def __init__(self, say: Callable[[str], None], per_window: int = PER_WINDOW,
                 window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic,
                 ) -> None:
        self._say = say
        self.per_window = per_window
        self.window_s = window_s
        self.clock = clock
        self._lock = threading.Lock()
        self._started = 0.0
        self._shown: dict[str, int] = {}
        self._hidden: dict[str, tuple[int, str]] = {}  # kind -> (count, what to do)
        self._timer: threading.Timer | None = None
        self._lasting: dict[str, str] = {}

    def say(self, kind: str, line: str, instead: str = "") -> None:
        """Say ``line`` unless this window said ``per_window`` lines of ``kind``; then
        count it, and at the window's end say how many of ``kind`` were not shown, with
        ``instead`` (where to look)."""
        if self.allow(kind, instead):
            self._say(line)

    def allow(self, kind: str, instead: str = "") -> bool:
        """Whether a line of ``kind`` may be shown now (counted either way)."""
        with self._lock:
            now = self.clock()
            if now - self._started >= self.window_s and not self._hidden:
                self._started, self._shown = now, {}
            shown = self._shown.get(kind, 0)
            if shown < self.per_window:
                self._shown[kind] = shown + 1
                return True
            count, _ = self._hidden.get(kind, (0, instead))
            self._hidden[kind] = (count + 1, instead)
            if self._timer is None:
                left = max(0.0, self._started + self.window_s - now)
                self._timer = threading.Timer(left, self.flush)
                self._timer.daemon = True
                self._timer.start()
            return False

    def flush(self) -> None:
        """Say what this window did not show, and start a new window."""
        with self._lock:
            hidden, self._hidden = self._hidden, {}
            self._timer = None
            self._started, self._shown = self.clock(), {}
            for kind, (count, instead) in hidden.items():
                self._say(f"atlas mcp: {count} more {kind} in the last "
                          f"{self.window_s:g} s, not shown" + (f"; {instead}" if instead else ""))

    def lasting(self, key: str, line: str | None) -> None:
        """A condition that lasts: ``line`` is said when it first holds or changes;
        None says it no longer holds (and nothing is printed)."""
        with self._lock:
            if line is None:
                self._lasting.pop(key, None)
                return
            if self._lasting.get(key) == line:
                return
            self._lasting[key] = line
            self._say(line)

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


class Bounded(logging.Filter):
    """A logging filter that passes each message template through :meth:`Notices.say`'s
    bound: uvicorn's "Invalid HTTP request received." or a refused client document, one
    per malformed request, must not flood the terminal either. Records at ERROR and above
    (a bug's traceback) are bounded too, by their own kind."""

    def __init__(self, notices: Notices) -> None:
        super().__init__()
        self.notices = notices

    def filter(self, record: logging.LogRecord) -> bool:
        return self.notices.allow(f"log lines like {str(record.msg)[:60]!r}")
