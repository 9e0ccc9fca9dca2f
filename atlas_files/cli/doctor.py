"""`atlas doctor`: what this machine and the record's volume give the protocol."""

from __future__ import annotations

import sys
import textwrap

import click

from atlas_files.cli import diagnosis as doctormod
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json

WIDTH = 100
SHOWN = {"ok": "ok", "degraded": "DEGRADED", "unsafe": "UNSAFE"}


@click.command()
@json_option
@pass_ctx
def doctor(ctx: Invocation, as_json: bool) -> None:
    """Measure what this machine and the record's volume give the protocol.

    On the record's volume, in a scratch folder removed afterwards: two processes racing
    to create one name (link and O_EXCL), hard links, a rename over a file watched by a
    reader, fsync of a folder, a lock between two processes, case sensitivity, and the
    volume's clock against this machine's (from a new file's mtime as the volume stamps
    it). On this machine: git's version for sync, jsonschema-rs and the site engines, the
    harness hooks and whether the `atlas` they run is on PATH, the command server's
    folder. Outside a record it measures the current folder's volume.

    Each line is ok, degraded (a guarantee is weaker: durability, local locks, speed) or
    unsafe (a guarantee fails: writers can both win, a reader can see a torn file,
    nothing can be published, a lease's expiry is far off), with what it affects. What one
    machine cannot see: a second machine's client of the same volume (run the doctor
    there too), and power cuts.

    Exit codes: 0 nothing unsafe, 1 something unsafe, 2 no record at --record.
    """
    result = doctormod.diagnose(ctx.record_path)
    if as_json:
        emit_json(result.to_json())
    else:
        _text(result)
    sys.exit(0 if result.ok else 1)


def _text(result: doctormod.Diagnosis) -> None:
    vol = result.volume
    where = f"record {result.record}" if result.record else f"no record; measured {vol.folder}"
    click.echo(f"atlas doctor: {where}")
    width = max(len(c.name) for c in result.checks)
    indent = " " * (2 + 9 + 1 + width + 2)
    for check in result.checks:
        head = f"  {SHOWN[check.verdict]:<9} {check.name:<{width}}  "
        click.echo(textwrap.fill(check.detail, WIDTH, initial_indent=head,
                                 subsequent_indent=indent))
        if check.verdict != "ok":
            click.echo(textwrap.fill(f"affects: {check.affects}", WIDTH,
                                     initial_indent=indent, subsequent_indent=indent))
    counts = {v: sum(c.verdict == v for c in result.checks) for v in SHOWN}
    summary = ", ".join(f"{n} {v}" for v, n in counts.items())
    click.echo(f"{len(result.checks)} checks: {summary}; "
               + ("nothing unsafe." if result.ok else "something is unsafe (exit 1)."))
