"""The table of harnesses (atlas_files/harness/registry.py) is the one list: every module
of harness/ that speaks for a harness is in it, and setup, the session hooks, the guard,
news, the Claude Code plugin and the docs' tables of events agree with it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.runner import run_atlas

import atlas_files
from atlas_files import launch
from atlas_files.api import setup as setup_api
from atlas_files.harness import base, registry
from atlas_files.harness.base import Harness

ROOT = Path(atlas_files.__file__).parent.parent
NAMES = registry.NAMES
# The modules of harness/ that speak for no single harness.
PROTOCOL = {"__init__", "base", "registry", "codextrust"}


def _table(doc: str, header: str) -> dict[str, list[str]]:
    """The rows of the table of ``doc`` whose header row starts with ``header``, by
    their first cell."""
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows[cells[0]] = cells
    return rows


def test_every_harness_module_is_in_the_table_and_speaks_for_its_name() -> None:
    modules = {p.stem for p in (ROOT / "atlas_files" / "harness").glob("*.py")}
    assert sorted(modules - PROTOCOL) == sorted(NAMES)
    for name in NAMES:
        harness = registry.load(name)
        assert isinstance(harness, Harness) and harness.name == name
        assert {verb for _, verb, _ in harness.hooks()} == set(base.VERBS)


def test_a_name_outside_the_table_is_no_harness() -> None:
    with pytest.raises(KeyError):
        registry.load("base")


@pytest.mark.parametrize("name", NAMES)
def test_setup_installs_each_harness_s_hooks_where_its_module_says(name: str,
                                                                   tmp_path: Path) -> None:
    result = run_atlas("setup", name, "--as", "ann", "--dir", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    harness = registry.load(name)
    settings = json.loads(tmp_path.joinpath(*harness.settings).read_text())
    commands: dict[str, set[str]] = {}
    for event, groups in settings["hooks"].items():
        for group in groups:
            for hook in group.get("hooks", [group]):
                commands.setdefault(event, set()).add(hook["command"])
    for event, verb, _ in harness.hooks():
        assert f"atlas --as ann {verb} --hook {name}" in commands[event]
        assert setup_api.OURS.match(f"atlas --as ann {verb} --hook {name}")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("verb", base.VERBS)
def test_every_hook_takes_every_harness_on_the_fast_path_and_the_full_cli(
        name: str, verb: str, tmp_path: Path) -> None:
    """Outside a record, each hook answers its harness's "go on", whichever way it came."""
    go_on = registry.load(name).allow() or ""
    assert set(launch.FAST_HOOKS) == set(base.VERBS)
    assert launch.parse_hook([verb, "--hook", name]) is not None
    fast = run_atlas(verb, "--hook", name, cwd=tmp_path, input="{}", process=True)
    assert (fast.returncode, fast.stdout.strip()) == (0, go_on), fast.stderr
    # With --json added the command line is no hook's exact one: click parses it.
    full = run_atlas(verb, f"--hook={name}", "--json", cwd=tmp_path, input="{}")
    assert (full.returncode, full.stdout.strip()) == (0, go_on), full.stderr


@pytest.mark.parametrize("verb", base.VERBS)
def test_a_harness_outside_the_table_is_refused(verb: str, tmp_path: Path) -> None:
    assert launch.parse_hook([verb, "--hook", "vim"]) is None
    assert run_atlas(verb, "--hook", "vim", cwd=tmp_path).returncode == 2
    assert run_atlas("setup", "vim", "--dir", str(tmp_path)).returncode == 2


def test_the_plugin_s_hooks_are_claude_s_as_its_module_gives_them() -> None:
    plugin = json.loads((ROOT / "plugin" / "hooks" / "hooks.json").read_text())
    found = set()
    for event, groups in plugin["hooks"].items():
        for group in groups:
            for hook in group["hooks"]:
                verb = re.fullmatch(r"atlas (\w+) --hook claude", hook["command"])
                assert verb, hook["command"]
                found.add((event, verb.group(1), group.get("matcher")))
    assert found == set(registry.load("claude").hooks())


@pytest.mark.parametrize("name", NAMES)
def test_the_docs_tables_give_each_harness_s_events(name: str) -> None:
    harness = registry.load(name)
    doc = (ROOT / "docs" / "sessions.md").read_text(encoding="utf-8")
    product = registry.HARNESSES[name]
    session = _table(doc, "| harness | session start |")[
        f"{product} (`{'/'.join(harness.settings)}`)"]
    start, stop = harness.session_events
    assert session[1].startswith(f"`{start}`:") and session[2].startswith(f"`{stop}`:")
    tools = _table(doc, "| harness | guard (pre-tool hook, matcher) |")[product]
    for event, verb, matcher in harness.tool_hooks:
        if verb == "guard":
            assert tools[1].startswith(f"`{event}`, ")
            escaped = (matcher or "").replace("|", "\\|")
            assert not matcher or tools[1].startswith(f"`{event}`, `{escaped}`")
        else:
            assert tools[5].startswith(f"`{event}` ")
