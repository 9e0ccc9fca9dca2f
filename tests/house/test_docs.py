"""The docs say what the commands do: the reference is regenerated from --help, the
README's two command lines are what CI runs, and every doc link resolves."""

from __future__ import annotations

import re
from pathlib import Path

import click

from atlas_files.cli import helpdoc
from atlas_files.cli.app import cli

ROOT = Path(__file__).resolve().parents[2]


def test_command_reference_matches_help() -> None:
    committed = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    assert committed == helpdoc.render(), (
        "docs/commands.md is out of date: run "
        "`python -m atlas_files.cli.helpdoc > docs/commands.md`"
    )


def test_readme_quick_start_is_two_lines_and_ci_runs_the_test_line() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", quick, flags=re.S)
    lines = [b.strip() for b in blocks]
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    install_demo, install_test = lines
    assert "atlas demo" in install_demo and "pytest" in install_test
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert install_test in ci.splitlines(), ".ci/run must run the README's test command"


def test_every_documented_command_exists() -> None:
    from support.runner import run_atlas

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for doc in (ROOT / "docs").glob("*.md"):
        text += doc.read_text(encoding="utf-8")
    top = set(re.findall(r"`atlas ([a-z]+)", text))
    known = set(cli.list_commands(click.Context(cli)))
    assert top - known == set(), f"documented but not a command: {top - known}"
    assert run_atlas("--help").returncode == 0
