"""Case-insensitive volumes (issue 39, item 10): where a volume takes names that differ
only in case for one file (macOS and Windows by default, exFAT), the edit guard refuses
an edit of the record's own files however they are spelt, and the guards' path leases
cover a path as the volume reads it.

Whether a folder folds case is read from the folder (``volcase.folds_case``), so the
guard's decision is tested here by that answer on this machine's own disk, and the whole
of it on a real exFAT volume (tests/support/exfat.py; CI sets ATLAS_REQUIRE_EXFAT).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support import exfat
from support.git import GitRepo, git_env
from support.runner import atlas_command, child_env, run_atlas

from atlas_files.api import Worker, editguard, guard, news, ritual
from atlas_files.protocol import leases
from atlas_files.storage import volcase
from atlas_files.storage.record import Record

pytestmark = pytest.mark.usefixtures("clean_git_env")

SPELLINGS = ["PROJECTS/main/status/status.v0001.md", "projects/MAIN/Status/STATUS.V0001.md",
             "Projects/main/artifacts/Plan/plan.V0002.md", "projects/main/DECISIONS/d-1.md",
             "LEASES/gpu0/G0001.json", "Sessions/alice.JSON"]


def _folds(monkeypatch: pytest.MonkeyPatch, answer: bool) -> None:
    """The volume's answer, as the probe would give it on macOS (True) or here (False)."""
    monkeypatch.setattr(volcase, "folds_case", lambda folder, name: answer)


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_on_a_volume_that_folds_case_the_records_files_are_refused_in_any_case(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str) -> None:
    record = Record.init(tmp_path / "Team" / "record", ["main"])
    _folds(monkeypatch, True)
    for root in (record.root, tmp_path / "TEAM" / "Record"):  # the record's own folder too
        verdict = editguard.check_edit([str(root / spelling)], identity="alice",
                                       record=str(record.root))
        assert verdict.decision == editguard.REFUSED, (root, spelling)
    # Where names in other case are other files, they are not the record's.
    _folds(monkeypatch, False)
    verdict = editguard.check_edit([str(record.root / spelling)], identity="alice",
                                   record=str(record.root))
    assert verdict.decision == editguard.ALLOW


def test_path_leases_cover_a_path_as_the_volume_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = GitRepo(tmp_path / "code", git_env())
    repo.commit("start", "src/metrics.py", ago_s=3 * 3600)
    record = Record.init(repo.path, ["main"])
    leases.claim(record, "repo.metrics", holder="bob", duration_s=3600,
                 why="rewriting the export", paths=["src/**", "Docs/API.md"])
    edits = ["SRC/metrics.py", "Src/Metrics.PY", "docs/api.md"]
    _folds(monkeypatch, True)
    for rel in edits:
        verdict = editguard.check_edit([str(repo.path / rel)], identity="alice",
                                       record=str(record.root))
        assert verdict.decision == editguard.STOPPED, rel
        assert verdict.findings[0].resource == "repo.metrics"
    monkeypatch.chdir(repo.path)
    assert len(guard.guard(identity="alice", paths=edits).conflicts) == len(edits)
    _folds(monkeypatch, False)
    for rel in edits:
        verdict = editguard.check_edit([str(repo.path / rel)], identity="alice",
                                       record=str(record.root))
        assert verdict.decision == editguard.ALLOW, rel
    assert guard.guard(identity="alice", paths=edits).conflicts == ()


def test_recent_commits_by_others_are_found_however_the_tool_spells_the_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = GitRepo(tmp_path / "code", git_env())
    repo.commit("start", "src/metrics.py", author="carol", ago_s=3 * 3600)
    repo.commit("rework the export", "src/metrics.py", author="bob", ago_s=60)
    record = Record.init(repo.path, ["main"])
    _folds(monkeypatch, True)
    verdict = editguard.check_edit([str(repo.path / "SRC/Metrics.py")], identity="alice",
                                   record=str(record.root))
    assert verdict.decision == editguard.TOLD, verdict.text()
    assert "bob <bob@example.invalid> committed to SRC/Metrics.py" in verdict.text()
    _folds(monkeypatch, False)
    verdict = editguard.check_edit([str(repo.path / "SRC/Metrics.py")], identity="alice",
                                   record=str(record.root))
    assert verdict.decision == editguard.ALLOW, verdict.text()


def test_news_of_a_path_lease_reads_an_edit_as_the_volume_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = GitRepo(tmp_path / "code", git_env())
    repo.commit("start", "src/metrics.py", ago_s=3 * 3600)
    record = Record.init(repo.path, ["main"])
    for folds, told in ((True, True), (False, False)):
        _folds(monkeypatch, folds)
        ritual.begin(Worker(record, "alice", None))
        news.after_tool(record, "alice", edited=["SRC/Metrics.py"])
        leases.claim(record, f"repo.metrics{int(folds)}", holder="bob", duration_s=3600,
                     why="rewriting the export", paths=["src/**"])
        heard = news.after_tool(record, "alice", force=True)
        text = heard.text if heard is not None and heard.text else ""
        assert ("took the path lease" in text) is told, text
        leases.release(record, f"repo.metrics{int(folds)}", holder="bob")


def test_the_probe_reads_the_folder(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "record", ["main"])
    assert volcase.folds_case(str(record.root), "atlas.yaml") is False
    # A file spelt in other case beside it is another file, not a folded name.
    other = Record.init(tmp_path / "other", ["main"])
    (other.root / "ATLAS.YAML").write_text("planted\n")
    assert volcase.folds_case(str(other.root), "atlas.yaml") is False
    assert volcase.folds_case(str(tmp_path / "none"), "atlas.yaml") is False


# -- a real volume that folds case ----------------------------------------------------------


def _hook(path: Path, cwd: Path, env: dict[str, str]) -> dict[str, object] | None:
    event = {"session_id": "s", "cwd": str(cwd), "hook_event_name": "PreToolUse",
             "tool_name": "Write", "tool_input": {"file_path": str(path), "content": "x\n"}}
    out = run_atlas("--as", "alice", "guard", "--hook", "claude", input=json.dumps(event),
                    cwd=cwd, env=env, process=True)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return json.loads(out.stdout) if out.stdout.strip() else None


def test_on_an_exfat_volume_the_guard_reads_names_as_the_volume_does(
        tmp_path: Path) -> None:
    reason = exfat.unavailable()
    if reason is not None:
        if os.environ.get(exfat.REQUIRE_ENV):
            pytest.fail(f"{exfat.REQUIRE_ENV} is set, but {reason}")
        pytest.skip(reason)
    env = git_env()
    # The team's record on this disk, where bob leased the code's src/.
    team = Record.init(tmp_path / "team", ["main"])
    leases.claim(team, "repo.metrics", holder="bob", duration_s=3600,
                 why="rewriting the export", paths=["src/**"])
    with exfat.exfat(tmp_path / "exfat") as mount:
        root = mount / "record"
        init = subprocess.run(atlas_command("init", str(root)), capture_output=True,
                              text=True, env=child_env(env), timeout=120,
                              stdin=subprocess.DEVNULL)
        assert init.returncode == 0, init.stderr
        assert volcase.folds_case(str(root), "atlas.yaml") is True
        doc = _hook(root / "PROJECTS" / "main" / "status" / "status.v0001.md", root, env)
        assert doc is not None
        assert doc["hookSpecificOutput"]["permissionDecision"] == "deny"  # type: ignore[index]
        # A code repository on the volume: bob's lease on src/** covers SRC/metrics.py.
        code = GitRepo(mount / "code", env)
        code.commit("start", "src/metrics.py", ago_s=3 * 3600)
        doc = _hook(code.path / "SRC" / "metrics.py", code.path,
                    {**env, "ATLAS_RECORD": str(team.root)})
        assert doc is not None
        spec = doc["hookSpecificOutput"]
        assert spec["permissionDecision"] == "ask", doc  # type: ignore[index]
        assert "bob's path lease repo.metrics" in spec["permissionDecisionReason"]  # type: ignore[index]
