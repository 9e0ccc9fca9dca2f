"""A site's pages rendered in several processes at once.

Rendering the pages that links point into, with Python-Markdown and the site's extensions,
is most of what a cold links check of a MkDocs site costs. Once the renderer is set up (its
extensions imported and built), the process forks: each child renders a share of the
pages, largest first, and sends back what each rendering yields (ids, links, the snippets
it included) or the error it raised; the parent renders a share itself meanwhile. Nothing
else comes back: findings, and the render cache, are the parent's alone, made from these
outcomes exactly as from its own renderings.

It only ever saves time. Where fork is not available, with one CPU, or where the pages
are too small for a process to gain (unless ``ATLAS_CHECK_JOBS`` says how many), it does
nothing and the pages are rendered one by one as they are needed; a child that fails to
answer leaves its pages to be rendered so too.
"""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from atlas_files import frames
from atlas_files.linkcheck.siteplan import Rendered

if TYPE_CHECKING:
    from atlas_files.linkcheck.sitepages import Renderer

ENV = "ATLAS_CHECK_JOBS"
# Text a process must get to pay for its fork (about 5 ms of rendering).
MIN_SHARE = 16 << 10


@dataclass(frozen=True)
class Outcome:
    """What rendering one page gave: its rendering, or the error that stopped it."""

    rendered: Rendered | None
    snippets: tuple[tuple[str, str | None], ...] = ()
    error: str | None = None  # "TypeName: message"


Job = tuple[str, bool]  # a page's text, and whether its links are wanted too


def render(renderer: Renderer, text: str, whole: bool = True) -> Outcome:
    try:
        rendered = renderer.render(text, whole)
    except Exception as exc:  # noqa: BLE001 - an extension's bug: the caller says it
        return Outcome(None, error=f"{type(exc).__name__}: {exc}")
    return Outcome(rendered, tuple((s.asked, s.found) for s in renderer.snippets))


def jobs(texts: Mapping[str, Job]) -> int:
    """How many processes should render ``texts``: 1 means this one alone."""
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
    """The outcome of rendering each page of ``texts`` (uri: text, whole) that several
    processes rendered; empty where one process would do (the caller renders them as it
    goes)."""
    count = jobs(texts)
    if count < 2:
        return {}
    mine, *theirs = _shares(texts, count)
    children: list[tuple[int, int]] = []  # pid, the read end of its pipe
    # The children's collections leave the parent's objects (and their pages) alone. What
    # was frozen already (a command server's own objects, in its worker) stays frozen.
    frozen = gc.get_freeze_count()
    gc.freeze()
    try:
        for share in theirs:
            child = _fork(renderer, texts, share)
            if child is not None:
                children.append(child)
    finally:
        if not frozen:
            gc.unfreeze()
    out = {uri: render(renderer, *texts[uri]) for uri in mine}
    for pid, reader in children:
        out.update(_gather(pid, reader))
    return out


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


def _fork(renderer: Renderer, texts: Mapping[str, Job], share: list[str],
          ) -> tuple[int, int] | None:
    """A child rendering ``share``, and the pipe its outcomes come back on; None (and
    the pipe closed) where fork fails."""
    reader, writer = os.pipe()

    def child() -> None:
        frames.write(writer, flat({uri: render(renderer, *texts[uri]) for uri in share}))

    pid = fork_child(child, [reader], [writer])
    return None if pid is None else (pid, reader)


def flat(outcomes: Mapping[str, Outcome]) -> list[tuple[Any, ...]]:
    """``outcomes`` as marshal writes them."""
    out = []
    for uri, outcome in outcomes.items():
        found = outcome.rendered
        out.append((uri, None if found is None else sorted(found.ids),
                    None if found is None else list(found.links),
                    found is None or found.whole, list(outcome.snippets), outcome.error))
    return out


def unflat(answer: Any) -> dict[str, Outcome]:
    """What ``flat`` wrote, read back; ValueError or TypeError if it is not that."""
    return {uri: Outcome(None if ids is None else Rendered(frozenset(ids), tuple(links), whole),
                         tuple((asked, found) for asked, found in snippets), error)
            for uri, ids, links, whole, snippets, error in answer}


def child_answer(pid: int, reader: int) -> Any:
    """What the child ``fork_child`` started wrote to ``reader`` (closed here), once it has
    exited; None if it wrote nothing whole or did not exit 0."""
    try:
        answer = frames.read(reader)
    except (EOFError, ValueError, TypeError):
        answer = None
    finally:
        os.close(reader)
    _, status = os.waitpid(pid, 0)
    return answer if os.waitstatus_to_exitcode(status) == 0 else None


def _gather(pid: int, reader: int) -> dict[str, Outcome]:
    """The child's outcomes; none if it failed (its pages are then rendered here)."""
    answer = child_answer(pid, reader)
    if answer is None:
        return {}
    try:
        return unflat(answer)
    except (ValueError, TypeError):
        return {}
