"""`atlas check` on hand-made records: each finding produced by the edit that causes it."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.runner import run_atlas

from atlas_files.check import check_record, validators
from atlas_files.facts import timeutil
from atlas_files.protocol import artifacts, corrections, decisions, leases, status
from atlas_files.protocol.telemetry import rows
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record


def codes(record: Record, *paths: Path, fix: bool = False) -> list[str]:
    report = check_record(record.root, list(paths), fix=fix)
    return [f.code for f in report.findings]


def findings(record: Record, *paths: Path) -> list[Any]:
    return check_record(record.root, list(paths)).findings


def topic_dir(record: Record, name: str, project: str = "web") -> Path:
    folder = record.root / "projects" / project / "artifacts" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def hand_write(folder: Path, name: str, version: int, body: str, *,
               based_on: int | None = None, digest: bool = False, filename: str | None = None,
               **extra: Any) -> Path:
    """A version written by hand, as an agent with file access only would."""
    meta: dict[str, Any] = {
        "name": name, "version": version,
        "based_on": version - 1 if based_on is None else based_on,
        "author": "ann", "written_at": "2026-01-31T12:00:00Z", "summary": "by hand",
    }
    meta.update(extra)
    if digest:
        meta["digest"] = frontmatter.digest_of(body.encode())
    path = folder / (filename or f"{name}.v{version:04d}.md")
    path.write_bytes(frontmatter.render(meta, body.encode()))
    return path


def draft(record: Record) -> Path:
    """A topic nobody links to, at v2, written through the library."""
    artifacts.put(record, "draft", "# Draft\n", author="ann", project="web")
    artifacts.put(record, "draft", "# Draft\n\nmore\n", author="ann", project="web")
    return topic_dir(record, "draft")


def make_writable(path: Path) -> None:
    path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.fixture
def rich(record: Record) -> Record:
    """A record with one of everything, written through the library: it must be clean."""
    artifacts.put(record, "plan", "# Plan\n\n## Step one\n", author="ann", project="web")
    artifacts.put(record, "plan", "# Plan\n\n## Step one\n\n## Step two\n", author="ann",
                  project="web")
    artifacts.put(record, "notes", "See [the plan](../plan/plan.v0002.md#step-two).\n",
                  author="bob",
               project="web", links=["plan@v2"])
    artifacts.put(record, "proposal", "Do X.\n", author="bob", project="web", proposal=True)
    status.write(record, "All good: [notes](../artifacts/notes/notes.v0001.md).\n",
                        author="ann", project="web")
    decisions.decide(record, topic="do X?", recommended="X", chosen="X", relation="agreed",
                     why="it fits", author="ann", project="web", links=["plan@v2"],
                     accepts="proposal@v1")
    corrections.correct(record, "plan@v1", what="step one was misnamed", author="ann",
                        project="web")
    artifacts.put(record, "old", "An idea.\n", author="ann", project="web")
    corrections.retract(record, "old@v1", why="it was wrong", author="ann", project="web")
    leases.claim(record, "gpubox.gpu0", holder="ann", duration_s=3600, why="training run")
    rows.write_row(record, {
        "machine": "gpubox", "observed_at": timeutil.format_time(timeutil.now()),
        "observer": "prober", "reachable": False, "gpus": [], "error": "timed out",
    })
    (record.root / "notes.md").write_text("# Notes\n\nThe [plan](projects/web/artifacts/plan/"
                                          "plan.v0002.md#plan) and [top](#notes).\n")
    return record


def test_a_clean_record_gives_no_finding(rich: Record) -> None:
    report = check_record(rich.root)
    assert report.findings == []
    assert report.ok and report.files >= 12


def test_clean_record_cli_exits_0_and_json_is_one_document(rich: Record) -> None:
    result = run_atlas("check", "--json", record=rich.root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.json() == {"ok": True, "findings": [], "fixed": [],
                             "files": result.json()["files"]}


def test_a_missing_validator_library_is_said_once_not_on_every_file(
        rich: Record, monkeypatch: pytest.MonkeyPatch) -> None:
    """atlas installed without its dependencies: one plain error and exit 2, not a
    'bug in atlas' finding on each of the record's files."""
    monkeypatch.setitem(sys.modules, "jsonschema_rs", None)  # its import now fails
    validators.fast.cache_clear()
    try:
        result = run_atlas("check", record=rich.root)
    finally:
        validators.fast.cache_clear()
    assert result.returncode == 2
    assert "ATL099" not in result.stdout + result.stderr
    assert "jsonschema-rs" in result.stderr and "reinstall atlas-files" in result.stderr
    assert "Traceback" not in result.stderr


# -- schema ---------------------------------------------------------------------------------


def test_version_front_matter_against_schema(record: Record) -> None:
    path = hand_write(topic_dir(record, "plan"), "plan", 1, "x\n", digest=True,
                      author="Ann Smith")
    found = findings(record)
    assert [f.code for f in found] == ["ATL001"]
    assert found[0].line == 5 and "author" in found[0].message
    assert found[0].path.endswith(path.name)


def test_config_against_schema(record: Record) -> None:
    config = record.root / "atlas.yaml"
    config.write_text(config.read_text().replace("schema_version: 1", "schema_version: 7")
                      .replace("status_limit: 4000", "status_limit: many"))
    found = findings(record)
    assert [f.code for f in found] == ["ATL001", "ATL001"]
    assert {f.line for f in found} == {
        i + 1 for i, line in enumerate(config.read_text().splitlines())
        if line.startswith(("schema_version", "status_limit"))
    }


def test_config_that_is_not_yaml_is_a_finding_and_the_rest_is_still_checked(
        record: Record) -> None:
    (record.root / "atlas.yaml").write_text("projects: [web\n  oops: {\n")
    hand_write(topic_dir(record, "plan"), "plan", 2, "x\n", digest=True)
    assert sorted(codes(record)) == ["ATL002", "ATL003"]


def test_receipt_and_telemetry_rows_against_schema(record: Record) -> None:
    (record.root / "receipts").mkdir(exist_ok=True)
    (record.root / "receipts" / "ann.json").write_text(
        json.dumps({"identity": "ann", "read": {"web/status": -1}}, indent=1))
    (record.root / "telemetry" / "box.json").write_text(json.dumps(
        {"machine": "box", "observed_at": "2026-01-31T12:00:00Z", "observer": "p",
         "reachable": False, "gpus": [], "error": "", "extra": 1}, indent=1))
    (record.root / "receipts" / "bob.json").write_text("{not json")
    found = findings(record)
    assert sorted((Path(f.path).name, f.code) for f in found) == [
        ("ann.json", "ATL001"), ("bob.json", "ATL002"), ("box.json", "ATL001"),
        ("box.json", "ATL001"),
    ]


def test_decision_and_correction_entries_against_schema(rich: Record) -> None:
    decision = next((rich.root / "projects/web/decisions").iterdir())
    make_writable(decision)
    text = decision.read_text()
    decision.write_text(text.replace('relation: "agreed"', 'relation: "maybe"'))
    correction = sorted((rich.root / "projects/web/corrections").iterdir())[0]
    make_writable(correction)
    lines = [ln for ln in correction.read_text().split("\n") if not ln.startswith("what:")]
    correction.write_text("\n".join(lines))
    found = {(Path(f.path).name, f.code) for f in findings(rich)}
    assert (decision.name, "ATL001") in found
    assert (correction.name, "ATL001") in found
    # each edit also broke the entry's digest
    assert (decision.name, "ATL005") in found and (correction.name, "ATL005") in found


def test_lease_generation_against_schema(rich: Record) -> None:
    gen = rich.root / "leases" / "gpubox.gpu0" / "g00000001.json"
    make_writable(gen)
    data = json.loads(gen.read_text())
    data["action"] = "grab"
    gen.write_text(json.dumps(data, indent=2))
    found = findings(rich)
    assert [(f.code, f.line) for f in found] == [
        ("ATL001", next(i + 1 for i, ln in enumerate(gen.read_text().split("\n"))
                        if '"action"' in ln))
    ]


def test_unreadable_version_is_a_finding_not_an_abort(record: Record) -> None:
    folder = topic_dir(record, "plan")
    (folder / "plan.v0001.md").write_text("no front matter here\n")
    hand_write(folder, "plan", 2, "x\n", digest=True, based_on=1)
    (folder / "plan.v0003.md").write_bytes(b"---\nname: [unclosed\n---\nbody\n")
    other = topic_dir(record, "other")
    hand_write(other, "other", 1, "y\n", digest=True, author="NOT OK")
    found = sorted((Path(f.path).name, f.code) for f in findings(record))
    assert found == [("other.v0001.md", "ATL001"), ("plan.v0001.md", "ATL002"),
                     ("plan.v0003.md", "ATL002")]


# -- versions -------------------------------------------------------------------------------


def test_version_skip(record: Record) -> None:
    folder = topic_dir(record, "plan")
    hand_write(folder, "plan", 1, "a\n", digest=True)
    hand_write(folder, "plan", 2, "b\n", digest=True)
    hand_write(folder, "plan", 4, "c\n", digest=True, based_on=3)
    found = findings(record)
    assert [f.code for f in found] == ["ATL003"]
    assert "v3 is missing" in found[0].message and found[0].path.endswith("plan.v0004.md")
    assert "plan.v0003.md" in found[0].hint


def test_a_deleted_middle_version_is_restored_not_renumbered(record: Record) -> None:
    """A published version deleted by hand: the hint must not say to rename the version
    after it (renaming a published version) but to bring the missing one back."""
    for v in range(1, 4):
        artifacts.put(record, "plan", f"v{v}\n", author="ann", project="web", expect=v - 1)
    folder = topic_dir(record, "plan")
    (folder / "plan.v0002.md").unlink()
    [found] = findings(record)
    assert found.code == "ATL003" and "v2 is missing" in found.message
    assert "restore plan.v0002.md from git" in found.hint
    assert "rename" not in found.hint
    # A hand-written new version numbered one too far is still told to take the next number.
    hand_write(folder, "plan", 5, "new\n", based_on=3)
    hints = [f.hint for f in findings(record) if f.code == "ATL003"]
    assert any("rename it to plan.v0004.md" in h for h in hints), hints


def test_a_version_written_in_the_future_is_flagged(record: Record) -> None:
    folder = topic_dir(record, "plan")
    ahead = timeutil.format_time(timeutil.now() + timedelta(days=26328))
    hand_write(folder, "plan", 1, "a\n", digest=True, written_at=ahead)
    found = findings(record)
    assert [f.code for f in found] == ["ATL022"]
    assert "in the future" in found[0].message and found[0].line == 6
    # Within the clock tolerance (two minutes by default) it is no finding.
    near = timeutil.format_time(timeutil.now() + timedelta(seconds=30))
    hand_write(folder, "plan", 2, "b\n", digest=True, written_at=near)
    assert [f.code for f in findings(record)] == ["ATL022"]


def test_an_entry_made_in_the_future_is_flagged(record: Record) -> None:
    d = decisions.decide(record, topic="t", recommended="a", chosen="a", relation="agreed",
                         why="w", author="ann", project="web")
    path = record.root / "projects" / "web" / "decisions" / f"{d.id}.md"
    text = path.read_text()
    path.chmod(0o644)
    path.write_text(text.replace(f'at: "{d.at}"', 'at: "2099-01-01T00:00:00Z"'))
    assert "ATL022" in codes(record)


def test_a_record_inside_the_record_is_refused_and_reported(record: Record) -> None:
    inner = record.root / "projects" / "web" / "inner"
    r = run_atlas("init", str(inner))
    assert r.returncode == 2 and "lies inside the record at" in r.stderr
    assert not inner.exists()
    # One made anyway (by hand, or by an older atlas) is reported by the outer check.
    Record.init(record.root.parent / "elsewhere")
    (record.root / "projects" / "web" / "sub").mkdir()
    (record.root / "projects" / "web" / "sub" / "atlas.yaml").write_bytes(
        (record.root.parent / "elsewhere" / "atlas.yaml").read_bytes())
    found = [f for f in findings(record) if f.code == "ATL035"]
    assert len(found) == 1 and "projects/web/sub is a record inside this record" in \
        found[0].message


def test_first_version_must_be_1(record: Record) -> None:
    hand_write(topic_dir(record, "plan"), "plan", 2, "b\n", digest=True)
    assert codes(record) == ["ATL003"]


def test_file_name_and_front_matter_disagree(record: Record) -> None:
    folder = topic_dir(record, "plan")
    hand_write(folder, "plan", 1, "a\n", digest=True)
    hand_write(folder, "plan", 3, "b\n", digest=True, filename="plan.v0002.md", based_on=1)
    hand_write(topic_dir(record, "other"), "plan", 1, "c\n", digest=True,
               filename="other.v0001.md")
    found = sorted((Path(f.path).name, f.code, f.message) for f in findings(record))
    assert [(n, c) for n, c, _ in found] == [("other.v0001.md", "ATL004"),
                                             ("plan.v0002.md", "ATL004")]
    assert "version 3" in found[1][2] and "'plan'" in found[0][2]


def test_misnamed_version_files_are_not_versions(record: Record) -> None:
    folder = topic_dir(record, "plan")
    hand_write(folder, "plan", 1, "a\n", digest=True)
    hand_write(folder, "plan", 2, "b\n", digest=True, filename="plan.v2.md")
    hand_write(folder, "plan", 3, "c\n", digest=True, filename="plan.v00003.md")
    found = sorted((Path(f.path).name, f.code) for f in findings(record))
    assert found == [("plan.v00003.md", "ATL034"), ("plan.v2.md", "ATL034")]
    assert artifacts.history(record, "plan", project="web")[-1].version == 1  # readers agree


def test_edited_in_place(rich: Record) -> None:
    path = rich.root / "projects/web/artifacts/plan/plan.v0001.md"
    assert not os.access(path, os.W_OK) or os.geteuid() == 0  # published read-only
    make_writable(path)
    path.write_bytes(path.read_bytes() + b"one more line\n")
    found = findings(rich)
    assert [f.code for f in found] == ["ATL005"]
    assert "versions are immutable; write the next version" in found[0].message


def test_missing_digest_is_a_warning_and_fix_stamps_it(rich: Record) -> None:
    path = hand_write(draft(rich), "draft", 3, "# Draft\n\nby hand\n")
    report = check_record(rich.root)
    assert [f.code for f in report.findings] == ["ATL006"] and report.ok
    before = frontmatter.parse(path.read_bytes())
    fixed = check_record(rich.root, fix=True)
    assert fixed.findings == [] and len(fixed.fixed) == 1
    after = frontmatter.parse(path.read_bytes())
    assert after.body == before.body and after.digest_ok is True
    assert {k: v for k, v in after.meta.items() if k != "digest"} == before.meta
    assert not path.stat().st_mode & 0o222  # published read-only
    assert check_record(rich.root).findings == []
    assert artifacts.get(rich, "draft", project="web").version == 3


def test_fix_leaves_a_version_with_other_problems_unstamped(rich: Record) -> None:
    path = hand_write(draft(rich), "draft", 3, "x\n", based_on=1)
    data = path.read_bytes()
    assert sorted(codes(rich, fix=True)) == ["ATL006", "ATL007"]
    assert path.read_bytes() == data


def test_version_jump_in_the_newest_version(rich: Record) -> None:
    hand_write(draft(rich), "draft", 3, "x\n", digest=True, based_on=1)
    found = findings(rich)
    assert [f.code for f in found] == ["ATL007"]
    assert "you read v1, but v2 exists: read it, merge, write again" in found[0].message


def test_version_jump_in_history_is_a_warning(rich: Record) -> None:
    folder = draft(rich)
    hand_write(folder, "draft", 3, "x\n", digest=True, based_on=1)
    hand_write(folder, "draft", 4, "y\n", digest=True, based_on=3)
    report = check_record(rich.root)
    assert [f.code for f in report.findings] == ["ATL008"] and report.ok


def test_based_on_not_below_version(record: Record) -> None:
    hand_write(topic_dir(record, "plan"), "plan", 1, "x\n", digest=True, based_on=1)
    assert codes(record) == ["ATL009"]


# -- links ----------------------------------------------------------------------------------


def test_broken_link_and_anchor(rich: Record) -> None:
    body = ("[gone](../plan/plan.v0009.md) [anchor](../plan/plan.v0002.md#step-three)\n"
            "[self](#nowhere) `[code](nope.md)`\n\n```\n[fenced](nope.md)\n```\n"
            "[web](https://example.com/x#y)\n")
    path = hand_write(topic_dir(rich, "links"), "links", 1, body, digest=True)
    found = findings(rich)
    # nine lines of front matter: the body starts on line 10
    assert sorted((f.code, f.line) for f in found) == [
        ("ATL010", 10), ("ATL011", 10), ("ATL011", 11)]
    anchor = next(f for f in found if "step-three" in f.message)
    assert "did you mean #step-two?" in anchor.hint
    assert all(f.path.endswith(path.name) for f in found)


def test_links_in_plain_markdown_of_the_record(rich: Record) -> None:
    (rich.root / "notes.md").write_text("# Notes\n\n[x](projects/web/missing.md)\n")
    found = findings(rich)
    assert [(f.code, f.line, Path(f.path).name) for f in found] == [("ATL010", 3, "notes.md")]


def test_stale_link_to_superseded_version_is_a_warning(rich: Record) -> None:
    artifacts.put(rich, "plan", "# Plan\n\n## Step two\n\n## Step three\n", author="ann",
                  project="web",
             expect=2)
    report = check_record(rich.root)
    got = sorted((Path(f.path).name, f.code) for f in report.findings)
    # the notes link plan v2 by Markdown link and in links:; notes.md links it too
    assert got == [("notes.md", "ATL012"), ("notes.v0001.md", "ATL012"),
                   ("notes.v0001.md", "ATL012")]
    assert report.ok  # warnings only


def test_link_to_retracted_version_is_an_error(rich: Record) -> None:
    artifacts.put(rich, "built", "Built on [old](../old/old.v0001.md).\n", author="bob",
                  project="web",
             links=["old@v1"])
    found = findings(rich)
    assert sorted((f.code, Path(f.path).name) for f in found) == [
        ("ATL013", "built.v0001.md"), ("ATL013", "built.v0001.md")]


def test_links_in_superseded_versions_are_history(rich: Record) -> None:
    artifacts.put(rich, "notes", "Newer notes.\n", author="bob", project="web", expect=1)
    artifacts.put(rich, "plan", "# Plan\n", author="ann", project="web", expect=2)
    # notes v1 links plan v2 twice, but v1 is history now; what can still act on a link
    # is judged: the status (links notes v1) and notes.md (links plan v2)
    found = sorted((f.code, Path(f.path).name) for f in findings(rich))
    assert found == [("ATL012", "notes.md"), ("ATL012", "status.v0001.md")]


def test_dangling_references(rich: Record) -> None:
    hand_write(topic_dir(rich, "refs"), "refs", 1, "x\n", digest=True,
               links=["plan@v9", "dec-20260101t000000000000z-00000000", "nope@v1", "Bad Ref"])
    found = findings(rich)
    assert [f.code for f in found] == ["ATL014"] * 4
    assert "has no v9 (it is at v2)" in found[0].message


def test_decision_accepting_a_missing_version_and_linking_a_retracted_one(
        rich: Record) -> None:
    folder = rich.root / "projects/web/decisions"
    entry = next(folder.iterdir())
    parsed = frontmatter.parse(entry.read_bytes())
    from atlas_files.storage import entries

    meta = dict(parsed.meta)
    meta.update(id="dec-20260102t000000000000z-0a0b0c0d", accepts="proposal@v5",
                links=["old@v1"])
    meta["digest"] = entries.digest_of_entry(meta, parsed.body)
    (folder / "dec-20260102t000000000000z-0a0b0c0d.md").write_bytes(
        frontmatter.render(meta, parsed.body))
    report = check_record(rich.root)
    assert sorted(f.code for f in report.findings) == ["ATL014", "ATL015"]


def test_correction_of_something_that_does_not_exist(rich: Record) -> None:
    folder = rich.root / "projects/web/corrections"
    entry = sorted(folder.iterdir())[0]
    make_writable(entry)
    entry.write_text(entry.read_text().replace('ref: "plan@v1"', 'ref: "plan@v7"'))
    assert sorted(codes(rich)) == ["ATL005", "ATL014"]


def test_entry_named_after_another_id(rich: Record) -> None:
    entry = next((rich.root / "projects/web/decisions").iterdir())
    entry.rename(entry.with_name("dec-20260103t000000000000z-deadbeef.md"))
    assert codes(rich) == ["ATL004"]


# -- leases, debris, status, strays ---------------------------------------------------------


def _lease(record: Record, resource: str, **changes: Any) -> Path:
    folder = record.root / "leases" / resource
    folder.mkdir(parents=True, exist_ok=True)
    at = timeutil.now()
    gen = {
        "kind": "lease", "resource": resource, "generation": 1, "action": "claim",
        "holder": "ann", "why": "by hand", "claimed_at": timeutil.format_time(at),
        "expires_at": timeutil.format_time(at + timedelta(hours=1)), "duration_s": 3600.0,
        "written_at": timeutil.format_time(at), "written_by": "ann", "previous": None,
    }
    gen.update(changes)
    path = folder / "g00000001.json"
    path.write_text(json.dumps(gen, indent=2))
    return path


def test_lease_longer_than_the_cap(record: Record) -> None:
    at = timeutil.now()
    _lease(record, "box", expires_at=timeutil.format_time(at + timedelta(hours=9)),
           duration_s=9 * 3600.0)
    found = findings(record)
    assert [f.code for f in found] == ["ATL020"] and "longer than the record's cap of 4h" \
        in found[0].message


def test_lease_claimed_in_the_future(record: Record) -> None:
    later = timeutil.now() + timedelta(hours=1)
    _lease(record, "box", claimed_at=timeutil.format_time(later),
           written_at=timeutil.format_time(later),
           expires_at=timeutil.format_time(later + timedelta(hours=1)))
    assert codes(record) == ["ATL021"]
    # within the clock tolerance (2m by default) it is no finding
    soon = timeutil.now() + timedelta(seconds=30)
    _lease(record, "box", claimed_at=timeutil.format_time(soon),
           written_at=timeutil.format_time(soon),
           expires_at=timeutil.format_time(soon + timedelta(hours=1)))
    assert codes(record) == []


def test_lease_generation_gap_and_wrong_folder(rich: Record) -> None:
    folder = rich.root / "leases" / "gpubox.gpu0"
    data = json.loads((folder / "g00000001.json").read_text())
    data["generation"] = 3
    data["resource"] = "other"
    (folder / "g00000003.json").write_text(json.dumps(data))
    assert sorted(codes(rich)) == ["ATL003", "ATL004"]


def test_old_debris_is_a_warning_and_fix_removes_it(rich: Record) -> None:
    folder = topic_dir(rich, "plan")
    old = folder / ".atlas-tmp-0000dead-999999-abcd"
    old.write_text("half a write")
    young = folder / ".atlas-tmp-0000dead-999998-abcd"
    young.write_text("a write in flight")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    report = check_record(rich.root)
    assert [(f.code, Path(f.path).name) for f in report.findings] == [("ATL030", old.name)]
    assert report.ok
    fixed = check_record(rich.root, fix=True)
    assert fixed.findings == [] and not old.exists() and young.exists()


def test_status_longer_than_its_limit(rich: Record) -> None:
    status.write(rich, "x" * 5000, author="ann", project="web", expect=1)
    found = findings(rich)
    assert [f.code for f in found] == ["ATL031"] and "5000 characters" in found[0].message


def test_stray_files_and_unlisted_project(rich: Record) -> None:
    (topic_dir(rich, "plan") / "notes.txt").write_text("scribble")
    (rich.root / "projects" / "web" / "decisions" / "my-decision.md").write_text("x")
    (rich.root / "projects" / "ghost" / "status").mkdir(parents=True)
    found = sorted((f.code, Path(f.path).name) for f in findings(rich))
    assert found == [("ATL032", "my-decision.md"), ("ATL032", "notes.txt"),
                     ("ATL033", "ghost")]


# -- scope, CLI -----------------------------------------------------------------------------


def test_paths_limit_the_check(rich: Record) -> None:
    hand_write(topic_dir(rich, "fresh"), "fresh", 1, "x\n", digest=True)
    bad = hand_write(topic_dir(rich, "fresh"), "fresh", 3, "x\n", digest=True, based_on=2)
    hand_write(topic_dir(rich, "other"), "other", 1, "x\n", digest=True, author="NO")
    assert codes(rich, bad) == ["ATL003"]
    assert codes(rich, rich.root / "projects/web/artifacts/other") == ["ATL001"]
    assert sorted(codes(rich, rich.root / "projects")) == ["ATL001", "ATL003"]


def test_cli_lines_hints_and_exit_codes(rich: Record) -> None:
    hand_write(topic_dir(rich, "fresh"), "fresh", 1, "x\n", digest=True)
    hand_write(topic_dir(rich, "fresh"), "fresh", 3, "x\n", digest=True, based_on=2)
    result = run_atlas("check", record=rich.root, cwd=rich.root)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == ("projects/web/artifacts/fresh/fresh.v0003.md:1: ATL003 version skip: "
                        "fresh.v0003.md is v3 after v1; v2 is missing")
    assert lines[1].strip().startswith("error; hint: ")
    assert lines[-1].startswith("atlas check: 1 error, 0 warnings")
    as_json = run_atlas("check", "--json", record=rich.root, cwd=rich.root).json()
    assert as_json["ok"] is False
    assert as_json["findings"][0] == {
        "path": "projects/web/artifacts/fresh/fresh.v0003.md", "line": 1, "code": "ATL003",
        "severity": "error", "message": lines[0].split("ATL003 ", 1)[1],
        "hint": as_json["findings"][0]["hint"],
    }
    # warnings alone exit 0
    (rich.root / "projects/web/artifacts/fresh/fresh.v0003.md").unlink()
    hand_write(draft(rich), "draft", 3, "x\n")
    assert run_atlas("check", record=rich.root).returncode == 0


def test_cli_finds_the_record_from_a_path_and_refuses_paths_outside(
        rich: Record, tmp_path: Path) -> None:
    result = run_atlas("check", str(rich.root / "projects"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    outside = run_atlas("check", str(tmp_path), record=rich.root)
    assert outside.returncode == 2 and "not inside the record" in outside.stderr
    assert "Traceback" not in outside.stderr
    nowhere = run_atlas("check", cwd=tmp_path)
    assert nowhere.returncode == 2 and "--links-only" in nowhere.stderr


def test_links_only_and_versions_only_outside_a_record(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\n## Part one\n")
    (docs / "b.md").write_text("[a](a.md#part-one) [bad](a.md#part-two)\n[c](c.md)\n")
    (docs / "plan.v0001.md").write_text("one")
    (docs / "plan.v0003.md").write_text("three")
    links = run_atlas("check", "--links-only", "--json", cwd=tmp_path)
    assert links.returncode == 1
    assert [(f["path"], f["line"], f["code"]) for f in links.json()["findings"]] == [
        ("docs/b.md", 1, "ATL011"), ("docs/b.md", 2, "ATL010")]
    versions = run_atlas("check", "--versions-only", "docs", cwd=tmp_path)
    assert versions.returncode == 1
    assert versions.stdout.startswith("docs/plan.v0003.md:1: ATL003 version skip in "
                                      "plan.v*.md: plan.v0003.md is v3 after v1; v2 is missing")
    assert run_atlas("check", "--links-only", "--versions-only", cwd=tmp_path).returncode == 2
    assert run_atlas("check", "--fix", "--links-only", cwd=tmp_path).returncode == 2


def test_the_docs_table_lists_every_code_with_its_severity() -> None:
    from atlas_files.check import CODES

    doc = (Path(__file__).resolve().parents[2] / "docs" / "check.md").read_text()
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip()
            for line in doc.splitlines() if line.startswith("| ATL")}
    assert rows == {code: c.severity for code, c in CODES.items()}


def test_hand_written_decision_is_stamped_by_fix(record: Record) -> None:
    folder = record.root / "projects" / "web" / "decisions"
    path = folder / "dec-20260131t120000000000z-1a2b3c4d.md"
    path.write_text(
        "---\nid: dec-20260131t120000000000z-1a2b3c4d\nkind: decision\n"
        "at: 2026-01-31T12:00:00Z\nauthor: file-agent\nproject: web\ntopic: which cache?\n"
        "recommended: redis\nchosen: none for now\nrelation: disagreed\n"
        "why: on timing, not on content\n---\nWritten by hand.\n")
    report = check_record(record.root)
    assert [f.code for f in report.findings] == ["ATL006"] and report.ok
    fixed = check_record(record.root, fix=True)
    assert fixed.findings == [] and len(fixed.fixed) == 1
    assert check_record(record.root).findings == []
    from atlas_files.storage import entries

    assert entries.read_entry(path).digest_ok is True
    listed = decisions.list_decisions(record, project="web")
    assert [d.topic for d in listed] == ["which cache?"]


def test_fix_does_not_stamp_a_version_that_skips_a_number(record: Record) -> None:
    folder = topic_dir(record, "plan")
    hand_write(folder, "plan", 1, "a\n", digest=True)
    path = hand_write(folder, "plan", 3, "c\n", based_on=2)
    data = path.read_bytes()
    assert sorted(codes(record, fix=True)) == ["ATL003", "ATL006"]
    assert path.read_bytes() == data


def test_a_symlinked_version_is_reported_not_followed(record: Record, tmp_path: Path) -> None:
    folder = topic_dir(record, "plan")
    hand_write(folder, "plan", 1, "a\n", digest=True)
    outside = hand_write(tmp_path, "plan", 2, "secret\n", digest=True)
    (folder / "plan.v0002.md").symlink_to(outside)
    found = findings(record)
    assert [(f.code, Path(f.path).name) for f in found] == [("ATL002", "plan.v0002.md")]
    assert "symbolic link" in found[0].message
