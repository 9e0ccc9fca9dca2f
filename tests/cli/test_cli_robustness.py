"""Hand-damaged records, hostile inputs and a hostile environment: clear errors, no
traceback, nothing written outside the record, and nothing lost."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.runner import atlas_command, run_atlas, snapshot

from atlas_files.protocol import artifacts, status
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record


def _no_traceback(r: Any) -> None:
    assert "Traceback" not in r.stderr, r.stderr


def test_a_bad_reader_identity_writes_nothing_anywhere(
    record: Record, atlas: Callable[..., Any], tmp_path: Path
) -> None:
    artifacts.put(record, "plan", "x\n", author="ann")
    before = snapshot(tmp_path)
    for bad in ("/../../escaped", "../x", "Bob"):
        r = atlas("get", "plan", identity=bad)
        assert r.returncode == 2 and "identity" in r.stderr
        _no_traceback(r)
        r = atlas("status", "show", identity=bad)
        assert r.returncode == 2
    assert snapshot(tmp_path) == before


def test_init_keeps_a_readme_and_gitignore_that_were_there(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "README.md").write_text("# My project\n")
    (folder / ".gitignore").write_text(".env\nbuild/\n")
    r = run_atlas("init", str(folder))
    assert r.returncode == 0
    assert (folder / "README.md").read_text() == "# My project\n"
    assert "Read first, write last" in (folder / "ATLAS-README.md").read_text()
    ignore = (folder / ".gitignore").read_text().splitlines()
    assert ignore[:2] == [".env", "build/"] and "receipts/" in ignore and "telemetry/" in ignore


def test_an_empty_body_is_refused_unless_asked_for(record: Record,
                                                   atlas: Callable[..., Any]) -> None:
    before = snapshot(record.root)
    r = atlas("put", "plan", identity="ann", input="")
    assert r.returncode == 2 and "empty" in r.stderr
    assert atlas("status", "write", identity="ann", input="  \n").returncode == 2
    assert snapshot(record.root) == before
    assert atlas("put", "plan", "--allow-empty", identity="ann", input="").returncode == 0


def test_a_write_whose_receipt_cannot_be_updated_still_reports_success(
    record: Record, atlas: Callable[..., Any]
) -> None:
    receipts = record.root / "receipts"
    receipts.rmdir()
    receipts.write_text("not a folder")
    r = atlas("put", "plan", identity="ann", input="one\n")
    assert r.returncode == 0, r.stderr
    assert "warning" in r.stderr and "receipt" in r.stderr
    _no_traceback(r)
    assert artifacts.history(Record(record.root), "plan")[0].body == "one\n"
    r = atlas("get", "plan", identity="bob")
    assert r.returncode == 0 and "one" in r.stdout and "warning" in r.stderr
    # The author's next write still expects its own version.
    assert atlas("put", "plan", identity="ann", input="two\n").returncode == 0


def _hand_write(folder: Path, filename: str, version: int, name: str = "plan") -> None:
    body = f"by hand {version}\n".encode()
    meta = {"name": name, "version": version, "based_on": version - 1, "author": "hand",
            "written_at": "2026-11-29T10:00:00Z", "digest": frontmatter.digest_of(body)}
    (folder / filename).write_bytes(frontmatter.render(meta, body))


def test_front_matter_that_disagrees_with_the_file_name_is_damage(
    record: Record, atlas: Callable[..., Any]
) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    folder = record.root / "projects" / "web" / "artifacts" / "plan"
    _hand_write(folder, "plan.v0002.md", 9)
    r = atlas("get", "plan", identity="bob")
    assert r.returncode == 2 and "plan.v0002.md" in r.stderr and "v9" in r.stderr
    assert "9" not in (record.root / "receipts").joinpath("bob.json").read_text() if (
        record.root / "receipts" / "bob.json").exists() else True


def test_a_receipt_beyond_the_latest_version_counts_as_never_read(
    record: Record, atlas: Callable[..., Any]
) -> None:
    from atlas_files.storage import receipts

    artifacts.put(record, "plan", "one\n", author="ann")
    receipts.mark(record, "bob", {"web/artifacts/plan": 7})  # versions removed by hand
    r = atlas("put", "plan", identity="bob", input="blind\n")
    assert r.returncode == 3 and "never read" in r.stderr
    assert atlas("get", "plan", identity="bob").returncode == 0
    assert atlas("put", "plan", "--expect", "1", identity="bob", input="ok\n").returncode == 0


def test_unpadded_version_names_are_not_versions(record: Record,
                                                  atlas: Callable[..., Any]) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    folder = record.root / "projects" / "web" / "artifacts" / "plan"
    _hand_write(folder, "plan.v2.md", 2)
    _hand_write(folder, "plan.v00003.md", 3)
    assert atlas("get", "plan", "--json").json()["version"] == 1
    hist = atlas("history", "plan", "--json")
    assert hist.returncode == 0 and [v["version"] for v in hist.json()["versions"]] == [1]
    assert atlas("get", "plan", identity="bob").returncode == 0
    assert atlas("put", "plan", identity="bob", input="two\n").returncode == 0
    assert (folder / "plan.v0002.md").exists()


def test_a_symlinked_version_is_never_followed(record: Record, atlas: Callable[..., Any],
                                               tmp_path: Path) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    secret = tmp_path / "secret.md"
    _hand_write(tmp_path, "secret.md", 2)
    folder = record.root / "projects" / "web" / "artifacts" / "plan"
    (folder / "plan.v0002.md").symlink_to(secret)
    r = atlas("get", "plan")
    assert r.returncode == 2 and "symlink" in r.stderr and "by hand" not in r.stdout
    r = atlas("ls")
    assert r.returncode == 0 and "by hand" not in r.stdout
    _no_traceback(r)


def test_concurrent_inits_adding_projects_lose_none(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    Record.init(root, ["main"])
    procs = [
        subprocess.Popen(atlas_command("init", str(root), "--project",
                                       f"p{i}"), stdout=subprocess.DEVNULL)
        for i in range(10)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * 10
    assert set(Record(root).config.projects) == {"main", *(f"p{i}" for i in range(10))}


def test_a_new_default_project_is_added_to_the_projects(record: Record) -> None:
    r = run_atlas("init", str(record.root), "--default-project", "ops")
    assert r.returncode == 0, r.stderr
    again = Record(record.root)
    assert again.config.default_project == "ops" and "ops" in again.config.projects
    assert run_atlas("ls", record=record.root).returncode == 0


def test_a_badly_typed_config_is_a_clear_error(record: Record,
                                               atlas: Callable[..., Any]) -> None:
    config = record.root / "atlas.yaml"
    text = config.read_text()
    config.write_text(text.replace("projects:\n- web\n- ml\n", "projects: main\n"))
    r = atlas("ls")
    assert r.returncode == 2 and "list of project names" in r.stderr
    config.write_text(text.replace("schema_version: 1", "schema_version: 99"))
    r = atlas("ls")
    assert r.returncode == 2 and "upgrade" in r.stderr
    config.write_text(text.replace("status_limit: 4000", "status_limit: lots"))
    assert atlas("ls").returncode == 2


def test_one_damaged_topic_does_not_hide_the_others(record: Record,
                                                    atlas: Callable[..., Any]) -> None:
    artifacts.put(record, "alpha", "a\n", author="ann")
    bad = artifacts.put(record, "beta", "b\n", author="ann")
    artifacts.put(record, "gamma", "c\n", author="ann")
    os.chmod(bad.path, 0o644)
    bad.path.write_text("no front matter at all\n")
    r = atlas("ls", "--json")
    assert r.returncode == 0 and "beta" in r.stderr
    assert [t["name"] for t in r.json()["topics"]] == ["alpha", "gamma"]
    r = atlas("feed", "--json", identity="zed")
    assert r.returncode == 0
    assert {i["name"] for i in r.json()["new"]} == {"alpha", "gamma"}


def test_environment_failures_are_two_plain_lines(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = run_atlas("init", str(blocker / "record"))
    assert r.returncode == 2
    _no_traceback(r)
    assert 1 <= len(r.stderr.strip().splitlines()) <= 2


def test_diff_has_json(record: Record, atlas: Callable[..., Any]) -> None:
    artifacts.put(record, "plan", "a\n", author="ann")
    artifacts.put(record, "plan", "b\n", author="ann")
    d = atlas("diff", "plan", "--json").json()
    assert (d["name"], d["from"], d["to"]) == ("plan", 1, 2) and "+b" in d["diff"]
    status.write(record, "s1\n", author="ann")
    d = atlas("status", "diff", "--json").json()
    assert (d["from"], d["to"]) == (0, 1) and "+s1" in d["diff"]


def test_a_reader_that_goes_away_is_not_an_error(record: Record) -> None:
    for i in range(400):
        artifacts.put(record, "plan", f"v{i}\n", author="ann")
    proc = subprocess.Popen(
        atlas_command("--record", str(record.root), "history", "plan"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""


def test_links_must_exist(record: Record, atlas: Callable[..., Any]) -> None:
    artifacts.put(record, "plan", "a\n", author="ann")
    before = snapshot(record.root / "projects")
    for link in ("plan@v9", "nothing@v1", "dec-20990101t000000000000z-deadbeef", "garbage"):
        r = atlas("put", "next", "--link", link, identity="ann", input="x\n")
        assert r.returncode == 2, (link, r.stderr)
    assert snapshot(record.root / "projects") == before
    r = atlas("put", "next", "--link", "plan@v1", identity="ann", input="x\n")
    assert r.returncode == 0
    assert artifacts.get(record, "next").links == ("plan@v1",)


def test_a_summary_with_control_characters_is_refused(record: Record,
                                                      atlas: Callable[..., Any]) -> None:
    before = snapshot(record.root)
    for args in (("put", "plan"), ("status", "write")):
        r = atlas(*args, "--summary", "ring \x07 the bell", identity="ann", input="x\n")
        assert r.returncode == 2 and "control character" in r.stderr
        r = atlas(*args, "--summary", "two\nlines", identity="ann", input="x\n")
        assert r.returncode == 2
    assert snapshot(record.root) == before
