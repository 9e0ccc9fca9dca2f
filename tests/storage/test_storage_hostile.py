"""The storage layer against a hostile record: planted symlinks, YAML alias bombs, huge
bodies, names with a trailing newline, and the messages a damaged file is reported with."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.runner import atlas_command, child_env, run_atlas, snapshot

from atlas_files.facts import layout
from atlas_files.facts.errors import AtlasWarning, BadInput, DamagedFile
from atlas_files.facts.names import is_entry_id
from atlas_files.protocol import artifacts
from atlas_files.storage import documents, frontmatter, schemas
from atlas_files.storage.record import Record

# Nine levels of nine: about 600 bytes of YAML that expand to 387 million strings.
BOMB = "".join(
    [f'l0: &l0 [{", ".join(["lol"] * 9)}]\n']
    + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)]
)


def bounded_atlas(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real `atlas` in a child process that may use at most 1 GiB of address space."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = child_env()
    return subprocess.run(
        atlas_command(*args), capture_output=True, text=True,
        timeout=timeout, env=env, preexec_fn=limit, stdin=subprocess.DEVNULL,
    )


def topic_dir(record: Record, name: str, project: str = "web") -> Path:
    return record.root / "projects" / project / "artifacts" / name


def hand_write(folder: Path, name: str, version: int, body: str = "by hand\n",
               meta: dict[str, Any] | None = None) -> Path:
    """A version as a file-only agent writes it; ``meta`` overrides the front matter."""
    fields: dict[str, Any] = {"name": name, "version": version, "based_on": version - 1,
                              "author": "ann", "written_at": "2026-01-31T12:00:00Z"}
    fields.update(meta or {})
    path = folder / f"{name}.v{version:04d}.md"
    path.write_bytes(frontmatter.render(fields, body.encode()))
    return path


# -- 3. lock files and other record files are never opened through a symlink -------------


def test_a_symlinked_config_lock_is_refused_and_creates_nothing(
    record: Record, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere" / "created-by-the-lock"
    target.parent.mkdir()
    (record.root / ".atlas.yaml.lock").symlink_to(target)
    config = (record.root / "atlas.yaml").read_bytes()
    code, _, err = run_atlas("init", str(record.root), "--project", "new", record=record.root)
    assert code == 2
    assert ".atlas.yaml.lock is a symlink" in err and "atlas: hint: delete" in err
    assert not target.exists()
    assert (record.root / "atlas.yaml").read_bytes() == config


def test_a_symlinked_receipt_lock_creates_nothing(record: Record, tmp_path: Path) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    target = tmp_path / "created-by-the-receipt-lock"
    (record.root / "receipts" / ".bob.lock").symlink_to(target)
    code, out, err = run_atlas("get", "plan", identity="bob", record=record.root)
    # The read itself stands; the receipt it could not update is a warning.
    assert code == 0 and "one" in out
    assert "warning" in err and ".bob.lock is a symlink" in err
    assert not target.exists()


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_lock_that_is_no_plain_file_is_refused(record: Record, kind: str) -> None:
    lock = record.root / ".atlas.yaml.lock"
    if kind == "folder":
        lock.mkdir()
    else:
        os.mkfifo(lock)
    with pytest.raises(DamagedFile, match="should be a plain lock file"):
        Record.init(record.root, ["new"])
    assert "new" not in Record(record.root).config.projects


def test_a_version_that_is_a_named_pipe_is_refused_without_hanging(
    record: Record, tmp_path: Path
) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    os.mkfifo(topic_dir(record, "plan") / "plan.v0002.md")
    proc = subprocess.run(
        atlas_command("--record", str(record.root), "get", "plan"),
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert "plan.v0002.md should be a version file, but it is a named pipe" in proc.stderr


# -- 4. YAML alias bombs ------------------------------------------------------------------


def test_an_alias_bomb_in_atlas_yaml_is_refused_fast_in_bounded_memory(
    record: Record, tmp_path: Path
) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    config = record.root / "atlas.yaml"
    config.write_text(config.read_text() + BOMB + "extra: *l8\n")
    root = str(record.root)
    for args in (["ls"], ["lease", "ls"], ["status", "show"], ["get", "plan"],
                 ["site", "build", "--out", str(tmp_path / "site")]):
        started = time.monotonic()
        proc = bounded_atlas("--record", root, *args)
        assert proc.returncode == 2, (args, proc.stderr[-2000:])
        assert "aliases" in proc.stderr and "not allowed" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert time.monotonic() - started < 20
    # `atlas check` reports it as a finding (its exit 1), in bounded memory too.
    proc = bounded_atlas("--record", root, "check", root)
    assert proc.returncode == 1 and "aliases" in proc.stdout, proc.stdout + proc.stderr


def test_an_alias_bomb_in_a_version_is_damage_and_hides_no_other_topic(
    record: Record, tmp_path: Path
) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    artifacts.put(record, "other", "two\n", author="ann")
    path = topic_dir(record, "plan") / "plan.v0002.md"
    path.write_text("---\nname: plan\nversion: 2\nbased_on: 1\nauthor: ann\n"
                    "written_at: '2026-01-31T12:00:00Z'\n" + BOMB + "summary: *l8\n---\nx\n")
    root = str(record.root)
    proc = bounded_atlas("--record", root, "get", "plan")
    assert proc.returncode == 2 and "plan.v0002.md" in proc.stderr
    assert "aliases" in proc.stderr and "Traceback" not in proc.stderr
    proc = bounded_atlas("--record", root, "ls", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [t["name"] for t in json.loads(proc.stdout)["topics"]] == ["other"]
    assert "plan.v0002.md" in proc.stderr  # left out with a warning, not silently
    proc = bounded_atlas("--record", root, "check", root)
    assert proc.returncode == 1 and "aliases" in proc.stdout
    proc = bounded_atlas("--record", root, "site", "build", "--out", str(tmp_path / "site"),
                         timeout=120)
    assert proc.returncode == 0 and "plan.v0002.md" in proc.stderr, proc.stderr[-2000:]


def test_the_yaml_loader_refuses_anchors_and_keeps_plain_yaml() -> None:
    assert frontmatter.load_yaml("a: [1, 2]\nb: 'it & that *'\n") == {
        "a": [1, 2], "b": "it & that *"}
    for text in ("a: &x 1\nb: *x\n", "a: &x 1\n", "base: &b {k: 1}\nc:\n  <<: *b\n"):
        with pytest.raises(frontmatter.YamlError, match="aliases"):
            frontmatter.load_yaml(text)
    with pytest.raises(frontmatter.YamlError, match="not valid YAML"):
        frontmatter.load_yaml("a: " + "9" * 5000)  # past Python's integer digit limit


def test_messages_quote_a_bounded_part_of_a_huge_value(record: Record) -> None:
    from atlas_files.facts.names import quote

    config = record.root / "atlas.yaml"
    huge = "x" * 1_000_000
    text = config.read_text()
    config.write_text(text.replace("lease_cap: 4h", f"lease_cap: {huge}"))
    with pytest.raises(DamagedFile) as exc:
        _ = Record(record.root).config
    assert "lease_cap" in exc.value.message and len(exc.value.message) < 400
    config.write_text(text.replace("status_limit: 4000",
                                   "status_limit: [" + ", ".join(["1"] * 100_000) + "]"))
    with pytest.raises(DamagedFile) as exc:
        _ = Record(record.root).config
    assert "status_limit" in exc.value.message and len(exc.value.message) < 400
    assert len(quote(list(range(1_000_000)))) <= 80
    assert len(quote({"k": [[["deep"] * 10_000]]})) <= 80


# -- 6. bodies over body_limit ------------------------------------------------------------


def test_a_body_over_the_limit_is_refused_at_every_write(record: Record, tmp_path: Path) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    record.update_config(lambda data: {**data, "body_limit": 1000})
    body = tmp_path / "body.md"
    body.write_text("x" * 1001)
    before = snapshot(record.root)
    for args in (["put", "plan", "-f", str(body)], ["put", "new", "-f", str(body)],
                 ["status", "write", "-f", str(body)]):
        code, _, err = run_atlas(*args, identity="ann", record=record.root)
        assert code == 2, (args, err)
        assert "the body is 1001 bytes; this record's body_limit is 1000 bytes" in err
        assert "nothing was written" in err
        assert "raise body_limit in atlas.yaml" in err
    assert snapshot(record.root) == before
    body.write_text("x" * 1000)
    assert run_atlas("put", "plan", "-f", str(body), identity="ann", record=record.root)[0] == 0


def test_a_hand_written_version_over_the_limit_is_refused_unread(
    record: Record, tmp_path: Path
) -> None:
    """A 2 GiB (sparse) version: `get` refuses it from its size alone, well within 1 GiB of
    memory, and `ls` still lists the other topics."""
    artifacts.put(record, "plan", "one\n", author="ann")
    artifacts.put(record, "other", "two\n", author="ann")
    path = hand_write(topic_dir(record, "plan"), "plan", 2)
    os.truncate(path, 2 << 30)
    root = str(record.root)
    proc = bounded_atlas("--record", root, "get", "plan")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"{path} is {2 << 30} bytes" in proc.stderr and "body_limit" in proc.stderr
    proc = bounded_atlas("--record", root, "ls", "--json")
    assert proc.returncode == 0
    assert [t["name"] for t in json.loads(proc.stdout)["topics"]] == ["other"]


# -- 9. names with a trailing newline -----------------------------------------------------


def test_names_with_a_trailing_newline_are_refused(record: Record, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text("x\n")
    before = snapshot(record.root)
    code, _, err = run_atlas("put", "plan\n", "-f", str(body), identity="ann", record=record.root)
    assert code == 2 and "bad topic name" in err
    code, _, err = run_atlas("put", "plan", "-f", str(body), identity="alice\n", record=record.root)
    assert code == 2 and "bad identity" in err
    code, _, err = run_atlas("-p", "web\n", "ls", record=record.root)
    assert code == 2 and "bad project name" in err
    assert snapshot(record.root) == before
    assert not is_entry_id("dec-20261129t110512123456z-1a2b3c4d\n")
    assert not layout.is_entry_file("dec-20261129t110512123456z-1a2b3c4d.md\n")


def test_the_schemas_refuse_a_trailing_newline(record: Record) -> None:
    meta: dict[str, Any] = {"name": "plan", "version": 1, "based_on": 0, "author": "ann",
                            "written_at": "2026-01-31T12:00:00Z", "summary": "s"}
    assert schemas.errors("version", meta) == []
    for key in ("name", "author"):
        assert schemas.errors("version", {**meta, key: meta[key] + "\n"}) != []
    config = dict(Record(record.root).config.raw)
    assert schemas.errors("config", config) == []
    assert schemas.errors("config", {**config, "default_project": "web\n"}) != []
    assert schemas.errors("config", {**config, "lease_cap": "4h\n"}) != []


def test_a_file_name_holding_a_newline_is_no_version(record: Record) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    folder = topic_dir(record, "plan")
    (folder / "notes\nplan.v0005.md").write_text("not a version")
    stream = record.artifact_stream("plan")
    assert stream.versions() == [1] and stream.latest() == 1
    assert artifacts.put(record, "plan", "two\n", author="ann").version == 2


# -- 10. symlinked folders, inside the record or out --------------------------------------


def test_a_topic_folder_symlinked_to_another_topic_is_refused(
    record: Record, tmp_path: Path
) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    topic_dir(record, "alias").symlink_to("plan")
    body = tmp_path / "body.md"
    body.write_text("x\n")
    before = snapshot(record.root)
    for args in (["put", "alias", "-f", str(body)], ["get", "alias"], ["history", "alias"]):
        code, _, err = run_atlas(*args, identity="ann", record=record.root)
        assert code == 2, (args, err)
        assert "alias is a symlink to projects/web/artifacts/plan inside the record" in err
    assert snapshot(record.root) == before
    assert sorted(os.listdir(topic_dir(record, "plan"))) == ["plan.v0001.md"]
    code, out, err = run_atlas("ls", "--json", record=record.root)
    assert code == 0 and [t["name"] for t in json.loads(out)["topics"]] == ["plan"]
    assert "alias is a symlink" in err


@pytest.mark.parametrize("folder", ["projects/ml", "projects/ml/status",
                                    "projects/ml/decisions", "leases"])
def test_symlinked_project_status_decision_and_lease_folders_are_refused(
    record: Record, tmp_path: Path, folder: str
) -> None:
    artifacts.put(record, "plan", "one\n", author="ann", project="web")
    link = record.root / folder
    target = {"projects/ml": "web", "leases": "projects"}.get(folder, "../web/" + link.name)
    os.rename(link, tmp_path / "moved-away")
    link.symlink_to(target)
    body = tmp_path / "body.md"
    body.write_text("x\n")
    before = snapshot(record.root)
    commands = {
        "projects/ml": [["put", "plan", "-f", str(body)], ["get", "plan"], ["ls"],
                        ["history", "plan"]],
        "projects/ml/status": [["status", "write", "-f", str(body)], ["status", "show"]],
        "projects/ml/decisions": [["decide", "--topic", "t", "--recommended", "a",
                                   "--chosen", "a", "--relation", "agreed", "--why", "w"]],
        "leases": [["lease", "claim", "gpu", "--for", "1h", "--why", "w"]],
    }[folder]
    for args in commands:
        code, _, err = run_atlas("-p", "ml", *args, identity="ann", record=record.root)
        assert code == 2, (args, err)
        assert "is a symlink" in err and "never follows a symlinked folder" in err, err
    assert snapshot(record.root) == before


# -- 15. messages that say what is wrong --------------------------------------------------


def test_a_version_that_is_a_folder_names_its_path(record: Record) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    (topic_dir(record, "plan") / "plan.v0002.md").mkdir()
    code, _, err = run_atlas("get", "plan", record=record.root)
    assert code == 2
    assert "plan.v0002.md should be a version file, but it is a folder" in err
    assert "Is a directory" not in err


@pytest.mark.parametrize(("field", "value", "wanted"), [
    ("version", "abc", "version is 'abc'; it should be a whole number of at least 1"),
    ("version", 0, "version is 0; it should be a whole number of at least 1"),
    ("based_on", -1, "based_on is -1; it should be a whole number of at least 0"),
    ("author", ["a", "b"], "author is ['a', 'b']; it should be text"),
])
def test_a_bad_front_matter_number_is_named_plainly(
    record: Record, field: str, value: Any, wanted: str
) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    hand_write(topic_dir(record, "plan"), "plan", 2, meta={field: value})
    with pytest.raises(DamagedFile) as exc:
        record.artifact_stream("plan").read(2)
    assert wanted in exc.value.message
    assert "invalid literal" not in exc.value.message


def test_a_negative_receipt_is_never_shown_as_a_negative_version(
    record: Record, tmp_path: Path
) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    row = {"identity": "bob", "updated_at": "2026-01-31T12:00:00Z",
           "read": {"web/artifacts/plan": -2}}
    (record.root / "receipts" / "bob.json").write_text(json.dumps(row))
    body = tmp_path / "body.md"
    body.write_text("x\n")
    code, _, err = run_atlas("put", "plan", "-f", str(body), identity="bob", record=record.root)
    assert code == 3, err
    assert "you have never read plan, and it is at v1" in err
    assert not re.search(r"v-\d|\bv0\b", err), err
    # The stop sign itself never counts below v0, whatever it is handed.
    message = record.artifact_stream("plan").conflict(-2).message
    assert "v-" not in message and "v0 " not in message and "v1 by ann" in message


def test_a_byte_order_mark_is_named(record: Record) -> None:
    artifacts.put(record, "plan", "one\n", author="ann")
    path = hand_write(topic_dir(record, "plan"), "plan", 2)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    code, _, err = run_atlas("get", "plan", record=record.root)
    assert code == 2 and "starts with a byte-order mark (BOM)" in err
    assert "does not start with" not in err


def test_a_read_that_only_warns_keeps_warnings_plain(record: Record) -> None:
    """A symlinked topic in `ls` from the library is an AtlasWarning, not an error."""
    artifacts.put(record, "plan", "one\n", author="ann")
    topic_dir(record, "alias").symlink_to("plan")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = [t.name for t in artifacts.ls(record, )]
    assert names == ["plan"]
    assert any(isinstance(w.message, AtlasWarning) for w in caught)


# -- docs: the record README tells a file-only agent the real forms -----------------------


def test_the_record_readme_lists_the_required_entry_fields() -> None:
    from atlas_files.facts.guide import record_readme

    text = record_readme()
    section = text.split("## 5.", 1)[1].split("\n## ", 1)[0]
    for kind in ("decision", "correction"):
        for field in schemas.load(kind)["required"]:
            assert f"`{field}`" in section, (kind, field)
    assert "decision.schema.json" not in text  # a file the record does not hold
    assert "Do not take, renew or release a lease by writing files" in text


def test_the_readme_example_decision_passes_check(tmp_path: Path) -> None:
    from atlas_files.check import check_record
    from atlas_files.facts.guide import record_readme

    record = Record.init(tmp_path / "rec")
    example = record_readme().split("## 5.", 1)[1].split("```\n", 2)[1]
    entry_id = re.search(r'^id: "(.+)"$', example, re.M)
    assert entry_id is not None
    folder = record.root / "projects" / "main" / "decisions"
    (folder / f"{entry_id.group(1)}.md").write_text(example)
    check_record(record.root, fix=True)
    found = check_record(record.root).findings
    assert [f for f in found if f.severity == "error"] == [], found


def test_the_quick_start_says_to_make_a_virtual_environment_first() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1]
    venv = quick.index("python3 -m venv .venv && . .venv/bin/activate")
    assert venv < quick.index("pip install . && atlas demo")


def test_body_limit_is_checked_before_the_stop_sign(record: Record) -> None:
    """Too large a body is bad input (exit 2) even for a writer who also read too little."""
    artifacts.put(record, "plan", "one\n", author="ann")
    record.update_config(lambda data: {**data, "body_limit": 10})
    with pytest.raises(BadInput, match="body_limit is 10 bytes"):
        artifacts.put(Record(record.root), "plan", "x" * 11, author="bob")
    assert documents.FRONT_MATTER_ALLOWANCE > 0


@pytest.mark.parametrize("planted", ["link-to-file", "link-to-missing", "link-to-zero",
                                     "fifo"])
def test_caches_and_stamps_replace_what_lies_in_their_place(tmp_path: Path,
                                                            planted: str) -> None:
    """fsio's opener for atlas's own caches and stamps: what lies where one belongs (a
    link out, to a missing path or to /dev/zero, a named pipe) reads as no cache, and
    writing or touching replaces it with a plain file; the link's target is never created,
    read or changed, and nothing waits on the pipe."""
    from atlas_files.storage import fsio

    outside = tmp_path / "outside"
    outside.mkdir()
    kept = outside / "bashrc"
    kept.write_text("export A=1\n")
    os.utime(kept, (1_000_000_000, 1_000_000_000))
    target = {"link-to-file": kept, "link-to-missing": outside / "made",
              "link-to-zero": Path("/dev/zero")}.get(planted)
    before = sorted((p.name, p.stat().st_mtime_ns, p.read_bytes()) for p in outside.iterdir())
    def keep(p: Path) -> None:
        fsio.keep_cache(p, b"kept")

    acts: list[tuple[str, Callable[[Path], None]]] = [
        ("cache", keep), ("stamp", fsio.touch), ("version", fsio.make_read_only)]
    for name, act in acts:
        path = tmp_path / name
        if target is None:
            os.mkfifo(path)
        else:
            path.symlink_to(target)
        assert fsio.read_cache(path) is None
        assert fsio.file_mtime(path) is None
        if name == "version":
            with pytest.raises(OSError):  # a published file is never made through a link
                act(path)
            continue
        act(path)
        assert path.is_file() and not path.is_symlink()
        assert fsio.read_cache(path) == (b"kept" if name == "cache" else b"")
        assert fsio.file_mtime(path) is not None
    assert sorted((p.name, p.stat().st_mtime_ns, p.read_bytes())
                  for p in outside.iterdir()) == before
