"""Write the MkDocs project of a record: ``mkdocs.yml``, ``docs/`` and ``overrides/``.

The record is read once into a snapshot (``model``); topic pages are written by
``topics``, then the pages that need every topic (the artifacts index and the marks, by
``listings``; recent activity on the home page) and the boards.

Only the home page, the boards and ``assets/atlas-build.js`` (the build's time, which
every page's footer shows through the site's script) change with every build; the config
never does, since both engines start from scratch when it changed.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from atlas_files.facts import timeutil
from atlas_files.protocol.leases import ADVISORY
from atlas_files.protocol.tasks import ADVISORY as TASK_ADVISORY
from atlas_files.sitegen import boards, listings, model, pages, topics, urls
from atlas_files.sitegen.cache import CACHE_DIR, SiteCache, TopicCache
from atlas_files.sitegen.files import Writer, prepare_out_dir
from atlas_files.sitegen.sanitize import BodyRenderer

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class DocsResult:
    out_dir: Path
    docs_dir: Path
    config_file: Path
    pages: int
    topics: int
    versions: int
    problems: tuple[str, ...]
    seconds: float
    seconds_markdown: float  # of ``seconds``, Python-Markdown rendering bodies
    page_files: tuple[str, ...] = ()  # every page, relative to docs/, for engines.verify


def site_name(record: Record) -> str:
    name = Path(os.path.realpath(record.root)).name or "record"
    return "atlas: " + (re.sub(r"[^A-Za-z0-9 ._-]+", "-", name)[:80] or "record")


def site_template() -> Traversable:
    return resources.files("atlas_files").joinpath("site")


def write_docs(
    record: Record,
    out_dir: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
    now: datetime | None = None,
) -> DocsResult:
    """Write ``mkdocs.yml``, ``docs/`` and ``overrides/`` for ``record`` into ``out_dir``."""
    started = time.perf_counter()
    out = prepare_out_dir(record, out_dir)
    now = now or timeutil.now()
    snap = model.load(record, now)
    name = site_name(record)
    with Writer(out / CACHE_DIR) as cache_dir, Writer(out / "docs") as docs, \
            Writer(out / "overrides") as theme, Writer(out) as top:
        ctx = pages.PageContext(snap, BodyRenderer(), SiteCache(cache_dir))
        memos = TopicCache(cache_dir, topics.stamp(record))
        versions, page_files = _write_pages(ctx, record, docs, name, progress, memos)
        ctx.cache.save()
        memos.save()
        template = site_template()
        theme.copy_tree(template.joinpath("overrides"), ".")
        theme.prune()
        top.write("mkdocs.yml", render_config(snap, name))
    config_file = out / "mkdocs.yml"
    return DocsResult(
        out_dir=out, docs_dir=out / "docs", config_file=config_file, pages=len(page_files),
        topics=len(ctx.rows), versions=versions,
        problems=tuple(f"{p.where}: {p.message}" for p in snap.problems),
        seconds=time.perf_counter() - started, seconds_markdown=ctx.renderer.seconds_markdown,
        page_files=page_files,
    )


def _write_pages(ctx: pages.PageContext, record: Record, docs: Writer, name: str,
                 progress: Progress | None, memos: TopicCache) -> tuple[int, tuple[str, ...]]:
    """Every page and the site's assets into ``docs``, the rest pruned; (versions shown,
    the pages, relative to docs/)."""
    snap = ctx.snap
    total = sum(len(p.topics) for p in snap.projects) + len(snap.projects) + 7
    done = 0

    def step(n: int = 1) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress("write", done, total)

    versions = 0
    for chunk in topics.write_topics(ctx, record, docs, memos):
        versions += chunk.versions
        step(chunk.topics)
    latest_status = {}
    for project in snap.projects:
        status = model.read_versions(record.status_stream(project.name),
                                     project.status_versions, record, snap.problems)
        latest_status[project.name] = status[-1] if status else None
        page = topics.guarded_page(ctx, f"projects/{project.name}/status",
                                   partial(pages.status_page, ctx, project, status))
        docs.write(urls.status_page(project.name), page or pages.status_page(ctx, project, []))
        step()
    boards_and_indexes: tuple[Callable[[], list[listings.Page]], ...] = (
        lambda: [(urls.DECISIONS, boards.decisions(ctx))],
        lambda: [(urls.LEASES, boards.leases(ctx, ADVISORY))],
        lambda: [(urls.tasks_page(p.name), boards.tasks(ctx, p, TASK_ADVISORY))
                 for p in snap.projects],
        lambda: [(urls.TELEMETRY, boards.telemetry(ctx))],
        lambda: listings.artifacts_pages(ctx),
        lambda: listings.marks_pages(ctx),
        lambda: [(urls.HOME, pages.home(ctx, latest_status, name))],
    )
    for render in boards_and_indexes:
        for rel, text in render():
            docs.write(rel, text)
        step()
    docs.copy_tree(site_template().joinpath("assets"), "assets")
    docs.write(BUILD_SCRIPT, build_script(snap.now))
    page_files = tuple(sorted(p.relative_to(docs.root).as_posix() for p in docs.written
                              if p.suffix == ".md"))
    docs.prune()
    return versions, page_files


BUILD_SCRIPT = "assets/atlas-build.js"


def build_script(now: datetime) -> str:
    """The one asset that changes with every build: when it was, for the pages' footers."""
    info = {"builtAt": timeutil.format_time(now),
            "builtAtText": now.strftime("%Y-%m-%d %H:%M UTC")}
    return ("// Written by `atlas site build`: the time of the build, shown in every page's "
            f"footer.\nwindow.atlasBuild = {json.dumps(info)};\n")


def render_config(snap: model.Snapshot, name: str) -> str:
    """The template's settings, with this record's name and nav filled in. Nothing in it
    changes from one build to the next unless the record's projects do: a changed config
    makes an engine build every page again (Zensical's cache is keyed by it)."""
    config: dict[str, Any] = yaml.safe_load(site_template().joinpath("mkdocs.yml").read_text())
    config["site_name"] = name
    config["nav"] = [
        {"Home": urls.HOME},
        {"Status": [{p.name: urls.status_page(p.name)} for p in snap.projects]},
        {"Artifacts": urls.ARTIFACTS},
        {"Decisions": urls.DECISIONS},
        {"Tasks": [{p.name: urls.tasks_page(p.name)} for p in snap.projects]},
        {"Leases": urls.LEASES},
        {"Telemetry": urls.TELEMETRY},
        {listings.MARKS_TITLE: urls.TAGS},
    ]
    config.setdefault("extra", {})["atlas"] = {"record": name.removeprefix("atlas: ")}
    head = ("# Generated by `atlas site build` from site/mkdocs.yml; rebuilt on every build.\n"
            "# Build it again with `mkdocs build` (or `zensical build`) in this folder.\n")
    return head + yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
