"""A renderer set up in a child process while atlas reads the site's pages.

On a first run (no render cache), importing Python-Markdown and the site's extensions and
setting them up takes as long as reading a large site's pages, or longer, and the two
need each other for nothing: so the check forks at once, the child sets the renderer up
while atlas reads, then renders the pages atlas sends it (forking in its turn, as
renderpool.py does), and answers with what each yields, what setting the renderer up
said, and the snippet folders. atlas itself then never imports Python-Markdown.

Only where it pays: a first run, in a process that has not imported Python-Markdown (a
command server's worker has it already), with more than one CPU and fork. A child that
fails to answer is as if there were none: atlas renders what it needs itself.
"""

from __future__ import annotations

import marshal
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from atlas_files.check import renderpool
from atlas_files.check.renderpool import Job, Outcome
from atlas_files.check.siteconfig import SiteConfig


@dataclass(frozen=True)
class Answer:
    said: list[tuple[str, str]]  # what setting the renderer up said (key, message)
    snippet_bases: list[str]
    outcomes: dict[str, Outcome]


def worth_it() -> bool:
    return "markdown" not in sys.modules and hasattr(os, "fork") and renderpool.cpus() > 1


class Early:
    """The child and the two pipes to it."""

    def __init__(self, pid: int, to_child: int, from_child: int) -> None:
        self.pid, self._to, self._from = pid, to_child, from_child

    @classmethod
    def start(cls, site: SiteConfig) -> Early | None:
        jobs_r, jobs_w = os.pipe()
        out_r, out_w = os.pipe()
        pid = renderpool.fork_child(lambda: _serve(site, jobs_r, out_w), [jobs_w, out_r],
                                    [jobs_r, out_w])
        return None if pid is None else cls(pid, jobs_w, out_r)

    def render(self, texts: Mapping[str, Job]) -> Answer | None:
        """The outcome of rendering ``texts`` (uri: text, whole); None if the child
        cannot answer (it is then stopped)."""
        try:
            _send(self._to, dict(texts))
            said, bases, outcomes = _receive(self._from)
            return Answer([(k, m) for k, m in said], list(bases), renderpool.unflat(outcomes))
        except (OSError, EOFError, ValueError, TypeError):
            self.stop()
            return None

    def stop(self) -> None:
        if self.pid:
            for fd in (self._to, self._from):
                os.close(fd)
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = 0


def _serve(site: SiteConfig, jobs: int, out: int) -> None:  # pragma: no cover - the child
    from atlas_files.check.sitepages import Renderer  # noqa: PLC0415 - the child's to import

    said: list[tuple[str, str]] = []
    renderer = Renderer(site, lambda key, message: said.append((key, message)))
    while True:
        try:
            texts = _receive(jobs)
        except EOFError:
            return
        outcomes = renderpool.render_all(renderer, texts) or {
            uri: renderpool.render(renderer, *job) for uri, job in texts.items()}
        _send(out, [said, renderer.snippet_bases, renderpool.flat(outcomes)])


def _send(fd: int, value: Any) -> None:
    data = marshal.dumps(value)
    data = len(data).to_bytes(8, "big") + data
    while data:
        data = data[os.write(fd, data):]


def _receive(fd: int) -> Any:
    head = _exactly(fd, 8)
    return marshal.loads(_exactly(fd, int.from_bytes(head, "big")))


def _exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError
        data += chunk
    return data
