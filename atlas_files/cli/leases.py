"""`atlas lease`: claim, renew, release, break, ls, show."""

from __future__ import annotations

import textwrap
from typing import Any

import click

from atlas_files import timeutil
from atlas_files.api import leases as api
from atlas_files.api.leases import ADVISORY
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json, warn
from atlas_files.cli.syncing import fresh, sync_option, synced

LEASE_HELP = f"""Advisory leases: a sign-up sheet for shared machines, GPUs and datasets.

Before a long run, look at what others hold (`atlas lease ls`), then claim the resource,
saying why and for how long. A lease expires by itself when its time is up; a holder that
vanishes frees the resource by doing nothing. Every change is one compare-and-set and makes
a new generation; the generation is a fencing token that work under the lease can carry.

{ADVISORY}

Exit codes: 2 bad input or over the lease cap (nothing written), 4 held by another or the
lease moved on since you read it (nothing written).
"""

WHEN = "DURATION"


def _left(seconds: float | None) -> str:
    return timeutil.format_duration(seconds or 0)


def _describe(lease: Any) -> str:
    if lease.held:
        return (f"{lease.resource}: held by {lease.holder} for {_left(lease.expires_in_s)} more "
                f"(until {lease.expires_at}, generation {lease.generation})")
    if lease.generation == 0:
        return f"{lease.resource}: free (never claimed)"
    last = f", last held by {lease.last_holder}" if lease.last_holder else ""
    return f"{lease.resource}: free ({lease.ended}{last}; generation {lease.generation})"


def _report(verb: str, change: api.LeaseChange, as_json: bool) -> None:
    if as_json:
        emit_json(change.to_json())
        return
    lease = change.lease
    click.echo(f"{verb} {_describe(lease)}")
    if lease.why:
        click.echo(f"why: {lease.why}")
    if lease.clock_warning:
        click.echo(f"clock warning: {lease.clock_warning}")


@click.group(help=LEASE_HELP)
def lease() -> None:
    pass


@lease.command("claim")
@click.argument("resource")
@click.option("--for", "duration", required=True, metavar=WHEN,
              help="How long: 45s, 90m, 2h, 1h30m; at most the record's lease cap (4h default).")
@click.option("--why", required=True, metavar="TEXT", help="What you will use it for (one line).")
@json_option
@sync_option
@pass_ctx
def claim(ctx: Invocation, resource: str, duration: str, why: str, as_json: bool) -> None:
    """Claim RESOURCE (e.g. gpubox.gpu0) for DURATION. Exit 4 if another holds it; a claim
    of a lease you already hold renews it."""
    change = synced(ctx, f"lease claim {resource}",
                    lambda: api.claim(ctx.worker, resource, duration, why))
    _report("renewed" if change.action == "renew" else "claimed", change, as_json)


@lease.command("renew")
@click.argument("resource")
@click.option("--for", "duration", metavar=WHEN, help="New duration from now (default: as before).")
@click.option("--generation", type=click.IntRange(min=0), metavar="N",
              help="Only if the lease is still at generation N (the one you hold).")
@json_option
@sync_option
@pass_ctx
def renew(ctx: Invocation, resource: str, duration: str | None, generation: int | None,
          as_json: bool) -> None:
    """Extend your lease of RESOURCE from now. Exit 4 if someone else holds it or it moved
    past the generation you hold; exit 2 if you do not hold it."""
    change = synced(ctx, f"lease renew {resource}",
                    lambda: api.renew(ctx.worker, resource, duration, generation))
    _report("renewed", change, as_json)


@lease.command("release")
@click.argument("resource")
@click.option("--generation", type=click.IntRange(min=0), metavar="N",
              help="Only if the lease is still at generation N (the one you hold).")
@json_option
@sync_option
@pass_ctx
def release(ctx: Invocation, resource: str, generation: int | None, as_json: bool) -> None:
    """Give RESOURCE back now. Refused unless you hold it (exit 4 or 2, nothing written)."""
    change = synced(ctx, f"lease release {resource}",
                    lambda: api.release(ctx.worker, resource, generation))
    _report("released", change, as_json)


@lease.command("break")
@click.argument("resource")
@click.option("--why", required=True, metavar="TEXT",
              help="Why the holder's lease is taken over (e.g. its process is gone).")
@click.option("--for", "duration", metavar=WHEN, help="How long you hold it after (default 1h).")
@click.option("--generation", type=click.IntRange(min=0), metavar="N",
              help="Only if the lease is still at generation N (the one you looked at).")
@json_option
@sync_option
@pass_ctx
def break_(ctx: Invocation, resource: str, why: str, duration: str | None,
           generation: int | None, as_json: bool) -> None:
    """Take over RESOURCE from a holder that is gone, before its lease expires. The break,
    its reason and the previous holder stay in the history."""
    change = synced(ctx, f"lease break {resource}",
                    lambda: api.break_(ctx.worker, resource, why, duration, generation))
    _report("took over", change, as_json)
    if not as_json:
        click.echo("the break, its reason and the previous holder are in "
                   f"`atlas lease show {resource}`")


def _telemetry_text(usage: dict[str, Any] | None) -> str:
    if not usage:
        return ""
    seen = usage.get("age_s")
    age = f"seen {timeutil.format_duration(seen)} ago" if isinstance(seen, int | float) else ""
    stale = ", STALE" if usage.get("stale") else ""
    if usage.get("reachable") is False:
        return f"[telemetry: {usage.get('machine')} unreachable at last probe{stale}]"
    if usage.get("error"):
        return (f"[telemetry: {usage.get('machine')} answered its last probe, but not with "
                f"a telemetry sample{stale}]")
    used, total = usage.get("memory_used_mib"), usage.get("memory_total_mib")
    return f"[GPU memory {used} of {total} MiB in use, {age}{stale}]"


@lease.command("ls")
@json_option
@pass_ctx
@fresh
def ls(ctx: Invocation, as_json: bool) -> None:
    """Every lease with its state computed now, GPU telemetry beside it, and the limits."""
    sheet = api.ls(ctx.worker)
    if as_json:
        emit_json(sheet.to_json())
        return
    for problem in sheet.problems:  # a damaged resource's reason too: stderr says why
        warn(problem)
    rows = sheet.rows()
    if not rows:
        click.echo("no readable leases (see the warnings above)." if sheet.problems
                   else "no leases yet.")
    for item in rows:
        if item.damaged:
            click.echo(f"{item.resource:<24} DAMAGED (held or not cannot be read; see the "
                       f"warning)  gen {item.generation}")
            click.echo(f"    `atlas lease break {item.resource} --why TEXT` takes it over "
                       "past the damaged generation")
            continue
        if item.held:
            text = (f"{item.resource:<24} held by {item.holder:<12} {_left(item.expires_in_s):>6}"
                    f" left  gen {item.generation:<4} {item.why}")
        else:
            last = f"; last held by {item.last_holder}" if item.last_holder else ""
            text = f"{item.resource:<24} free ({item.ended}{last})  gen {item.generation}"
        usage = _telemetry_text(sheet.telemetry.get(item.resource))
        click.echo(f"{text}  {usage}" if usage else text)
        if item.clock_warning:
            click.echo(f"    clock warning: {item.clock_warning}")
    if sheet.unleased_busy:
        click.echo("busy but unleased, by telemetry (someone is using these without a lease):")
        for g in sheet.unleased_busy:
            click.echo(f"  {g['resource']:<22} {_telemetry_text(g)}")
    click.echo("")
    click.echo(textwrap.fill(ADVISORY, 92))


@lease.command("show")
@click.argument("resource")
@json_option
@pass_ctx
@fresh
def show(ctx: Invocation, resource: str, as_json: bool) -> None:
    """RESOURCE's lease now and its whole history: who held it, for what, how it ended."""
    result = api.show(ctx.worker, resource)
    if as_json:
        emit_json(result.to_json())
        return
    current, history = result.lease, result.history
    click.echo(_describe(current))
    if current.why:
        click.echo(f"why: {current.why}")
    if current.claimed_at:
        click.echo(f"claimed at {current.claimed_at}")
    if current.clock_warning:
        click.echo(f"clock warning: {current.clock_warning}")
    if not history:
        return
    click.echo("history, oldest first:")
    for g in history:
        who = g.holder or f"(free; by {g.written_by})"
        line = f"  g{g.generation:<4} {g.action:<8} {who:<16} {g.written_at}"
        if g.why:
            line += f"  {g.why}"
        if g.action == "break" and g.previous:
            line += f"  [took over from {g.previous.get('holder')}]"
        if g.ended:
            line += f"  -> {g.ended}"
        click.echo(line)
