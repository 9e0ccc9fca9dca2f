"""The switch every write and read command goes through for `sync:` in atlas.yaml.

A write command takes ``@sync_option`` (``--sync/--no-sync``) and wraps its one API call
in ``synced(ctx, what, lambda: ...)``: with sync on, the call runs between a fetch and a
push (atlas_files.sync.run.synced_write), so a lost race is the stop sign (exit 3) or the
held sign (exit 4) before anything is printed. A read command takes ``@fresh``: it syncs
first when the record auto-syncs and the last fetch is older than ``fetch_every``.

The session ritual: `atlas begin` syncs first like a read (it calls the switch itself, so
that its hook mode keeps working outside a record), `atlas end` is a write.

Light on purpose: it imports the switch, never the engine, so a record that does not
sync pays nothing on `atlas status show`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from atlas_files import sync as switch
from atlas_files.cli.app import Invocation

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_META = "atlas_files.sync"


def _remember(ctx: click.Context, param: click.Parameter, value: bool | None) -> None:
    ctx.meta[_META] = value


def sync_option(f: F) -> F:
    return click.option(
        "--sync/--no-sync", default=None, expose_value=False, callback=_remember,
        help="Fetch before this write and push it after (default: `auto` of `sync:` in "
        "atlas.yaml). See `atlas sync --help`.",
    )(f)


def synced(ctx: Invocation, what: str, fn: Callable[[], T]) -> T:
    """``fn()`` (one API write), synced with the git remote when sync is on."""
    override = click.get_current_context().meta.get(_META)
    worker = ctx.worker
    return switch.write(worker, f"{what} ({worker.identity})", fn, override)


def fresh(f: F) -> F:
    """A read command: with `sync: {auto: true}`, sync first if the last fetch is old."""

    @functools.wraps(f)
    def read(*args: Any, **kwargs: Any) -> Any:
        invocation = click.get_current_context().find_object(Invocation)
        if invocation is not None:
            switch.refresh(invocation.worker)
        return f(*args, **kwargs)

    return read  # type: ignore[return-value]
