"""`atlas lease`: claim, renew, release, break, ls, show, guard."""

from __future__ import annotations

import sys
from typing import Any

import click

from atlas_files.api import guard as guard_api
from atlas_files.api import leases as api
from atlas_files.api.leases import ADVISORY
from atlas_files.cli.app import Invocation, json_option, pass_ctx, sync_option
from atlas_files.cli.render import emit_json, print_warning
from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput

LEASE_HELP = f"""Advisory leases: a sign-up sheet for shared machines, GPUs and datasets.

Before a long run, look at what others hold (`atlas lease ls`), then claim the resource,
saying why and for how long. A lease expires by itself when its time is up; a holder that
vanishes frees the resource by doing nothing. Every change is one compare-and-set and makes
a new generation; the generation is a fencing token that work under the lease can carry.

{ADVISORY}

A lease can cover paths of a code repository (`claim --paths src/metrics.py`); the
`atlas-leases` pre-commit hook (`atlas lease guard --staged`) then stops a commit into
them by anyone but the holder, and says how to go ahead anyway.

Exit codes: 2 bad input or over the lease cap (nothing written), 4 held by another or the
lease moved on since you read it (nothing written; for `guard`: the commit touches paths
another identity holds).
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


def _paths_text(paths: tuple[str, ...]) -> str:
    return ", ".join(paths)


def _report(verb: str, change: api.LeaseChange, as_json: bool) -> None:
    for said in change.warnings:  # on stderr, with --json too
        print_warning(said)
    if as_json:
        emit_json(change.to_json())
        return
    lease = change.lease
    click.echo(f"{verb} {_describe(lease)}")
    if lease.why:
        click.echo(f"why: {lease.why}")
    if lease.paths:
        click.echo(f"paths: {_paths_text(lease.paths)}")
    for other in change.overlapping:
        print_warning(f"{other.holder} holds {other.resource} ({_left(other.expires_in_s)} "
                      f"left) on paths that overlap these: {_paths_text(other.paths)}; "
                      f"{other.why}")
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
@click.option("--paths", "paths", multiple=True, metavar="GLOB",
              help="A repository path the lease covers, relative to the repository root "
              "(repeatable): src/metrics.py, a folder (src/ covers all below it), or a glob "
              "(* within a name, ** any number of folders: src/**/*.py).")
@json_option
@sync_option
@pass_ctx
def claim(ctx: Invocation, resource: str, duration: str, why: str, paths: tuple[str, ...],
          as_json: bool) -> None:
    """Claim RESOURCE (e.g. gpubox.gpu0, or repo.metrics with --paths) for DURATION. Exit 4
    if another holds it; a claim of a lease you already hold renews it for DURATION from
    now, with this --why (and keeps its paths unless --paths is given): a warning says when
    that shortened it or replaced its why, and --json's `changed` holds both. Overlapping
    paths of others' leases are warned about."""
    change = api.claim(ctx.worker, resource, duration, why, paths)
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
    change = api.renew(ctx.worker, resource, duration, generation)
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
    change = api.release(ctx.worker, resource, generation)
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
    change = api.break_(ctx.worker, resource, why, duration, generation)
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
@click.option("--path", "path", metavar="FILE",
              help="Only the unexpired leases covering FILE (relative to the repository "
              "root; a folder also lists leases on anything in it).")
@json_option
@pass_ctx
def ls(ctx: Invocation, path: str | None, as_json: bool) -> None:
    """Every lease with its state computed now, GPU telemetry beside it, and the limits."""
    sheet = api.ls(ctx.worker, path)
    if as_json:
        emit_json(sheet.to_json())
        return
    for problem in sheet.problems:  # a damaged resource's reason too: stderr says why
        print_warning(problem)
    rows = sheet.rows()
    if not rows and sheet.path is not None:
        click.echo(f"no unexpired lease covers {sheet.path}.")
    elif not rows:
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
        if item.paths:
            click.echo(f"    paths: {_paths_text(item.paths)}")
        if item.clock_warning:
            click.echo(f"    clock warning: {item.clock_warning}")
    if sheet.unleased_busy:
        click.echo("busy but unleased, by telemetry (someone is using these without a lease):")
        for g in sheet.unleased_busy:
            click.echo(f"  {g['resource']:<22} {_telemetry_text(g)}")
    click.echo("")
    click.echo(click.wrap_text(ADVISORY, 92))


@lease.command("show")
@click.argument("resource")
@json_option
@pass_ctx
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
    if current.paths:
        click.echo(f"paths: {_paths_text(current.paths)}")
    if current.claimed_at:
        click.echo(f"claimed at {current.claimed_at}")
    if current.clock_warning:
        click.echo(f"clock warning: {current.clock_warning}")
    if not history:
        return
    click.echo("history, oldest first:")
    for g in history:
        if g.action == "damaged":
            click.echo(f"  g{g.generation:<4} damaged   {g.why}")
            continue
        who = g.holder or f"(free; by {g.written_by})"
        line = f"  g{g.generation:<4} {g.action:<8} {who:<16} {g.written_at}"
        if g.why:
            line += f"  {g.why}"
        if g.action == "break" and g.previous:
            if g.previous.get("damaged"):
                line += f"  [took over past damaged generation {g.previous.get('generation')}]"
            else:
                line += f"  [took over from {g.previous.get('holder')}]"
        if g.paths:
            line += f"  [paths: {_paths_text(g.paths)}]"
        if g.ended:
            line += f"  -> {g.ended}"
        click.echo(line)


GUARD_SHOWN = 10  # paths listed per lease; the rest are counted


@lease.command("guard")
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option("--staged", is_flag=True,
              help="Check what git's index stages for the next commit (the pre-commit hook "
              "`atlas-leases` runs this).")
@click.option("--repo", metavar="DIR", help="The git repository (default: the one holding "
              "the current folder).")
@json_option
@pass_ctx
def guard(ctx: Invocation, paths: tuple[str, ...], staged: bool, repo: str | None,
          as_json: bool) -> None:
    """Exit 4 if a commit would touch paths another identity holds an unexpired lease on.

    With --staged it checks the commit being made; with PATHs (relative to the repository
    root) it checks those. The record is --record/ATLAS_RECORD, else `git config
    atlas.record`, else the nearest atlas.yaml at or above the repository root; none found:
    exit 0, saying so. You are --as/ATLAS_AS, else `git config atlas.as`: your own leases
    never stop you. The lease is advisory: `SKIP=atlas-leases git commit ...` goes ahead.
    """
    if staged == bool(paths):
        raise BadInput("give --staged or PATHs (not both)",
                       hint="the pre-commit hook runs `atlas lease guard --staged`")
    result = guard_api.guard(record=ctx.record_path, identity=ctx.identity,
                             paths=None if staged else paths, repo=repo)
    if as_json:
        emit_json(result.to_json())
    else:
        _guard_text(result)
    sys.exit(0 if result.ok else 4)


def _guard_text(result: guard_api.GuardResult) -> None:
    for problem in result.problems:
        print_warning(f"{problem} (not obeyed: whether that lease is held cannot be read)")
    if result.record is None:
        click.echo(f"atlas-leases: {result.note}.")
        return
    if result.ok:
        click.echo(f"atlas-leases: none of {result.checked} path(s) is leased by anyone else.")
        return
    by_lease: dict[str, list[Any]] = {}
    for c in result.conflicts:
        by_lease.setdefault(c.lease.resource, []).append(c)
    click.echo("atlas-leases: this commit touches paths leased by someone else:")
    for items in by_lease.values():
        lease = items[0].lease
        click.echo(f"  {lease.holder} holds {lease.resource} for {_left(lease.expires_in_s)} "
                   f"more (until {lease.expires_at}): {lease.why}")
        for c in items[:GUARD_SHOWN]:
            click.echo(f"    {c.path}  (leased as {c.glob})")
        if len(items) > GUARD_SHOWN:
            click.echo(f"    and {len(items) - GUARD_SHOWN} more")
    holders = " and ".join(result.holders())
    who = (f"You are committing as {result.identity}." if result.identity else
           "You have no atlas identity (set ATLAS_AS, or `git config atlas.as NAME`); if one "
           "of these leases is yours, set it and commit again.")
    click.echo(who)
    click.echo(click.wrap_text(
        "The lease is advisory: only this hook stops the commit. To go ahead anyway, run",
        92))
    click.echo("    SKIP=atlas-leases git commit ...")
    click.echo(click.wrap_text(
        f"and tell {holders} through the record (a status or an artifact that {holders} "
        "will see in `atlas feed`): they are working in these paths and will meet your "
        "change.", 92))
