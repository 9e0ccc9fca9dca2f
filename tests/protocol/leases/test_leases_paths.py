"""Leases on repository paths: claimed, kept, shown and asked about, like any lease."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from support.git import GitRepo
from support.runner import run_atlas, snapshot

from atlas_files import api, sitegen
from atlas_files.api import leases as lease_api
from atlas_files.facts import timeutil
from atlas_files.protocol import leases
from atlas_files.storage import schemas
from atlas_files.storage.record import Record

METRICS = "repo.metrics"


@pytest.fixture(autouse=True)
def _outside_any_repository(clean_git_env: None, monkeypatch: pytest.MonkeyPatch,
                            tmp_path: Path) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)  # not inside a git repository unless a test makes one
    yield


def _file(record: Record, resource: str, generation: int) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (record.leases_dir / resource / f"g{generation:08d}.json").read_bytes())
    assert schemas.errors("lease", data) == [], data
    return data


def test_claim_with_paths_stores_them_and_every_read_shows_them(record: Record) -> None:
    code, out, err = run_atlas("lease", "claim", METRICS, "--for", "1h", "--why", "export rewrite",
                               "--paths", "src/metrics.py", "--paths", "./src/export/",
                               record=record.root, identity="bob")
    assert code == 0, err
    assert "paths: src/metrics.py, src/export" in out
    assert _file(record, METRICS, 1)["paths"] == ["src/metrics.py", "src/export"]

    code, out, _ = run_atlas("lease", "ls", record=record.root)
    assert "held by bob" in out and "    paths: src/metrics.py, src/export" in out
    code, out, _ = run_atlas("lease", "ls", "--json", record=record.root)
    (row,) = json.loads(out)["leases"]
    assert row["paths"] == ["src/metrics.py", "src/export"]
    code, out, _ = run_atlas("lease", "show", METRICS, record=record.root)
    assert "paths: src/metrics.py, src/export" in out
    code, out, _ = run_atlas("lease", "show", METRICS, "--json", record=record.root)
    shown = json.loads(out)
    assert shown["paths"] == ["src/metrics.py", "src/export"]
    assert shown["history"][0]["paths"] == ["src/metrics.py", "src/export"]


def test_a_lease_without_paths_reads_and_writes_as_before(record: Record) -> None:
    leases.claim(record, "gpubox.gpu0", holder="ann", duration_s=60, why="run")
    assert "paths" not in _file(record, "gpubox.gpu0", 1)  # the file is as it always was
    assert leases.current(record, "gpubox.gpu0").to_json()["paths"] == []


def test_renew_break_and_a_reclaim_keep_the_paths_a_release_drops_them(
        record: Record) -> None:
    leases.claim(record, METRICS, holder="bob", duration_s=600, why="w", paths=["src/m.py"])
    assert leases.renew(record, METRICS, holder="bob").paths == ("src/m.py",)
    # Extending a lease by claiming it again must not silently drop what it covers.
    again = leases.claim(record, METRICS, holder="bob", duration_s=900, why="still")
    assert (again.paths, again.last_action) == (("src/m.py",), "renew")
    moved = leases.claim(record, METRICS, holder="bob", duration_s=900, why="w",
                         paths=["src/n.py"])
    assert moved.paths == ("src/n.py",)
    taken = leases.break_lease(record, METRICS, holder="carol", why="bob is gone")
    assert (taken.holder, taken.paths) == ("carol", ("src/n.py",))
    freed = leases.release(record, METRICS, holder="carol")
    assert freed.paths == () and "paths" not in _file(record, METRICS, 6)
    for generation in range(1, 6):
        _file(record, METRICS, generation)  # every one valid against the schema


@pytest.mark.parametrize(("glob", "words"), [
    ("/etc/passwd", "absolute"),
    ("../other/src", "leads out of the repository"),
    ("src/../../x", "leads out of the repository"),
])
def test_bad_globs_exit_2_and_write_nothing(record: Record, glob: str, words: str) -> None:
    before = snapshot(record.root)
    code, out, err = run_atlas("lease", "claim", METRICS, "--for", "1h", "--why", "w",
                               "--paths", "src/ok.py", "--paths", glob, "--json",
                               record=record.root, identity="bob")
    assert code == 2
    assert words in err and "relative to the repository root" in err
    assert json.loads(out)["error"]["kind"] == "bad_input"
    assert snapshot(record.root) == before
    code, _, err = run_atlas("lease", "ls", "--path", glob, record=record.root)
    assert code == 2 and words in err


def test_ls_path_lists_only_the_unexpired_leases_covering_it(record: Record) -> None:
    leases.claim(record, METRICS, holder="bob", duration_s=600, why="metrics",
                 paths=["src/metrics.py"])
    leases.claim(record, "repo.py", holder="carol", duration_s=600, why="typing pass",
                 paths=["src/**/*.py"])
    leases.claim(record, "repo.docs", holder="dan", duration_s=600, why="docs",
                 paths=["docs/"])
    leases.claim(record, "gpubox.gpu0", holder="erin", duration_s=600, why="training")
    _expired(record, "repo.old", "fay", ["src/metrics.py"])

    code, out, _ = run_atlas("lease", "ls", "--path", "src/metrics.py", "--json",
                             record=record.root)
    data = json.loads(out)
    assert code == 0 and data["path"] == "src/metrics.py"
    assert [row["resource"] for row in data["leases"]] == ["repo.metrics", "repo.py"]
    code, out, _ = run_atlas("lease", "ls", "--path", "src/metrics.py", record=record.root)
    assert "repo.metrics" in out and "repo.py" in out and "repo.docs" not in out
    assert "repo.old" not in out and "gpubox" not in out
    assert "Leases are advisory" in out

    code, out, _ = run_atlas("lease", "ls", "--path", "README.md", record=record.root)
    assert code == 0 and "no unexpired lease covers README.md." in out
    # A folder written with its slash: every lease on something in it.
    code, out, _ = run_atlas("lease", "ls", "--path", "src/", "--json", record=record.root)
    assert [row["resource"] for row in json.loads(out)["leases"]] == ["repo.metrics",
                                                                       "repo.py"]


def test_a_folder_of_the_repository_is_read_as_a_folder(record: Record, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    repo = GitRepo(tmp_path / "code")
    repo.write("src/metrics.py")
    monkeypatch.chdir(repo.path)
    leases.claim(record, METRICS, holder="bob", duration_s=600, why="w",
                 paths=["src/metrics.py"])
    leases.claim(record, "repo.md", holder="carol", duration_s=600, why="w", paths=["**/*.md"])
    worker = api.Worker(record)
    assert [x.resource for x in lease_api.covering(worker, "src").leases] == [
        "repo.md", METRICS]  # src is a folder here: what lies in it counts
    # a file: a lease on every *.md at any depth does not cover src/metrics.py
    assert [x.resource for x in lease_api.covering(worker, "src/metrics.py").leases] == [
        METRICS]


def _expired(record: Record, resource: str, holder: str, paths: list[str]) -> None:
    """A lease claimed two hours ago for one hour: expired an hour ago."""
    real = timeutil.now

    def earlier() -> datetime:
        return real() - timedelta(hours=2)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(timeutil, "now", earlier)
        leases.claim(record, resource, holder=holder, duration_s=3600, why="old",
                     paths=paths)
    assert not leases.current(record, resource).held


def test_a_claim_says_which_leases_of_others_overlap_its_paths(record: Record) -> None:
    leases.claim(record, "repo.src", holder="carol", duration_s=600, why="refactor src",
                 paths=["src/"])
    code, out, err = run_atlas("lease", "claim", METRICS, "--for", "1h", "--why", "w",
                               "--paths", "src/metrics.py", record=record.root, identity="bob")
    assert code == 0  # advisory: said, not refused
    assert "carol holds repo.src" in err and "refactor src" in err
    code, out, _ = run_atlas("lease", "claim", "repo.docs", "--for", "1h", "--why", "w",
                             "--paths", "docs/", "--json", record=record.root, identity="bob")
    assert json.loads(out)["overlapping"] == []


def test_a_hand_written_path_that_leads_out_is_damage_not_a_wider_lease(
        record: Record) -> None:
    leases.claim(record, METRICS, holder="bob", duration_s=600, why="w", paths=["src/a.py"])
    path = record.leases_dir / METRICS / "g00000001.json"
    data = json.loads(path.read_bytes())
    data["paths"] = ["../../etc"]
    path.chmod(0o644)
    path.write_text(json.dumps(data))
    code, out, err = run_atlas("lease", "ls", "--json", record=record.root)
    problems = json.loads(out)["problems"]
    assert problems and "paths" in problems[0] and "leads out" in problems[0]


def test_the_sites_lease_board_says_what_a_lease_covers(record: Record, tmp_path: Path
                                                       ) -> None:
    leases.claim(record, METRICS, holder="bob", duration_s=600, why="export",
                 paths=["src/metrics.py", "src/<b>/**"])
    leases.claim(record, "gpubox.gpu0", holder="ann", duration_s=600, why="training")
    sitegen.write_docs(record, tmp_path / "site")
    board = (tmp_path / "site" / "docs" / "leases.md").read_text()
    row = board.split('id="lease--repo.metrics"')[1].split("</tr>")[0]
    assert "covers <code>src/metrics.py</code>" in row
    assert "covers <code>src/&lt;b&gt;/**</code>" in row  # escaped like every stored text
    gpu = board.split('id="lease--gpubox.gpu0"')[1].split("</tr>")[0]
    assert "covers" not in gpu


def test_ls_path_json_is_the_api_result(record: Record) -> None:
    leases.claim(record, METRICS, holder="bob", duration_s=600, why="w", paths=["src/"])
    code, out, _ = run_atlas("lease", "ls", "--path", "src/metrics.py", "--json",
                             record=record.root)
    from_api = lease_api.ls(api.Worker(record), "src/metrics.py").to_json()
    from_cli = json.loads(out)
    for doc in (from_cli, from_api):
        for row in doc["leases"]:
            row.pop("expires_in_s"), row.pop("read_at")
    assert code == 0 and from_cli == from_api
