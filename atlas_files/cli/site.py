"""`atlas site build | serve`: the record as a browsable site, built by MkDocs + Material
or by Zensical."""

from __future__ import annotations

import sys
from typing import Any

import click

from atlas_files.api import site as api
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json, print_warning
from atlas_files.fast.terminal import unfiltered

_STAGES = {"write": "writing pages", "build": "building the site"}


class _Bars:
    """One click progress bar per stage, fed by the library's progress callback."""

    def __init__(self) -> None:
        self.stage: str | None = None
        self.bar: Any = None
        self.done = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.close()
            self.stage, self.done = stage, 0
            self.bar = click.progressbar(length=total, label=_STAGES.get(stage, stage),
                                         file=unfiltered(sys.stderr))
            self.bar.__enter__()
        if done > self.done:
            self.bar.update(done - self.done)
            self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


_engine_option = click.option(
    "--engine", type=click.Choice(api.ENGINES), default=None,
    help="mkdocs (MkDocs + Material) or zensical (Material's successor; "
    "pip install 'atlas-files[zensical]'). Default: site.engine in atlas.yaml, else mkdocs.")


@click.group()
def site() -> None:
    """The record as a browsable static site (MkDocs + Material, or Zensical).

    The site is a snapshot taken at build time: only lease countdowns, ages and
    telemetry staleness are recomputed in the reader's browser. Everything written by
    agents is escaped or sanitised before it reaches a page.
    """


@site.command()
@click.option("--out", "out_dir", metavar="DIR", type=click.Path(file_okay=False),
              help="Where to write mkdocs.yml, docs/ and the built site/ "
              "(default: beside the record, <record>-site). Must lie outside the record, "
              "and neither be nor hold a symlink.")
@_engine_option
@json_option
@pass_ctx
def build(ctx: Invocation, out_dir: str | None, engine: str | None, as_json: bool) -> None:
    """Write the record's MkDocs project into DIR and build it into DIR/site.

    DIR/mkdocs.yml and DIR/docs/ are plain files (search and tags plugins only, no
    hooks), so `mkdocs build` or `zensical build` can build the same folder again. The
    build then checks what the engine wrote: a page or the search index missing is an
    error (exit 2), whatever the engine's own exit code said.

    A record file that cannot be read, or whose body is over the record's body_limit,
    is left out, named on stderr and in the JSON's "problems", and the build goes on
    (exit 0); `atlas check` says how to fix it. Nothing is written or deleted outside
    DIR: a DIR that is a symlink, or holds one, is refused (exit 2).
    """
    bars = None if as_json or not sys.stderr.isatty() else _Bars()
    try:
        result = api.build(ctx.worker, out_dir, engine=engine, progress=bars)
    finally:
        if bars is not None:
            bars.close()
    if as_json:
        emit_json(result.to_json())
        return
    for problem in result.docs.problems:
        print_warning(f"left out of the site: {problem}")
    for message in result.warnings:
        print_warning(f"{result.engine} {message}")
    click.echo(
        f"built {_count(result.docs.pages, 'page')} ({_count(result.docs.topics, 'topic')}, "
        f"{_count(result.docs.versions, 'version')}) with {result.engine} in "
        f"{result.seconds_docs + result.seconds_engine:.1f}s"
    )
    click.echo(f"open {result.index}")


@site.command()
@click.option("--out", "out_dir", metavar="DIR", type=click.Path(file_okay=False),
              help="Where to write mkdocs.yml and docs/ (default: beside the record).")
@click.option("--dev-addr", default="127.0.0.1:8000", show_default=True, metavar="HOST:PORT",
              help="The address to serve on.")
@click.option("--open", "open_browser", is_flag=True, help="Open the site in a browser.")
@_engine_option
@pass_ctx
def serve(ctx: Invocation, out_dir: str | None, dev_addr: str, open_browser: bool,
          engine: str | None) -> None:
    """Serve the site with live reload until interrupted (Ctrl-C).

    The record is polled every two seconds; when it changed, the docs are rewritten
    and the open pages reload.
    """
    def say(message: str) -> None:
        click.echo(f"atlas site: {message}", err=True)

    api.serve(ctx.worker, out_dir, engine=engine, dev_addr=dev_addr,
              open_browser=open_browser, say=say)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
