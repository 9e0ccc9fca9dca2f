"""`atlas setup`: the harness's files gain the two hooks and lose nothing else; twice is
once; --remove gives back what the file meant; AGENTS.md gets a short marked section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.runner import run_atlas

from atlas_files.api.setup import BEGIN_MARK, END_MARK, setup
from atlas_files.cli import main
from atlas_files.facts.errors import BadInput

OTHERS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
                                                       "command": "./guard.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}],
    },
    "model": "opus",
}


def run(*args: str) -> int:
    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def commands(data: dict[str, Any], event: str) -> list[str]:
    return [h["command"] for g in data["hooks"].get(event, []) for h in g["hooks"]]


def test_claude_setup_keeps_other_hooks_and_is_idempotent(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(OTHERS, indent=4))
    assert run("setup", "claude", "--as", "bob", "--dir", str(tmp_path)) == 0
    data = json.loads(settings.read_text())
    assert commands(data, "SessionStart") == ["atlas --as bob begin --hook claude"]
    assert commands(data, "Stop") == ["say done", "atlas --as bob end --hook claude"]
    assert data["permissions"] == OTHERS["permissions"] and data["model"] == "opus"
    # Another tool's PreToolUse group is kept as it was; the edit guard gets its own group.
    assert data["hooks"]["PreToolUse"][0] == OTHERS["hooks"]["PreToolUse"][0]
    assert data["hooks"]["PreToolUse"][1]["matcher"] == "Edit|Write|MultiEdit|NotebookEdit"
    assert commands(data, "PreToolUse") == ["./guard.sh", "atlas --as bob guard --hook claude"]
    assert commands(data, "PostToolUse") == ["atlas --as bob news --hook claude"]
    first = files(tmp_path)
    assert run("setup", "claude", "--as", "bob", "--dir", str(tmp_path)) == 0
    assert files(tmp_path) == first  # twice changes nothing, byte for byte
    assert run("setup", "claude", "--as", "bob", "--dir", str(tmp_path), "--remove") == 0
    assert json.loads(settings.read_text()) == OTHERS


def test_remove_takes_away_a_file_setup_created(tmp_path: Path) -> None:
    setup("codex", directory=tmp_path, identity="bob")
    data = json.loads((tmp_path / ".codex" / "hooks.json").read_text())
    assert commands(data, "Stop") == ["atlas --as bob end --hook codex"]
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] == 30  # seconds
    result = setup("codex", directory=tmp_path, remove=True)
    assert [c.action for c in result.changes] == ["removed", "removed"]
    assert not (tmp_path / ".codex").joinpath("hooks.json").exists()
    assert not (tmp_path / ".codex").joinpath("config.toml").exists()


def test_gemini_gets_its_own_event_names_and_units(tmp_path: Path) -> None:
    setup("gemini", directory=tmp_path)
    data = json.loads((tmp_path / ".gemini" / "settings.json").read_text())
    end = data["hooks"]["AfterAgent"][0]["hooks"][0]
    assert end == {"name": "atlas-end", "type": "command", "command": "atlas end --hook gemini",
                   "timeout": 10000}
    assert commands(data, "SessionStart") == ["atlas begin --hook gemini"]


def test_a_new_identity_replaces_ours_and_never_duplicates(tmp_path: Path) -> None:
    setup("claude", directory=tmp_path, identity="bob")
    setup("claude", directory=tmp_path, identity="carol")
    data = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert commands(data, "Stop") == ["atlas --as carol end --hook claude"]


def test_a_file_that_is_not_plain_json_is_left_alone(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  // my comment\n  "theme": "dark"\n}\n')
    before = files(tmp_path)
    assert run("setup", "gemini", "--dir", str(tmp_path)) == 2
    assert files(tmp_path) == before


def test_agents_md_gets_a_short_marked_section_and_claude_md_points_to_it(
        tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Project rules\n\nUse tabs.\n")
    original = agents.read_text()
    setup("agents-md", directory=tmp_path, identity="bob")
    text = agents.read_text()
    assert text.startswith(original)
    section = text[text.index(BEGIN_MARK):text.index(END_MARK) + len(END_MARK)]
    assert len(section.splitlines()) < 40
    assert "atlas begin" in section and "atlas end --status" in section and "bob" in section
    assert "@AGENTS.md" in (tmp_path / "CLAUDE.md").read_text()
    before = files(tmp_path)
    setup("agents-md", directory=tmp_path, identity="bob")
    assert files(tmp_path) == before
    setup("agents-md", directory=tmp_path, remove=True)
    assert agents.read_text() == original
    assert not (tmp_path / "CLAUDE.md").exists()


def test_a_harness_remove_leaves_agents_md_for_the_others(tmp_path: Path) -> None:
    setup("claude", directory=tmp_path)
    setup("codex", directory=tmp_path)
    setup("claude", directory=tmp_path, remove=True)
    assert BEGIN_MARK in (tmp_path / "AGENTS.md").read_text()
    assert (tmp_path / ".codex" / "hooks.json").exists()


def test_no_secret_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {"ATLAS_TOKEN": "tok-5ec2e7-aaaa", "ANTHROPIC_API_KEY": "sk-ant-5ec2e7",
               "OPENAI_API_KEY": "sk-5ec2e7", "GEMINI_API_KEY": "g-5ec2e7"}
    for key, value in secrets.items():
        monkeypatch.setenv(key, value)
    for target in ("claude", "codex", "gemini", "agents-md"):
        assert run("--as", "bob", "setup", target, "--dir", str(tmp_path)) == 0
    written = b"".join(files(tmp_path).values())
    assert b"5ec2e7" not in written
    assert b"atlas --as bob begin --hook claude" in written


def test_a_bad_identity_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(BadInput):
        setup("claude", directory=tmp_path, identity="Bob; rm -rf ~")
    assert files(tmp_path) == {}


def test_a_symlink_leading_outside_the_project_is_refused(tmp_path: Path) -> None:
    """A clone that plants `.claude -> ../home/.claude` or `CLAUDE.md -> ../home/.bashrc`
    does not get setup to merge hooks into the user's own settings or append to .bashrc."""
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"model": "opus"}\n')
    (home / ".bashrc").write_text("export PATH=$HOME/bin:$PATH\n")
    before = files(home)
    for link, target in ((".claude", "../home/.claude"), ("CLAUDE.md", "../home/.bashrc")):
        project.mkdir()
        (project / link).symlink_to(target)
        out = run_atlas("setup", "claude", "--as", "bob", "--dir", str(project))
        assert out.returncode == 2, out.stderr
        assert f"{link} is a symlink (to {target})" in out.stderr
        assert "Traceback" not in out.stderr
        assert files(home) == before
        assert sorted(p.name for p in project.iterdir()) == [link]  # nothing else written
        for path in project.iterdir():
            path.unlink()
        project.rmdir()


def test_a_symlink_inside_the_project_is_refused_too(tmp_path: Path) -> None:
    """A committed `CLAUDE.md -> .git/config` stays inside the project, and a write through
    it broke git ("bad config line"): setup writes through no symlink, names the link and
    says what to do, and writes nothing, wherever the link leads."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    config = project / ".git" / "config"
    config.write_text("[core]\n\tbare = false\n")
    (project / "config" / "claude").mkdir(parents=True)
    (project / "config" / "codex-hooks.json").write_text('{"model": "o3"}\n')
    cases = [("CLAUDE.md", ".git/config", "claude"), (".claude", "config/claude", "claude"),
             (".codex/hooks.json", "../config/codex-hooks.json", "codex")]
    for link, target, harness in cases:
        (project / link).parent.mkdir(exist_ok=True)
        (project / link).symlink_to(target)
        before = files(project)
        out = run_atlas("setup", harness, "--as", "bob", "--dir", str(project))
        assert out.returncode == 2, out.stderr
        assert f"{project / link} is a symlink (to {target})" in out.stderr
        assert "replace" in out.stderr and "Traceback" not in out.stderr
        assert files(project) == before  # the link's target included
        (project / link).unlink()
    assert config.read_text() == "[core]\n\tbare = false\n"


def test_claude_md_linked_to_agents_md_keeps_the_protocol(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("# Rules\n")
    (tmp_path / "CLAUDE.md").symlink_to("AGENTS.md")
    setup("claude", directory=tmp_path, identity="bob")
    text = (tmp_path / "AGENTS.md").read_text()
    assert "atlas end --status" in text and "@AGENTS.md" not in text
    assert (tmp_path / "CLAUDE.md").is_symlink()


def test_codex_gets_the_identity_into_its_agents_shell(tmp_path: Path) -> None:
    """Codex 0.171 lets no hook set the agent's shell environment; its project config's
    shell_environment_policy.set does. The user's own config.toml is kept around it."""
    import tomllib

    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    own = 'model = "o3"\n\n[shell_environment_policy]\ninherit = "core"\n'
    config.write_text(own)
    setup("codex", directory=tmp_path, identity="bob")
    data = tomllib.loads(config.read_text())
    assert data["model"] == "o3" and data["shell_environment_policy"]["inherit"] == "core"
    assert data["shell_environment_policy"]["set"] == {"ATLAS_AS": "bob"}
    setup("codex", directory=tmp_path, identity="carol")
    assert tomllib.loads(config.read_text())["shell_environment_policy"]["set"] == {
        "ATLAS_AS": "carol"}
    setup("codex", directory=tmp_path, remove=True)
    assert config.read_text() == own
    config.write_text('[shell_environment_policy]\nset = { PATH = "/usr/bin" }\n')
    result = setup("codex", directory=tmp_path, identity="bob")
    assert config.read_text() == '[shell_environment_policy]\nset = { PATH = "/usr/bin" }\n'
    assert any('ATLAS_AS = "bob"' in note for note in result.notes)
    config.write_text("model = \n")
    before = files(tmp_path)
    assert run("setup", "codex", "--as", "bob", "--dir", str(tmp_path)) == 2
    assert files(tmp_path) == before


def test_cursor_gets_its_own_flat_hooks_file(tmp_path: Path) -> None:
    hooks = tmp_path / ".cursor" / "hooks.json"
    hooks.parent.mkdir()
    theirs = {"command": "./audit.sh"}
    hooks.write_text(json.dumps({"version": 1, "hooks": {"stop": [theirs]}}))
    setup("cursor", directory=tmp_path, identity="bob")
    data = json.loads(hooks.read_text())
    assert data == {"version": 1, "hooks": {
        "stop": [theirs, {"command": "atlas --as bob end --hook cursor", "timeout": 10,
                          "loop_limit": 5}],
        "sessionStart": [{"command": "atlas --as bob begin --hook cursor", "timeout": 30}],
        "preToolUse": [{"command": "atlas --as bob guard --hook cursor", "timeout": 10}],
        "postToolUse": [{"command": "atlas --as bob news --hook cursor", "timeout": 10}]}}
    setup("cursor", directory=tmp_path, identity="carol")
    assert json.loads(hooks.read_text())["hooks"]["stop"][1]["command"] == \
        "atlas --as carol end --hook cursor"
    setup("cursor", directory=tmp_path, remove=True)
    assert json.loads(hooks.read_text()) == {"version": 1, "hooks": {"stop": [theirs]}}
    hooks.unlink()
    setup("cursor", directory=tmp_path)
    setup("cursor", directory=tmp_path, remove=True)
    assert not hooks.exists()


def test_gemini_with_an_identity_hands_it_to_the_agents_shell(tmp_path: Path) -> None:
    """Gemini CLI lets no hook set the shell's environment; setup adds a BeforeTool hook
    on its shell tool that does it, only with an identity to hand over."""
    settings = tmp_path / ".gemini" / "settings.json"
    setup("gemini", directory=tmp_path, identity="bob")
    data = json.loads(settings.read_text())
    (group,) = [g for g in data["hooks"]["BeforeTool"] if g["matcher"] == "run_shell_command"]
    assert group["hooks"] == [{"name": "atlas-identity", "type": "command",
                               "command": "atlas --as bob begin --hook gemini",
                               "timeout": 10000}]
    setup("gemini", directory=tmp_path, identity="bob")
    assert json.loads(settings.read_text()) == data  # twice is once
    setup("gemini", directory=tmp_path)  # no identity: nothing to hand over
    assert [g["matcher"] for g in json.loads(settings.read_text())["hooks"]["BeforeTool"]] \
        == ["write_file|replace"]  # the edit guard's group only
    setup("gemini", directory=tmp_path, identity="bob")
    setup("gemini", directory=tmp_path, remove=True)
    assert not settings.exists()


def test_cursor_gets_the_edit_guard_and_the_news_hook_in_its_own_format(
        tmp_path: Path) -> None:
    hooks = tmp_path / ".cursor" / "hooks.json"
    hooks.parent.mkdir()
    mine = {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}],
                                     "preToolUse": [{"command": "./audit.sh"}]}}
    hooks.write_text(json.dumps(mine))
    assert run("setup", "cursor", "--as", "bob", "--dir", str(tmp_path)) == 0
    data = json.loads(hooks.read_text())
    assert data["version"] == 1
    assert data["hooks"]["preToolUse"] == [{"command": "./audit.sh"},
                                           {"command": "atlas --as bob guard --hook cursor",
                                             "timeout": 10}]
    assert data["hooks"]["postToolUse"] == [{"command": "atlas --as bob news --hook cursor",
                                             "timeout": 10}]
    first = hooks.read_bytes()
    assert run("setup", "cursor", "--as", "bob", "--dir", str(tmp_path)) == 0
    assert hooks.read_bytes() == first
    assert run("setup", "cursor", "--as", "carol", "--dir", str(tmp_path)) == 0
    assert "carol guard" in hooks.read_text() and "bob" not in hooks.read_text()
    assert run("setup", "cursor", "--dir", str(tmp_path), "--remove") == 0
    assert json.loads(hooks.read_text()) == mine
    hooks.unlink()
    setup("cursor", directory=tmp_path)
    assert list(json.loads(hooks.read_text())) == ["version", "hooks"]
    assert [c.action for c in setup("cursor", directory=tmp_path, remove=True).changes] == [
        "removed"]


def test_hooks_that_can_never_find_a_record_are_said_and_what_to_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The hooks look for the record at or above the session's folder (or $ATLAS_RECORD):
    # a record kept below the project is never found, and every session starts blind.
    project = tmp_path / "project"
    record = project / "shared" / "record"
    assert run_atlas("init", str(record)).returncode == 0
    done = run_atlas("--record", str(record), "setup", "claude", "--dir", str(project),
                     "--as", "ann", "--json")
    assert done.returncode == 0, done.stderr  # the hooks are written: they work once told
    assert done.json()["record"] is None
    assert "will find no record" in done.stderr
    assert f"ATLAS_RECORD={record}" in done.stderr  # what to do, with the path
    # Where the hooks do find one, nothing is said, and the JSON names it.
    for env in ({"ATLAS_RECORD": str(record)}, None):
        if env is None:
            assert run_atlas("init", str(project)).returncode == 0  # the project's own
        done = run_atlas("setup", "claude", "--dir", str(project), "--as", "ann", "--json",
                         env=env)
        assert done.returncode == 0 and "will find no record" not in done.stderr
        assert done.json()["record"] == str(record if env else project)
