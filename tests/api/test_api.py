"""Every read command's --json is the public API's result, serialised: one source of truth
for the CLI, the MCP server and sync."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from atlas_files import api
from atlas_files.api import checks, core, decisions, leases, search, telemetry
from atlas_files.cli.app import cli
from atlas_files.facts.errors import VersionConflict
from atlas_files.storage.record import Record


@pytest.fixture
def worked(record: Record) -> api.Worker:
    """A record with a status, two topics (one a proposal, one corrected), a decision and a
    lease, as alice sees it."""
    ann = api.Worker(record, "ann", "web")
    core.status_write(ann, "Where things stand.\n")
    core.put(ann, "plan", "# Plan\n\n1. first\n")
    core.put(ann, "plan", "# Plan\n\n1. first\n2. second\n")
    core.put(ann, "idea", "An idea.\n", proposal=True)
    decisions.decide(ann, topic="the loader", recommended="rewrite", chosen="patch",
                     relation="disagreed", why="timing: release on Friday")
    decisions.correct(ann, "plan@v1", "the first step was wrong")
    leases.claim(ann, "gpubox.gpu0", "2h", "training run")
    return api.Worker(record, "alice", "web")


def _cli_json(record: Record, *args: str, identity: str = "alice") -> Any:
    result = CliRunner().invoke(
        cli, ["--record", str(record.root), "--as", identity, "-p", "web", *args, "--json"],
        catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def _as_json(result: Any) -> Any:
    return json.loads(json.dumps(result.to_json(), ensure_ascii=False, default=str))


CASES: dict[str, tuple[tuple[str, ...], Callable[[api.Worker], Any]]] = {
    "status show": (("status", "show"), lambda w: core.status_show(w)),
    "status log": (("status", "log"), lambda w: core.status_log(w)),
    "status diff": (("status", "diff", "0", "1"), lambda w: core.status_diff(w, 0, 1)),
    "get": (("get", "plan"), lambda w: core.get(w, "plan")),
    "get --version": (("get", "plan", "--version", "1"), lambda w: core.get(w, "plan", 1)),
    "ls": (("ls",), lambda w: core.ls(w)),
    "ls --accepted": (("ls", "--accepted"), lambda w: core.ls(w, accepted=True)),
    "history": (("history", "plan"), lambda w: core.history(w, "plan")),
    "diff": (("diff", "plan"), lambda w: core.diff(w, "plan")),
    "feed": (("feed",), lambda w: core.feed(w)),
    "lease ls": (("lease", "ls"), lambda w: leases.ls(w)),
    "lease show": (("lease", "show", "gpubox.gpu0"), lambda w: leases.show(w, "gpubox.gpu0")),
    "decisions": (("decisions",), lambda w: decisions.decisions(w)),
    "telemetry ls": (("telemetry", "ls"), lambda w: telemetry.ls(w)),
    "search": (("search", "loader"), lambda w: search.search(w, "loader")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_read_command_json_is_the_api_result(worked: api.Worker, name: str) -> None:
    args, call = CASES[name]
    from_api = _as_json(call(worked))
    from_cli = _cli_json(worked.record, *args)
    if name in ("lease ls", "lease show"):
        # States are computed when read, and the two reads lie a moment apart.
        for doc in (from_api, from_cli):
            for row in doc.get("leases", [doc]):
                for key in ("expires_in_s", "read_at"):
                    row.pop(key, None)
    assert from_cli == from_api


def test_check_json_is_the_api_report(worked: api.Worker, monkeypatch: pytest.MonkeyPatch,
                                      tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    from_api = _as_json(checks.check(worked.record.root))
    assert _cli_json(worked.record, "check") == from_api


def test_write_results_are_the_cli_json(record: Record) -> None:
    worker = api.Worker(record, "ann", "web")
    written = core.put(worker, "plan", "one\n")
    assert _as_json(written) == {"name": "plan", "version": 1, "path": str(written.path)}
    assert _cli_json(record, "get", "plan", identity="ann")["version"] == 1


def test_the_api_raises_the_stop_sign(record: Record) -> None:
    ann, bob = api.Worker(record, "ann"), api.Worker(record, "bob")
    core.put(ann, "plan", "one\n")
    core.get(bob, "plan")
    core.put(ann, "plan", "two\n")
    with pytest.raises(VersionConflict) as stopped:
        core.put(bob, "plan", "three\n")
    assert stopped.value.exit_code == 3 and "ann" in stopped.value.message
    assert [v.version for v in core.history(bob, "plan").versions] == [2, 1]


def test_worker_open_finds_the_record_like_the_cli(record: Record,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(record.root / "projects")
    worker = api.Worker.open(env={"ATLAS_AS": "ann"})
    assert worker.record.root.resolve() == record.root.resolve()
    assert worker.identity == "ann" and worker.project_name == "web"


def test_the_readme_python_example_runs(record: Record, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    example = readme.split("```python\n", 1)[1].split("```", 1)[0]
    core.put(api.Worker(record, "ann"), "plan", "1. plan\n")
    monkeypatch.setenv("ATLAS_RECORD", str(record.root))
    exec(compile(example, "README.md", "exec"), {})  # noqa: S102 - our own README
    assert core.get(api.Worker(record, "ann"), "plan").doc.body == "1. plan\n\n4. eval\n"
