"""`atlas telemetry sample | probe | ls`: machine state as one live row per machine."""

from __future__ import annotations

import os
from typing import Any

import click

from atlas_files.cli.app import Context, json_option, pass_ctx
from atlas_files.cli.render import emit_json, warn


@click.group()
def telemetry() -> None:
    """Machine telemetry: one live row per machine, written by an outside prober.

    `sample` prints this machine's GPUs (it writes nothing); `probe` visits the machines
    listed in atlas.yaml and writes each one's row, `reachable: false` with the reason when
    a machine does not answer (`reachable: true` with an error when it answers, but not
    with a sample); `ls` reads the rows. A row shows what was seen at its time:
    one older than 3 probe intervals is marked stale. Telemetry shows load, never intent;
    leases say who means to use a machine next.
    """


@telemetry.command("sample")
@json_option
def sample(as_json: bool) -> None:
    """Read this machine's GPUs through NVML and print them (writes nothing).

    A reading the card does not support is null (with NVML's reason under `unread`). No
    NVML library or driver is an answer, not an error: `nvml: unavailable (<reason>)`, no
    GPUs, exit 0. This is the command a probe runs on the far side, e.g.
    `ssh gpubox atlas telemetry sample --json`.
    """
    from atlas_files.telemetry import nvml

    data = nvml.sample()
    if as_json:
        emit_json(data)
    else:
        click.echo("\n".join(nvml.describe(data)))


def _outcome_line(outcome: Any) -> str:
    if outcome.reachable and outcome.error:
        return f"{outcome.machine}: reachable, NO SAMPLE: {outcome.error}"
    if outcome.reachable:
        nvml = outcome.row.get("nvml") or {}
        gpus = outcome.row.get("gpus") or []
        what = (f"{len(gpus)} GPU{'' if len(gpus) == 1 else 's'}" if nvml.get("available")
                else f"nvml unavailable ({nvml.get('reason')})")
        return f"{outcome.machine}: reachable, {what} ({outcome.duration_s:.1f}s)"
    return f"{outcome.machine}: UNREACHABLE: {outcome.error}"


@telemetry.command("probe")
@click.argument("machines", nargs=-1, metavar="[MACHINE]...")
@click.option("--every", "every", metavar="SECONDS",
              help="Probe again every SECONDS (or a duration like 5m) until interrupted.")
@json_option
@pass_ctx
def probe(ctx: Context, machines: tuple[str, ...], every: str | None, as_json: bool) -> None:
    """Probe MACHINEs (default: all in atlas.yaml) and write each one's row.

    Runs each machine's `probe:` command from atlas.yaml (`local` runs this machine's
    sampler in a child process), side by side, each killed with its whole process group at
    its `timeout:`. A machine that fails or does not answer in time gets a row saying
    `reachable: false` and why; one that answers, but not with a sample, `reachable: true`,
    no GPUs, and what it answered in `error`. The exit code is still 0: the row was written.
    Requires --as (the prober's identity, stored as `observer`). With --every it keeps
    probing until interrupted (Ctrl-C or SIGTERM), one failing machine never stopping it;
    with --json it then prints one JSON document per round, one per line.
    """
    from atlas_files.telemetry import probe as probemod

    record = ctx.record

    def emit(outcome: Any) -> None:
        if not as_json:
            click.echo(_outcome_line(outcome))

    if every is None:
        outcomes = probemod.probe_once(record, ctx.identity, machines, emit)
        if as_json:
            emit_json(_rows_json(record, [o.machine for o in outcomes]))
        return

    import json
    import signal

    interval = probemod.parse_every(every)

    def on_term(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    per_round = len(probemod.select(record, machines))
    round_names: list[str] = []

    def emit_round(outcome: Any) -> None:
        emit(outcome)
        if as_json:
            round_names.append(outcome.machine)
            if len(round_names) == per_round:
                doc = _rows_json(record, round_names)
                click.echo(json.dumps(doc, ensure_ascii=False, default=str))
                round_names.clear()

    done = probemod.probe_every(record, ctx.identity, machines, interval, emit_round, warn)
    click.echo(f"atlas: prober stopped after {done} round{'' if done == 1 else 's'}",
               err=True)


def _rows_json(record: Any, machines: list[str] | None = None) -> dict[str, Any]:
    from atlas_files import telemetry as tm

    return {"limits": tm.LIMITS, "machines": [r.to_json() for r in tm.ls(record, machines)]}


def _row_lines(row: Any) -> list[str]:
    from atlas_files import timeutil
    from atlas_files.telemetry import nvml

    when = "never"
    if row.observed_at:
        try:
            when = timeutil.age_text(timeutil.parse_time(row.observed_at))
        except ValueError:
            when = row.observed_at
        when += f" by {row.observer}"
    stale = (f"  STALE (older than {timeutil.format_duration(row.stale_after_s)})"
             if row.stale else "")
    if row.reachable is None:
        return [f"{row.machine}: NO ROW{stale}: {row.error}"]
    if not row.reachable:
        return [f"{row.machine}: UNREACHABLE, observed {when}{stale}: {row.error}"]
    if row.error:
        return [f"{row.machine}: reachable, NO SAMPLE, observed {when}{stale}: {row.error}"]
    lines = [f"{row.machine}: reachable, observed {when}{stale}"]
    lines += ["  " + line for line in nvml.describe({"nvml": row.nvml, "gpus": row.gpus})]
    return lines


@telemetry.command("ls")
@click.argument("machines", nargs=-1, metavar="[MACHINE]...")
@json_option
@pass_ctx
def ls(ctx: Context, machines: tuple[str, ...], as_json: bool) -> None:
    """Show each machine's last row: reachable or not, when, by whom, its GPUs.

    Age and staleness are computed now, from observed_at: a row older than
    stale_after_intervals (default 3) x the machine's interval is marked stale. A row is
    what the prober saw then, not the present, and never what anyone intends next.
    """
    from atlas_files.names import check_name
    from atlas_files.telemetry import probe as probemod

    record = ctx.record
    wanted = [check_name(m, "machine name") for m in machines]
    if wanted:
        known = set(record.config.machines)
        for name in wanted:
            if name not in known and not os.path.lexists(probemod.rows.row_path(record, name)):
                probemod.select(record, [name])  # raises the not-found error
    from atlas_files import telemetry as tm

    views = tm.ls(record, wanted or None)
    problem = tm.folder_problem(record)
    if as_json:
        emit_json({"limits": tm.LIMITS, "machines": [r.to_json() for r in views],
                   "problems": [problem] if problem else []})
        return
    if problem:
        warn(problem)
    if not views:
        click.echo("no machines: add them under `machines:` in atlas.yaml, then run "
                   "`atlas telemetry probe`" if not problem else "no readable rows")
        return
    for row in views:
        click.echo("\n".join(_row_lines(row)))
    click.echo(f"({tm.LIMITS})")
