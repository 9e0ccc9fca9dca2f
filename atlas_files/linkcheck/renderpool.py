"""A site's pages rendered in child processes, each page under a deadline.

Rendering the pages that links point into, with Python-Markdown and the site's extensions,
is most of what a cold links check of a MkDocs site costs, and the pages are someone
else's writing: some texts cost Python-Markdown time that grows as a power of their size,
and a Jinja template (the macros plugin's, sitemacros.py) can loop for hours. So no page
is rendered in atlas's own process where a child can do it. Once the renderer is set up
(its extensions imported and built), the process forks: each child renders a share of
the pages, largest first, and sends back what each rendering yields (ids, links, the
snippets it included) or the error it raised, one page at a time; the parent renders
nothing and watches the clock. Findings, and the render cache, are the parent's alone,
made from these outcomes exactly as from renderings of its own.

One deadline mechanism (``run_children``) holds every page: the child gives each page
``renderlimit.check_seconds()`` seconds of CPU (5 unless ``ATLAS_CHECK_RENDER_S`` says),
and the parent kills a child whose page has not come back after ``WALL_FACTOR`` times
that on the wall clock (a parser stuck in C code, where no signal handler runs), then
goes on with the rest of its share in a new child. A page that ran out is ``RanOut``:
the caller says so once and remembers it (rendercache.py), unless the child was killed
without having spent its CPU (a machine too busy to give it any: that says nothing
about the page). A caller may also give the whole batch a budget, past which no page is
started (the macros plugin).

How many children: as many as CPUs, where each gets 16 KB of text (``ATLAS_CHECK_JOBS``
says how many), and at least one. Where fork is not available, or a child dies without
answering, the page is rendered here, under the CPU limit alone.
"""

from __future__ import annotations

import gc
import os
import selectors
import signal
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from atlas_files.facts import frames, renderlimit
from atlas_files.linkcheck.siteplan import Rendered

if TYPE_CHECKING:
    from atlas_files.linkcheck.sitepages import Renderer

ENV = "ATLAS_CHECK_JOBS"
# Text a process must get to pay for its fork (about 5 ms of rendering).
MIN_SHARE = 16 << 10
# Wall-clock seconds a page may take per second of CPU it is given, before the parent
# kills its child: a busy machine gives a child a share of a CPU, not a whole one (a
# factor of 4 let a 2-core machine shared by many builds kill pages that had spent a
# fraction of their CPU).
WALL_FACTOR = 8


@dataclass(frozen=True)
class RanOut:
    """A page that took longer than ``seconds``: of CPU where ``certain`` (it would again,
    and may be remembered), else of the wall clock (a machine too busy to give it its
    CPU says nothing about the page)."""

    seconds: float
    certain: bool = True


@dataclass(frozen=True)
class Outcome:
    """What rendering one page gave: its rendering, the error that stopped it, or the
    limit it ran past."""

    rendered: Rendered | None
    snippets: tuple[tuple[str, str | None], ...] = ()
    error: str | None = None  # "TypeName: message"
    ran_out: RanOut | None = None


Job = tuple[str, bool]  # a page's text, and whether its links are wanted too


def render(renderer: Renderer, text: str, whole: bool = True) -> Outcome:
    try:
        rendered = renderer.render(text, whole)
    except Exception as exc:  # noqa: BLE001 - an extension's bug: the caller says it
        return Outcome(None, error=f"{type(exc).__name__}: {exc}")
    return Outcome(rendered, tuple((s.asked, s.found) for s in renderer.snippets))


def jobs(texts: Mapping[str, Job]) -> int:
    """How many processes should render ``texts``: 1 means one child does."""
    if len(texts) < 2 or not hasattr(os, "fork"):
        return 1
    asked = os.environ.get(ENV, "").strip()
    if asked:
        try:
            return max(1, min(int(asked), len(texts)))
        except ValueError:
            pass
    return max(1, min(cpus(), len(texts), sum(len(t) for t, _ in texts.values()) // MIN_SHARE))


def cpus() -> int:
    """The CPUs this process may run on (``ATLAS_CHECK_JOBS``, where set)."""
    asked = os.environ.get(ENV, "").strip()
    if asked.isdigit():
        return max(1, int(asked))
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _shares(texts: Mapping[str, Job], count: int) -> list[list[str]]:
    """The pages in ``count`` shares of about equal text, each largest first."""
    shares: list[list[str]] = [[] for _ in range(count)]
    sizes = [0] * count
    for uri in sorted(texts, key=lambda u: len(texts[u][0]), reverse=True):
        least = sizes.index(min(sizes))
        shares[least].append(uri)
        sizes[least] += len(texts[uri][0])
    return shares


def render_all(renderer: Renderer, texts: Mapping[str, Job]) -> dict[str, Outcome]:
    """The outcome of rendering each page of ``texts`` (uri: text, whole) in children;
    a page missing had no answer (a child died, or fork failed): the caller renders it
    as it goes."""
    if not hasattr(os, "fork"):
        return {}
    answers = run_children(lambda uri: flat(render(renderer, *texts[uri])),
                           _shares(texts, jobs(texts)), renderlimit.check_seconds())
    out = {}
    for uri, answer in answers.items():
        outcome = _outcome(answer)
        if outcome is not None:
            out[uri] = outcome
    return out


def render_one(renderer: Renderer, text: str, whole: bool = True) -> Outcome:
    """The outcome of rendering one page, in a child under the deadline; here, under the
    CPU limit alone, where there is no child (no fork, or it died without answering)."""
    seconds = renderlimit.check_seconds()
    if hasattr(os, "fork"):
        answers = run_children(lambda _: flat(render(renderer, text, whole)), [[""]], seconds)
        outcome = _outcome(answers.get(""))
        if outcome is not None:
            return outcome
    try:
        with renderlimit.cpu_limit(seconds):
            return render(renderer, text, whole)
    except renderlimit.TooSlow:
        return Outcome(None, ran_out=RanOut(seconds))


def _outcome(answer: Any) -> Outcome | None:
    """An outcome as a child answered it (None: no answer, or one that does not read)."""
    if isinstance(answer, RanOut):
        return Outcome(None, ran_out=answer)
    if answer is None:
        return None
    try:
        return unflat(answer)
    except (ValueError, TypeError):
        return None


def flat(outcome: Outcome) -> tuple[Any, ...]:
    """``outcome`` (rendered or failed) as marshal writes it."""
    found = outcome.rendered
    return (None if found is None else sorted(found.ids),
            None if found is None else list(found.links),
            found is None or found.whole, list(outcome.snippets), outcome.error)


def unflat(answer: Any) -> Outcome:
    """What ``flat`` wrote, read back; ValueError or TypeError if it is not that."""
    ids, links, whole, snippets, error = answer
    return Outcome(None if ids is None else Rendered(frozenset(ids), tuple(links), whole),
                   tuple((asked, found) for asked, found in snippets), error)


@dataclass
class _Child:
    pid: int
    reader: int
    keys: list[str]  # those not answered yet, in the order the child works through them
    since: float  # when its current key began (monotonic)
    cpu: float  # the CPU it had spent when its current key began


def run_children(work: Callable[[str], Any], shares: Sequence[Sequence[str]], seconds: float,
                 total: float | None = None, setup: Callable[[], None] | None = None,
                 ) -> dict[str, Any]:
    """``work(key)`` for every key of ``shares``, each share in a child of its own (which
    runs ``setup()`` first), in order: what it returned (marshalled), or RanOut for a key
    that took more than ``seconds`` of CPU, or ``WALL_FACTOR`` times that on the wall
    clock (its child is killed; the rest of its share goes on in a new one). Past
    ``total`` seconds (for the whole batch) no child starts another key: the key each is
    on keeps its own deadline, so every run gets through one key a child at least. A
    key with no answer: its child died, fork failed, or the total ran out first."""
    out: dict[str, Any] = {}
    started = time.monotonic()
    closing = None if total is None else started + total
    children: dict[int, _Child] = {}  # by reader
    # Not select(): a long-lived caller (a server's worker) may hold descriptors past 1024.
    waiting = selectors.DefaultSelector()
    # The children's collections leave the parent's objects (and their pages) alone. What
    # was frozen already (a command server's own objects, in its worker) stays frozen.
    frozen = gc.get_freeze_count()
    gc.freeze()

    def start(keys: list[str]) -> None:
        reader, writer = os.pipe()
        pid = fork_child(lambda: _serve(work, keys, seconds, writer, setup), [reader], [writer])
        if pid is not None:
            children[reader] = _Child(pid, reader, keys, time.monotonic(), 0.0)
            waiting.register(reader, selectors.EVENT_READ)

    def end(child: _Child, kill: bool) -> float:
        del children[child.reader]
        waiting.unregister(child.reader)
        return _end(child, kill)

    try:
        for share in shares:
            if share:
                start(list(share))
        while children:
            now = time.monotonic()
            due = min(c.since + seconds * WALL_FACTOR for c in children.values())
            if closing is not None and now < closing:
                due = min(due, closing)
            wait = max(0.0, due - now)
            ready = [key.fd for key, _ in waiting.select(wait)]
            for reader in ready:
                child = children[reader]
                try:
                    key, ran_out, answer, cpu = frames.read(reader)
                except (EOFError, ValueError, TypeError):
                    end(child, kill=False)  # died: its keys stay unanswered
                    continue
                out[key] = RanOut(seconds) if ran_out else answer
                if key in child.keys:
                    child.keys.remove(key)
                child.since, child.cpu = time.monotonic(), float(cpu)
                over = closing is not None and child.since >= closing
                if over or not child.keys:
                    end(child, kill=over)
            now = time.monotonic()
            for child in [c for c in children.values()
                          if c.reader not in ready and now >= c.since + seconds * WALL_FACTOR]:
                spent = end(child, kill=True) - child.cpu
                key, *rest = child.keys
                out[key] = RanOut(seconds) if spent >= seconds \
                    else RanOut(seconds * WALL_FACTOR, certain=False)
                if rest and (closing is None or now < closing):
                    start(rest)
    finally:
        for child in list(children.values()):
            end(child, kill=True)
        waiting.close()
        if not frozen:
            gc.unfreeze()
    return out


def _end(child: _Child, kill: bool) -> float:
    """Reap ``child`` (killed first, if ``kill``); the CPU seconds it spent in all."""
    os.close(child.reader)
    if kill:
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, _, usage = os.wait4(child.pid, 0)
    return float(usage.ru_utime + usage.ru_stime)


def _serve(work: Callable[[str], Any], keys: Sequence[str], seconds: float, writer: int,
           setup: Callable[[], None] | None) -> None:  # pragma: no cover - the child
    """Answer each key in turn, each under the CPU limit (see run_children)."""
    if setup is not None:
        setup()
    for key in keys:
        try:
            with renderlimit.cpu_limit(seconds):
                answer, ran_out = work(key), False
        except renderlimit.TooSlow:
            answer, ran_out = None, True
        frames.write(writer, (key, ran_out, answer, time.process_time()))


def fork_child(run: Callable[[], None], child_closes: Sequence[int],
               parent_closes: Sequence[int]) -> int | None:
    """Fork a child that closes ``child_closes``, runs ``run()`` and exits (0 if it
    returned); in the parent, close ``parent_closes`` and return the child's pid (None,
    every descriptor closed, where fork fails)."""
    try:
        # Python 3.12 warns of fork in a process with threads (a test runner, a program
        # embedding atlas, a server's worker): the child only computes and writes to its
        # pipe.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        for fd in (*child_closes, *parent_closes):
            os.close(fd)
        return None
    if pid == 0:  # pragma: no cover - the child; what it answers is what tests compare
        code = 1
        try:
            for fd in child_closes:
                os.close(fd)
            run()
            code = 0
        finally:
            os._exit(code)  # nothing of the parent's (buffers, atexit) runs twice
    for fd in parent_closes:
        os.close(fd)
    return pid
