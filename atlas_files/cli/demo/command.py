"""`atlas demo`: build a demo record from scratch and show the protocol at work."""

from __future__ import annotations

import click

from atlas_files.cli.demo import run_fresh


@click.command()
@click.argument("directory", default="atlas-demo", type=click.Path(file_okay=False))
def demo(directory: str) -> None:
    """Build a demo record in DIRECTORY (default ./atlas-demo): several identities write
    and read it, one hits the stop sign, two compete for a lease, decisions and a
    correction are recorded, machines are probed, the record is checked and rendered as a
    site. A DIRECTORY left by an earlier demo is replaced; any other existing one is
    refused."""
    run_fresh(directory, click.echo)
