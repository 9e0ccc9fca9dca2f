"""One session of a real harness binary against the scripted model, in a project folder.

    with ScriptedModel(ANTHROPIC, script) as model:
        run = claude_session(claude, project, "Write the notes.", model, home=home)
    run.returncode, run.result        # the exit status, the parsed --output-format json
    model.turns[0].text()             # what the model was shown in its first turn
    run.record                        # every file of the record afterwards (path -> bytes)

The harness runs as its users run it non-interactively, with ``HOME`` a folder of the
test's own (nothing of the machine's user is read or written), an invented API key, the
API's base URL at the stand-in, and ``PATH`` leading to this checkout's ``atlas`` (the
hooks and the agent's shell find it there, as a user's would). No ``ATLAS_*`` variable
reaches it unless the test passes one. It runs in a process group of its own, which is
ended by its id when the session returns, so no tool the agent started outlives the test;
past ``timeout`` seconds the group is killed and ``TimeoutExpired`` raised.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from support.scripted_model import Call, ScriptedModel

SESSION_TIMEOUT = 240.0  # seconds; a scripted session of a few turns takes 10-30


@dataclass
class Session:
    returncode: int
    stdout: str
    stderr: str
    result: Any  # stdout parsed as JSON where the harness printed one document, else None
    record: dict[str, bytes]  # the record's files afterwards ({} without a record)
    seconds: float


def base_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a harness: the test's own minus ATLAS_*, HOME at ``home``, and
    this interpreter's scripts folder (where ``atlas`` is) first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ATLAS_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_",
                                "CLAUDE", "CODEX_"))}
    scripts = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([scripts, env.get("PATH", "/usr/bin:/bin")])
    env["HOME"] = str(home)
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    env.update(extra or {})
    return env


def snapshot(root: Path | None) -> dict[str, bytes]:
    if root is None or not root.is_dir():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def run_harness(argv: Sequence[str], cwd: Path, env: dict[str, str], *,
                record: Path | None = None, timeout: float = SESSION_TIMEOUT,
                stdin: str | None = None) -> Session:
    """Run ``argv`` in its own process group and end the group by its id afterwards."""
    started = time.monotonic()
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, text=True,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _end_group(proc.pid)
        stdout, stderr = proc.communicate()
        raise subprocess.TimeoutExpired(list(argv), timeout, stdout, stderr) from None
    finally:
        _end_group(proc.pid)
    try:
        result = json.loads(stdout) if stdout.strip() else None
    except ValueError:
        result = None
    return Session(proc.returncode, stdout, stderr, result, snapshot(record),
                   time.monotonic() - started)


def _end_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# -- Claude Code --------------------------------------------------------------------------------

CLAUDE_QUIET = {
    # Nothing but the stand-in is reached, and nothing asks to update itself.
    "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_BUG_COMMAND": "1",
}


def claude_env(home: Path, model: ScriptedModel, extra: dict[str, str] | None = None
               ) -> dict[str, str]:
    return base_env(home, {"ANTHROPIC_API_KEY": "sk-ant-scripted-0000",
                           "ANTHROPIC_BASE_URL": model.url, **CLAUDE_QUIET, **(extra or {})})


def claude_session(claude: Path, project: Path, prompt: str, model: ScriptedModel, *,
                   home: Path, record: Path | None = None,
                   allowed_tools: Sequence[str] = ("Bash",), args: Sequence[str] = (),
                   env: dict[str, str] | None = None,
                   timeout: float = SESSION_TIMEOUT) -> Session:
    """`claude -p PROMPT --output-format json --allowedTools ... --permission-mode
    acceptEdits` in ``project``, against ``model``. (Project permission rules are read
    only once a person trusted the workspace, so the tools are allowed on the command
    line; the project's hooks in .claude/settings.json do run.)"""
    argv = [str(claude), "-p", prompt, "--output-format", "json",
            "--permission-mode", "acceptEdits", "--allowedTools", ",".join(allowed_tools),
            *args]
    return run_harness(argv, project, claude_env(home, model, env), record=record,
                       timeout=timeout)


def login_profile(home: Path) -> None:
    """A ~/.profile putting this checkout's ``atlas`` on PATH: Codex runs the agent's
    commands in a login shell (`bash -lc`), whose PATH comes from the profile, as a
    user's installed atlas would be found."""
    scripts = Path(sys.executable).parent
    (home / ".profile").write_text(f'export PATH="{scripts}:$PATH"\n')


# -- Codex --------------------------------------------------------------------------------------


def codex_home(home: Path, project: Path, model: ScriptedModel) -> None:
    """~/.codex/config.toml: the stand-in as the model provider, ``project`` trusted."""
    config = home / ".codex"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text("\n".join([
        'model = "scripted-model"', 'model_provider = "scripted"',
        "[model_providers.scripted]", 'name = "scripted"', f'base_url = "{model.url}/v1"',
        'wire_api = "responses"', 'env_key = "SCRIPTED_API_KEY"',
        f"[projects.{json.dumps(str(project))}]", 'trust_level = "trusted"', ""]))


def codex_session(codex: Path, project: Path, prompt: str, model: ScriptedModel, *,
                  home: Path, record: Path | None = None, trust_hooks: bool = True,
                  timeout: float = SESSION_TIMEOUT) -> Session:
    """`codex exec PROMPT` in ``project``, its model a `model_providers` entry at the
    stand-in (wire_api "responses"), the project trusted in ~/.codex/config.toml (written
    by ``codex_home`` unless the test wrote it first). Codex
    skips a hook no person has trusted; ``trust_hooks`` passes
    --dangerously-bypass-hook-trust, the flag for automation that vetted its hooks."""
    if not (home / ".codex" / "config.toml").exists():
        codex_home(home, project, model)
    login_profile(home)
    argv = [str(codex), "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access",
            *(["--dangerously-bypass-hook-trust"] if trust_hooks else []), prompt]
    return run_harness(argv, project, base_env(home, {"SCRIPTED_API_KEY": "sk-scripted"}),
                       record=record, timeout=timeout)


# -- Gemini CLI ---------------------------------------------------------------------------------


def gemini_session(gemini: Path, project: Path, prompt: str, model: ScriptedModel, *,
                   home: Path, record: Path | None = None, model_name: str = "gemini-2.5-flash",
                   timeout: float = SESSION_TIMEOUT) -> Session:
    """`gemini -p PROMPT -m MODEL --approval-mode yolo` in ``project``, the API at the
    stand-in (GOOGLE_GEMINI_BASE_URL), an API key chosen in the user's settings, the
    folder trusted (GEMINI_CLI_TRUST_WORKSPACE: project hooks run only in a trusted
    folder). A named model skips Gemini CLI's routing requests."""
    settings = home / ".gemini"
    settings.mkdir(exist_ok=True)
    (settings / "settings.json").write_text(json.dumps(
        {"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    env = base_env(home, {"GEMINI_API_KEY": "scripted-key", "GOOGLE_GEMINI_BASE_URL": model.url,
                          "GEMINI_CLI_TRUST_WORKSPACE": "true"})
    argv = [str(gemini), "-p", prompt, "-m", model_name, "--approval-mode", "yolo"]
    return run_harness(argv, project, env, record=record, timeout=timeout)


# What the harness tests share: the status ann wrote before a session, a Bash call that
# runs atlas, and what a run left in the record.
STATUS = "Ship the loader by Friday; the cache waits."


def bash(command: str) -> Call:
    """A Bash tool call that runs ``command``, as Claude Code offers it."""
    return Call("Bash", {"command": command, "description": "run atlas"})


def versions(record: dict[str, bytes], folder: str) -> list[str]:
    return sorted(p for p in record if p.startswith(folder) and ".v" in p)


def author(record: dict[str, bytes], path: str) -> str:
    return str(yaml.safe_load(record[path].decode().split("---")[1])["author"])
