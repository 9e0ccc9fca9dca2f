"""The top-level group, its global options, and the table of command modules.

Subcommands live in their own modules and are imported only when invoked, so
`atlas --version` and `atlas status show` pay for what they use and nothing else.
"""

from __future__ import annotations

import importlib
from functools import cached_property
from typing import TYPE_CHECKING, Any

import click

from atlas_files import __version__
from atlas_files.facts import environment
from atlas_files.facts.names import check_name

if TYPE_CHECKING:
    from atlas_files.api import Worker
    from atlas_files.storage.record import Record

# command name -> "module:attribute", in the order `atlas --help` lists them.
COMMANDS: dict[str, str] = {
    "init": "atlas_files.cli.core:init",
    "begin": "atlas_files.cli.ritual:begin",
    "end": "atlas_files.cli.ritual:end",
    "status": "atlas_files.cli.status:status",
    "put": "atlas_files.cli.core:put",
    "get": "atlas_files.cli.core:get",
    "ls": "atlas_files.cli.core:ls",
    "history": "atlas_files.cli.core:history",
    "diff": "atlas_files.cli.core:diff",
    "feed": "atlas_files.cli.core:feed",
    "lease": "atlas_files.cli.leases:lease",
    "task": "atlas_files.cli.tasks:task",
    "activity": "atlas_files.cli.activity:activity",
    "guard": "atlas_files.cli.guarding:guard",
    "news": "atlas_files.cli.guarding:news",
    "decide": "atlas_files.cli.decisions:decide",
    "decisions": "atlas_files.cli.decisions:decisions",
    "correct": "atlas_files.cli.decisions:correct",
    "retract": "atlas_files.cli.decisions:retract",
    "search": "atlas_files.cli.search:search",
    "telemetry": "atlas_files.cli.telemetry:telemetry",
    "check": "atlas_files.cli.check:check",
    "site": "atlas_files.cli.site:site",
    "sync": "atlas_files.cli.sync:sync",
    "setup": "atlas_files.cli.setup:setup",
    "mcp": "atlas_files.cli.mcp:mcp",
    "server": "atlas_files.cli.server:server",
    "doctor": "atlas_files.cli.doctor:doctor",
    "demo": "atlas_files.cli.demo.command:demo",
}


class LazyGroup(click.Group):
    """Loads a command's module only when that command runs: the one place where a lazy
    import pays, since `atlas status show` must not import the site generator."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None  # click says "No such command" with the usage hint
        return accept_globals(load_command(cmd_name))


# The global options, accepted after the command too (`atlas put plan --as alice`), since
# agents write them both ways: the option's names and the attribute of Invocation it sets.
GLOBALS_AFTER = ((("--record",), "record_path"), (("--as",), "identity"),
                 (("--project", "-p"), "project"))


def _set_global(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None or param.name is None:
        return
    if param.name == "identity" and value:
        check_name(value, "identity")
    setattr(ctx.find_object(Invocation), param.name, value or None)


def accept_globals(command: click.Command) -> click.Command:
    """``command``, and each subcommand of a group, taking the global options after its
    name as well, with the same meaning (the last one given wins). A command's own option
    of one of those names keeps its own meaning: `init --project` (a project to create),
    `mcp approve --as` (whom a connection acts as); `setup --as` and `search --project`
    already default to the global one."""
    if getattr(command, "_accepts_globals", False):
        return command
    taken = {name for p in command.params for name in (*p.opts, *p.secondary_opts)}
    for names, attribute in GLOBALS_AFTER:
        if not taken.intersection(names):
            # Eager: set before any other option's callback could read the invocation.
            command.params.append(click.Option(
                [*names, attribute], expose_value=False, is_eager=True, hidden=True,
                callback=_set_global))
    command._accepts_globals = True  # type: ignore[attr-defined]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_globals(sub)
    return command


def load_command(name: str) -> click.Command:
    """The command ``name`` of the table; a missing module or attribute is a bug, raised
    loudly rather than dropping the command from `atlas --help` without a word."""
    module_name, _, attr = COMMANDS[name].partition(":")
    command = getattr(importlib.import_module(module_name), attr, None)
    if not isinstance(command, click.Command):
        raise RuntimeError(f"the command table names {COMMANDS[name]!r} for `atlas {name}`, "
                           "which is not a click command")
    return command


class Invocation:
    """What the global options say; the record is found only when a command needs it."""

    # A plain class, not a dataclass: building a dataclass costs a millisecond or two of
    # every invocation's cold start.
    def __init__(self, record_path: str | None, identity: str | None,
                 project: str | None) -> None:
        self.record_path = record_path
        self.identity = identity
        self.project = project
        self.sync: bool | None = None  # --sync/--no-sync of a write command

    @cached_property
    def worker(self) -> Worker:
        # Imported here, like the command modules: `atlas --version` and `--help` need no
        # record, and the API's import (config, YAML, documents) would double their cost.
        from atlas_files.api import Worker  # noqa: PLC0415 - see above
        from atlas_files.storage.record import Record  # noqa: PLC0415 - idem

        return Worker(Record.find(self.record_path), self.identity, self.project, self.sync)

    @property
    def record(self) -> Record:
        return self.worker.record

    def explain(self, exc: BaseException) -> BaseException:
        """``exc``, or RecordGone if the record this command opened moved meanwhile."""
        worker = self.__dict__.get("worker")
        return exc if worker is None else worker.record.explain(exc)


# The invocation of the command running in this process (one per `atlas` process; an
# in-process caller runs one at a time): the top-level handler asks it to explain a
# failure.
current: Invocation | None = None


pass_ctx = click.make_pass_decorator(Invocation)


# color=True: click strips CSI codes (only those) from text sent to a pipe; the output
# filter of `main` instead shows every control escaped, on a terminal or not.
@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"],
                                              "color": True})
@click.option(
    "--record", "record_path", envvar=environment.RECORD, metavar="PATH",
    help="The record folder. Default: $ATLAS_RECORD, else the nearest folder upward "
    "holding atlas.yaml.",
)
@click.option(
    "--as", "identity", envvar=environment.AS, metavar="NAME",
    help="Who is acting ($ATLAS_AS). Required for every write; reads record receipts for it.",
)
@click.option(
    "--project", "-p", envvar=environment.PROJECT, metavar="NAME",
    help="The project ($ATLAS_PROJECT). Default: default_project in atlas.yaml.",
)
@click.version_option(__version__, "--version", prog_name="atlas")
@click.pass_context
def cli(ctx: click.Context, record_path: str | None, identity: str | None,
        project: str | None) -> None:
    """atlas: a plain-files record for workers who never meet.

    Read first, write last. Every write names the version it was based on; if someone wrote
    since, nothing is written and the exit code is 3 (read, merge, write again).

    The options below may also follow the command (`atlas put plan --as alice`).

    Exit codes: 0 ok, 1 check found problems, 2 bad input (nothing written),
    3 version conflict (nothing written), 4 held by another (lease).
    """
    if identity:
        check_name(identity, "identity")  # checked once, before any command touches a file
    global current
    ctx.obj = current = Invocation(record_path or None, identity or None, project or None)


def json_option(f: Any) -> Any:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print exactly one JSON document on stdout."
    )(f)


def _remember_sync(ctx: click.Context, param: click.Parameter, value: bool | None) -> None:
    invocation = ctx.find_object(Invocation)
    if invocation is not None:
        invocation.sync = value


def sync_option(f: Any) -> Any:
    """``--sync/--no-sync`` of a write command: the worker's ``sync``, which the API's
    synced write obeys (atlas_files.api.writes)."""
    return click.option(
        "--sync/--no-sync", default=None, expose_value=False, callback=_remember_sync,
        help="Fetch before this write and push it after (default: `auto` of the `sync:` "
        "settings accepted on this clone). See `atlas sync --help`.",
    )(f)
