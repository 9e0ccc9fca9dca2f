"""The global options (--record, --as, --project/-p) are taken after the command as well
as before it, by every command, with the same meaning: agents write them both ways, and
the AGENTS.md that `atlas setup` writes says "pass `--as alice`"."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest
from support.runner import Result, run_atlas

from atlas_files.cli.app import COMMANDS, accept_globals, load_command
from atlas_files.protocol import artifacts, status
from atlas_files.storage.record import Record


def _paths(prefix: list[str], command: click.Command) -> Iterator[list[str]]:
    yield prefix
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _paths([*prefix, name], sub)


EVERY_COMMAND = [path for name in COMMANDS
                 for path in _paths([name], accept_globals(load_command(name)))]


@pytest.mark.parametrize("path", EVERY_COMMAND, ids=" ".join)
def test_every_command_takes_the_global_options_after_its_name(
        path: list[str], record: Record) -> None:
    # --help ends the command once its options are parsed; an option it does not take
    # would be refused first ("No such option: --as"), exit 2.
    # init's own --project names a project to create, so init takes no -p of the global
    # meaning either (test_a_command_s_own_option_of_that_name_keeps_its_meaning).
    short = [] if path == ["init"] else ["-p", "web"]
    done = run_atlas(*path, "--record", str(record.root), "--as", "bob", *short,
                     "--project", "web", "--help")
    assert done.returncode == 0, done.stderr
    assert "No such option" not in done.stderr


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A folder with no record above it: only --record can name the record."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def test_options_after_the_command_mean_what_they_mean_before_it(
        record: Record, elsewhere: Path) -> None:
    where = str(record.root)
    done = run_atlas("put", "plan", "-f", "-", "--as", "bob", "--record", where, "-p", "ml",
                     input="the plan\n", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    doc = artifacts.get(record, "plan", project="ml")
    assert (doc.author, doc.body) == ("bob", "the plan\n")

    done = run_atlas("status", "write", "-f", "-", "--project", "ml", "--record", where,
                     "--as", "cy", input="all good\n", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    shown = status.show(record, project="ml")
    assert shown is not None and shown.author == "cy"

    feed = run_atlas("feed", "--json", "--record", where, "--as", "dan", cwd=elsewhere)
    assert feed.returncode == 0, feed.stderr
    assert feed.json()["as"] == "dan"
    assert {(i["project"], i["name"]) for i in feed.json()["new"]} == {
        ("ml", "plan"), ("ml", "status")}

    lease = run_atlas("lease", "claim", "gpu0", "--for", "1m", "--why", "x", "--json",
                      "--record", where, "--as", "bob", cwd=elsewhere)
    assert lease.returncode == 0, lease.stderr
    assert lease.json()["holder"] == "bob"


def test_after_the_command_the_last_one_given_wins_and_is_checked(
        atlas: Callable[..., Result], record: Record) -> None:
    done = atlas("--as", "ann", "put", "plan", "-f", "-", "--as", "bob", input="x\n")
    assert done.returncode == 0, done.stderr
    assert artifacts.get(record, "plan").author == "bob"
    bad = atlas("put", "plan", "-f", "-", "--as", "Not A Name", input="y\n")
    assert bad.returncode == 2 and "bad identity" in bad.stderr


def test_a_command_s_own_option_of_that_name_keeps_its_meaning(
        record: Record, tmp_path: Path) -> None:
    # `init --project` names a project to create, not the project to act on.
    done = run_atlas("init", str(tmp_path / "new"), "--project", "alpha", "--project", "beta")
    assert done.returncode == 0, done.stderr
    assert list(Record(tmp_path / "new").config.projects) == ["alpha", "beta"]
