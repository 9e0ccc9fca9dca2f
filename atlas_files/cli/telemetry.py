"""`atlas telemetry sample | probe | ls`: machine state as one live row per machine."""

from __future__ import annotations

import getpass
import json
import signal
from typing import Any

import click

from atlas_files.api import telemetry as api
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json, print_warning
from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput
from atlas_files.protocol.telemetry import LIMITS, nvml
from atlas_files.protocol.telemetry.trust import LOCAL, shown


@click.group()
def telemetry() -> None:
    """Machine telemetry: one live row per machine, written by an outside prober.

    `sample` prints this machine's GPUs (it writes nothing); `probe` visits the machines
    listed in atlas.yaml and writes each one's row, `reachable: false` with the reason when
    a machine does not answer (`reachable: true` with an error when it answers, but not
    with a sample); `ls` reads the rows. `probe` runs only commands you trust: your own
    probes file, or atlas.yaml probes you approved with `approve`. A row shows what was
    seen at its time: one older than 3 probe intervals is marked stale. Telemetry shows
    load, never intent; leases say who means to use a machine next.
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
    result = api.sample()
    if as_json:
        emit_json(result.to_json())
    else:
        click.echo("\n".join(result.lines()))


def _outcome_line(outcome: Any) -> str:
    if outcome.not_run:
        return f"{outcome.machine}: NOT RUN: {outcome.error}"
    if outcome.reachable and outcome.error:
        return f"{outcome.machine}: reachable, NO SAMPLE: {outcome.error}"
    if outcome.reachable:
        nvml = outcome.row.get("nvml") or {}
        gpus = outcome.row.get("gpus") or []
        what = (f"{len(gpus)} GPU{'' if len(gpus) == 1 else 's'}" if nvml.get("available")
                else f"nvml unavailable ({nvml.get('reason')})")
        return f"{outcome.machine}: reachable, {what} ({outcome.duration_s:.1f}s)"
    return f"{outcome.machine}: UNREACHABLE: {outcome.error}"


def _warn_not_run(outcome: Any) -> None:
    if outcome.not_run:
        print_warning(f"{outcome.machine}: probe not approved, not run: "
                      f"{shown(str(outcome.row.get('probe')), 200)} (review it, then "
                      f"`atlas telemetry approve {outcome.machine}`)")


@telemetry.command("probe")
@click.argument("machines", nargs=-1, metavar="[MACHINE]...")
@click.option("--every", "every", metavar="SECONDS",
              help="Probe again every SECONDS (or a duration like 5m) until interrupted.")
@click.option("--probes", "probes_file", metavar="FILE",
              type=click.Path(dir_okay=False),
              help="Your own probe commands: a YAML file outside the record mapping each "
              "machine to {probe, timeout, interval}. Default: $XDG_CONFIG_HOME/atlas/"
              "probes.yaml (~/.config/atlas/probes.yaml) if it exists.")
@json_option
@pass_ctx
def probe(ctx: Invocation, machines: tuple[str, ...], every: str | None,
          probes_file: str | None, as_json: bool) -> None:
    """Probe MACHINEs (default: all in atlas.yaml and your probes file); write their rows.

    Runs each machine's probe command side by side (`local` runs this machine's sampler in
    a child process), each killed with its whole process group at its `timeout:`. The
    command comes from your own probes file (--probes FILE, else
    ~/.config/atlas/probes.yaml); failing that, from atlas.yaml, but only if you approved
    exactly that string for this record (`atlas telemetry approve MACHINE`): anyone who can
    write the record can write atlas.yaml. An unapproved or changed probe is not run: its
    row says `reachable: false` with `error` saying so, and a warning names it.
    A machine that fails or does not answer in time gets a row saying `reachable: false`
    and why; one that answers, but not with a sample, `reachable: true`, no GPUs, and what
    it answered in `error`. The exit code is still 0: the row was written.
    Requires --as (the prober's identity, stored as `observer`). With --every it keeps
    probing until interrupted (Ctrl-C or SIGTERM), one failing machine never stopping it;
    with --json it then prints one JSON document per round, one per line.
    """
    worker = ctx.worker

    def emit(outcome: Any) -> None:
        _warn_not_run(outcome)
        if not as_json:
            click.echo(_outcome_line(outcome))

    if every is None:
        result = api.probe(worker, machines, probes_file=probes_file, on_outcome=emit)
        if as_json:
            emit_json(result.to_json())
        return

    def on_term(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    per_round = api.machines_per_round(worker, machines, probes_file=probes_file)
    round_names: list[str] = []

    def emit_round(outcome: Any) -> None:
        emit(outcome)
        if as_json:
            round_names.append(outcome.machine)
            if len(round_names) == per_round:
                doc = api.rows(worker, round_names).to_json()
                # One document per line (JSON Lines), so a reader can follow the rounds.
                click.echo(json.dumps(doc, ensure_ascii=False, default=str))
                round_names.clear()

    done = api.probe_every(worker, machines, every, emit_round, print_warning,
                           probes_file=probes_file)
    click.echo(f"atlas: prober stopped after {done} round{'' if done == 1 else 's'}",
               err=True)


@telemetry.command("approve")
@click.argument("machines", nargs=-1, required=True, metavar="MACHINE...")
@click.option("--yes", is_flag=True, help="Approve without asking (for scripts); the "
              "command approved is still printed.")
@pass_ctx
def approve(ctx: Invocation, machines: tuple[str, ...], yes: bool) -> None:
    """Let your prober run the probe command atlas.yaml gives MACHINE, exactly as it is now.

    Prints the exact string and asks. The approval is kept outside the record, in
    $XDG_CONFIG_HOME/atlas/approved-probes.json (~/.config/atlas/...), as the sha256 of
    (this record's real path, MACHINE, the string): if anyone changes the string, your
    prober stops running it until you approve again. `local` needs no approval. An
    approval covers your own prober only; it says nothing to anyone else's.
    """
    for machine in machines:
        command = api.pending_probe(ctx.worker, machine)
        if command == LOCAL:
            click.echo(f"{machine}: probe: local runs no shell command; nothing to approve")
            continue
        if command.isprintable():
            click.echo(f"{machine}: atlas.yaml gives this probe command:\n  {command}")
        else:
            click.echo(f"{machine}: atlas.yaml gives this probe command, which holds "
                       "characters a terminal would act on (shown escaped):\n  "
                       f"{shown(command)}")
        if not yes:
            try:
                ok = click.confirm(f"Run it as {_user()} whenever you probe {machine}?",
                                   default=False)
            except click.Abort:
                ok = False
            if not ok:
                raise BadInput(f"the probe of {machine} was not approved; nothing written",
                               hint="run it again and answer y, or pass --yes after reading "
                               "the command")
        approval = api.approve(ctx.worker, machine, command)
        click.echo(f"approved: {machine} (kept in {approval.kept_in})")


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "you"


def _row_lines(row: Any) -> list[str]:
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
def ls(ctx: Invocation, machines: tuple[str, ...], as_json: bool) -> None:
    """Show each machine's last row: reachable or not, when, by whom, its GPUs.

    Age and staleness are computed now, from observed_at: a row older than
    stale_after_intervals (default 3) x the machine's interval is marked stale. A row is
    what the prober saw then, not the present, and never what anyone intends next.
    """
    result = api.ls(ctx.worker, machines)
    if as_json:
        emit_json(result.to_json())
        return
    problem = result.problems[0] if result.problems else None
    views = result.rows
    if problem:
        print_warning(problem)
    if not views:
        click.echo("no machines: add them under `machines:` in atlas.yaml, then run "
                   "`atlas telemetry probe`" if not problem else "no readable rows")
        return
    for row in views:
        click.echo("\n".join(_row_lines(row)))
    click.echo(f"({LIMITS})")
