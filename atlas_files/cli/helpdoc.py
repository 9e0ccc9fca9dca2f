"""Render every command's --help as Markdown: docs/commands.md is this output.

    python -m atlas_files.cli.helpdoc > docs/commands.md

A test regenerates it and compares, so the reference never drifts from the commands.
"""

from __future__ import annotations

from collections.abc import Iterator

import click

from atlas_files.cli.app import cli

HEADER = """\
# Command reference

Every command's `--help`, generated from the commands themselves
(`python -m atlas_files.cli.helpdoc > docs/commands.md`); a test keeps it current.

"""


def _walk(
    command: click.Command, path: list[str], parent: click.Context | None
) -> Iterator[tuple[str, str]]:
    # The root context comes from make_context so the group's context_settings (-h) apply
    # as they do for a real invocation; children inherit them from their parent.
    if parent is None:
        ctx = command.make_context(path[-1], [], resilient_parsing=True, terminal_width=88,
                                   max_content_width=88)
    else:
        ctx = click.Context(command, info_name=path[-1], parent=parent, terminal_width=88,
                            max_content_width=88)
    yield " ".join(path), command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, [*path, name], ctx)


def render() -> str:
    parts = [HEADER]
    for path, text in _walk(cli, ["atlas"], None):
        parts.append(f"## {path}\n\n```text\n{text.rstrip()}\n```\n\n")
    return "".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    click.echo(render(), nl=False)
