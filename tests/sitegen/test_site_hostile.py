"""`atlas site build` against a hostile output folder, hostile record files and hostile
text: no file outside the output folder is written or deleted, no damaged file stops the
build or hides a healthy one, no body over the record's body_limit is read whole, and no
body hangs the build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from support.runner import child_env, run_atlas, snapshot
from support.site_records import page_text, parse

from atlas_files import sitegen
from atlas_files.protocol import artifacts, status
from atlas_files.protocol.telemetry import probe as probemod
from atlas_files.sitegen import sanitize
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
KEY = b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMine mine@laptop\n"


def _record(root: Path) -> Record:
    record = Record.init(root, ["web"])
    artifacts.put(record, "plan", "# Plan\n\nhealthy plan text\n", author="alice")
    artifacts.put(record, "notes", "# Notes\n\nhealthy notes text\n", author="bob")
    return record


def _victim(tmp_path: Path) -> Path:
    """A folder of the user's, outside everything the build owns."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "authorized_keys").write_bytes(KEY)
    (victim / "docs").mkdir()
    (victim / "docs" / "thesis.md").write_text("my thesis\n")
    return victim


def _main(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from atlas_files.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _hand_write(record: Record, topic: str, version: int, body: bytes,
                meta: dict[str, Any] | None = None) -> Path:
    """A version written by hand (not through `atlas put`), as an agent with file access
    may; ``topic`` "status" writes the status of project web."""
    folder = record.root / "projects" / "web" / ("status" if topic == "status"
                                                  else f"artifacts/{topic}")
    folder.mkdir(parents=True, exist_ok=True)
    head: dict[str, Any] = {
        "name": topic, "version": version, "based_on": version - 1, "author": "mallory",
        "written_at": "2026-01-01T00:00:00Z", "summary": f"{topic} by hand",
    }
    head.update(meta or {})
    path = folder / f"{topic}.v{version:04d}.md"
    path.write_bytes(frontmatter.render(head, body))
    return path


def _found_in(folder: Path, needle: bytes) -> list[str]:
    return [str(p.relative_to(folder)) for p in folder.rglob("*")
            if p.is_file() and not p.is_symlink() and needle in p.read_bytes()]


# -- 1. the output folder: no write or delete through a symlink ---------------------------

LINKS = [
    ("site", "victim"),                              # MkDocs' clean step empties the target
    ("docs", "victim"),                              # the prune deletes the target's files
    ("overrides", "victim"),
    (".atlas-cache", "victim"),
    ("docs/artifacts/web/plan.md", "victim/authorized_keys"),  # a page written through it
    ("mkdocs.yml", "victim/authorized_keys"),
    (".atlas-site", "victim/authorized_keys"),       # the marker, rewritten on every build
    (".atlas-cache/bodies.json", "victim/authorized_keys"),
]


@pytest.mark.parametrize(("where", "target"), LINKS)
def test_a_symlink_in_the_output_folder_is_refused_and_its_target_survives(
        tmp_path: Path, where: str, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    record = _record(tmp_path / "rec")
    victim = _victim(tmp_path)
    out = tmp_path / "out"
    sitegen.write_docs(record, out)  # a folder of an earlier build
    link = out / where
    if link.is_dir():
        import shutil

        shutil.rmtree(link)
    elif link.exists():
        link.unlink()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(tmp_path / target)
    before = snapshot(victim)
    code, _, err = _main("--record", str(record.root), "site", "build", "--out", str(out),
                         capsys=capsys)
    assert snapshot(victim) == before
    assert sorted(p.name for p in victim.rglob("*")) == ["authorized_keys", "docs", "thesis.md"]
    assert code == 2, err
    assert "symlink" in err and where in err and "atlas: hint:" in err
    assert "Traceback" not in err


def test_after_the_symlink_is_removed_the_build_works(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _record(tmp_path / "rec")
    victim = _victim(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "site").symlink_to(victim)
    code, _, err = _main("--record", str(record.root), "site", "build", "--out", str(out),
                         capsys=capsys)
    assert code == 2 and "site" in err
    (out / "site").unlink()
    code, _, err = _main("--record", str(record.root), "site", "build", "--out", str(out),
                         capsys=capsys)
    assert code == 0, err
    assert (out / "site" / "index.html").is_file()
    assert (victim / "authorized_keys").read_bytes() == KEY


def test_an_output_folder_that_is_a_symlink_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _record(tmp_path / "rec")
    victim = _victim(tmp_path)
    (victim / ".atlas-site").write_text("planted marker\n")  # looks like a built folder
    before = snapshot(victim)
    link = tmp_path / "out"
    link.symlink_to(victim)
    code, _, err = _main("--record", str(record.root), "site", "build", "--out", str(link),
                         capsys=capsys)
    assert code == 2 and "symlink" in err and "atlas: hint:" in err
    # The default folder, beside the record, planted as a symlink by someone else.
    (tmp_path / "rec-site").symlink_to(victim)
    code, _, err = _main("--record", str(record.root), "site", "build", capsys=capsys)
    assert code == 2 and "symlink" in err
    assert snapshot(victim) == before


def test_a_fifo_in_the_output_folder_does_not_hang_the_build(tmp_path: Path) -> None:
    record = _record(tmp_path / "rec")
    out = tmp_path / "out"
    sitegen.write_docs(record, out)
    cache = sorted((out / ".atlas-cache").glob("bodies-*.json"))[0]  # one shard of it
    cache.unlink()
    os.mkfifo(cache)
    try:
        r = run_atlas("site", "build", "--out", str(out), record=record.root, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the build hung on a FIFO in its output folder")
    assert r.returncode == 2, r.stderr
    assert cache.name in r.stderr and "Traceback" not in r.stderr


def test_the_site_does_not_read_through_a_symlink_in_the_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = Record.init(tmp_path / "rec", ["web", "ml"])
    artifacts.put(record, "plan", "# Plan\n\nhealthy plan text\n", author="alice")
    outside = tmp_path / "outside"
    outside.mkdir()
    # A whole topic folder outside the record, a version file outside it, a status
    # version outside it, and one project's artifacts folder outside it.
    (outside / "leak").mkdir()
    secret = _hand_write(record, "leak", 1, b"SECRET-TOPIC\n")
    secret.replace(outside / "leak" / secret.name)
    (record.root / "projects/web/artifacts/leak").rmdir()
    (record.root / "projects/web/artifacts/leak").symlink_to(outside / "leak")
    v2 = _hand_write(record, "plan", 2, b"SECRET-VERSION\n")
    v2.replace(outside / v2.name)
    v2.symlink_to(outside / v2.name)
    status_file = _hand_write(record, "status", 1, b"SECRET-STATUS\n")
    status_file.replace(outside / status_file.name)
    status_file.symlink_to(outside / status_file.name)
    (outside / "ml-artifacts" / "t").mkdir(parents=True)
    ml = record.root / "projects/ml/artifacts"
    ml.rmdir()
    ml.symlink_to(outside / "ml-artifacts")
    out = tmp_path / "out"
    code, _, err = _main("--record", str(record.root), "site", "build", "--out", str(out),
                         capsys=capsys)
    assert code == 0, err
    assert "healthy plan text" in (out / "site/artifacts/web/plan.html").read_text()
    for needle in (b"SECRET-TOPIC", b"SECRET-VERSION", b"SECRET-STATUS"):
        assert _found_in(out, needle) == []
    assert "plan.v0002.md" in err and "status.v0001.md" in err
    assert "projects/ml/artifacts" in err


# -- 2. body_limit ------------------------------------------------------------------------

def test_a_version_over_the_body_limit_is_not_shown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _record(tmp_path / "rec")
    status.write(record, "status one, healthy\n", author="alice")
    big = b"# Huge\n\n" + b"OVERSIZE-MARKER filler line of text\n" * (3 * 2**20 // 36)
    _hand_write(record, "plan", 2, big)
    _hand_write(record, "status", 2, big)
    out = tmp_path / "out"
    code, _, err = _main("--record", str(record.root), "site", "build", "--out", str(out),
                         capsys=capsys)
    assert code == 0, err
    assert _found_in(out, b"OVERSIZE-MARKER") == []
    note = f"body of {len(big)} bytes is over the record's body_limit; not shown"
    plan = page_text(out / "site/artifacts/web/plan.html")
    assert note in plan and "v2" in parse(out / "site/artifacts/web/plan.html").ids
    assert "healthy plan text" in plan  # v1 is still there
    assert note in page_text(out / "site/status/web.html")
    assert note in page_text(out / "site/index.html")  # where the latest status goes
    assert "plan.v0002.md" in err and "body_limit" in err


def test_the_body_limit_is_the_records_own(tmp_path: Path) -> None:
    record = _record(tmp_path / "rec")
    record.update_config(lambda data: {**data, "body_limit": 1000})
    _hand_write(record, "plan", 2, b"small enough\n" + b"x" * 900 + b"\n")
    _hand_write(record, "plan", 3, b"TOO-BIG\n" + b"x" * 1100 + b"\n")
    result = sitegen.write_docs(record, tmp_path / "out")
    page = (result.docs_dir / "artifacts/web/plan.md").read_text()
    assert "small enough" in page and "TOO-BIG" not in page
    assert "body of 1109 bytes is over the record&#x27;s body_limit; not shown" in page
    assert result.versions == 4  # v3 is shown as a version, without its body


def test_three_huge_versions_build_in_bounded_memory(tmp_path: Path) -> None:
    """Three 50 MB versions, written by hand, under a 1.5 GB address-space limit."""
    record = _record(tmp_path / "rec")
    chunk = b"HUGE-MARKER " * 1000 + b"\n"
    for v in (2, 3, 4):
        path = _hand_write(record, "plan", v, b"")
        with path.open("ab") as fh:
            for _ in range(50 * 2**20 // len(chunk)):
                fh.write(chunk)
    out = tmp_path / "out"
    script = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1536 * 2**20, 1536 * 2**20))
        from atlas_files.cli import main
        main(["--record", {str(record.root)!r}, "site", "build", "--out", {str(out)!r}])
    """)
    env = child_env()
    try:
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=240, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("the build of three 50 MB versions did not finish in 4 minutes")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "over the record's body_limit" in page_text(out / "site/artifacts/web/plan.html")
    assert _found_in(out / "docs", b"HUGE-MARKER") == []


# -- 3. damaged and unreadable files ------------------------------------------------------

HEAD = (b'---\nname: "{t}"\nversion: 2\nbased_on: 1\nauthor: "m"\n'
        b'written_at: "2026-01-01T00:00:00Z"\n')
DAMAGE: dict[str, bytes | str] = {
    "deep-json": HEAD + b"links: " + b"[" * 100_000 + b"]" * 100_000 + b"\n---\nbody\n",
    "deep-json-open": HEAD + b"links: " + b"[" * 100_000 + b"\n---\nbody\n",
    "big-float": HEAD.replace(b"version: 2", b"version: 1e999") + b"---\nbody\n",
    "not-utf8-body": HEAD + b"---\nbody \xff\xfe\xfd\n",
    "not-utf8-head": HEAD + b'summary: "\xff\xfe"\n---\nbody\n',
    "bom": b"\xef\xbb\xbf" + HEAD + b"---\nbody\n",
    "no-front-matter": b"just text\n",
    "folder": "folder",   # a folder where the version file should be
    "fifo": "fifo",       # a named pipe: opening it for reading would wait for a writer
    "deep-body": HEAD + b"---\n" + b"".join(b"    " * i + b"- x\n" for i in range(600)),
}


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One record with a healthy v1 and a damaged v2 in each topic, built once by the real
    command (in a child process: on code that opens a FIFO it would hang)."""
    root = tmp_path_factory.mktemp("damaged")
    record = _record(root / "rec")
    status.write(record, "healthy status v1\n", author="alice")
    _hand_write(record, "status", 2, b"body\n", {"version": float("inf")})
    for topic, damage in DAMAGE.items():
        artifacts.put(record, topic, f"healthy {topic} v1\n", author="alice")
        path = record.root / f"projects/web/artifacts/{topic}/{topic}.v0002.md"
        if damage == "folder":
            path.mkdir()
        elif damage == "fifo":
            os.mkfifo(path)
        else:
            assert isinstance(damage, bytes)
            path.write_bytes(damage.replace(b"{t}", topic.encode()))
    only = _hand_write(record, "only-damaged", 1, b"x")
    only.write_bytes(b"\xef\xbb\xbf" + only.read_bytes())
    out = root / "out"
    try:
        r = run_atlas("site", "build", "--out", str(out), record=record.root, timeout=180)
    except subprocess.TimeoutExpired:
        return {"hung": True}
    return {"hung": False, "result": r, "out": out}


def _built(damaged: dict[str, Any]) -> Any:
    assert not damaged["hung"], "the build hung"
    r = damaged["result"]
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def test_damaged_files_do_not_stop_the_build(damaged: dict[str, Any]) -> None:
    _built(damaged)
    site = damaged["out"] / "site"
    for topic in ("plan", "notes"):
        assert f"healthy {topic} text" in (site / f"artifacts/web/{topic}.html").read_text()
    assert "healthy status v1" in (site / "status/web.html").read_text()
    assert "left out of the site: projects/web/status/status.v0002.md" in (
        damaged["result"].stderr)
    assert "only-damaged.v0001.md" in damaged["result"].stderr


@pytest.mark.parametrize("topic", sorted(set(DAMAGE) - {"deep-body"}))
def test_a_damaged_version_is_named_and_its_healthy_one_shown(
        damaged: dict[str, Any], topic: str) -> None:
    r = _built(damaged)
    name = f"projects/web/artifacts/{topic}/{topic}.v0002.md"
    assert f"left out of the site: {name}" in r.stderr
    page = (damaged["out"] / f"site/artifacts/web/{topic}.html").read_text()
    assert f"healthy {topic} v1" in page
    assert name in (damaged["out"] / "site/index.html").read_text()  # under Problems


def test_a_body_nested_600_deep_is_shown_rendered_or_as_written(
        damaged: dict[str, Any]) -> None:
    _built(damaged)
    page = (damaged["out"] / "site/artifacts/web/deep-body.html").read_text()
    assert 'id="v2"' in page
    # Python-Markdown 3.11.3 recurses past Python's limit on it (the page says so and shows
    # the text); 3.11.4 no longer recurses and renders it as nested lists.
    assert ("could not be rendered (it is nested too deeply)" in page
            or "<li>x<ul>\n<li>x<ul>\n<li>x<ul>" in page)


def test_a_body_that_renders_too_slowly_is_shown_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The budget's size is not the subject, and each second of it is a second of the
    # suite's CPU: 1 s instead of 5 (the build runs in this process).
    monkeypatch.setattr(sanitize, "RENDER_CPU_S", 1.0)
    record = _record(tmp_path / "rec")
    # Python-Markdown's inline link pattern takes time that grows as the square of this.
    artifacts.put(record, "brackets", "[a](" * 16_000 + "\n", author="mallory")
    out = tmp_path / "out"
    try:
        r = run_atlas("site", "build", "--out", str(out), record=record.root, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("one body hung the build")
    assert r.returncode == 0, r.stderr[-2000:]
    page = (out / "site/artifacts/web/brackets.html").read_text()
    assert "could not be rendered" in page and "[a]([a]([a](" in page
    assert "healthy plan text" in (out / "site/artifacts/web/plan.html").read_text()


@pytest.mark.parametrize("error", ["FrontMatterError", "DamagedFile", "RecursionError",
                                   "OverflowError", "ValueError", "TypeError"])
def test_any_reader_error_skips_the_version_and_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: str) -> None:
    from atlas_files.facts import errors

    record = _record(tmp_path / "rec")
    bad = _hand_write(record, "plan", 2, b"INJECT\n")
    real = frontmatter.parse
    raised = {
        "FrontMatterError": frontmatter.FrontMatterError("injected", 3),
        "DamagedFile": errors.DamagedFile("injected"),
        "RecursionError": RecursionError("injected"),
        "OverflowError": OverflowError("injected"),
        "ValueError": ValueError("injected"),
        "TypeError": TypeError("injected"),
    }[error]

    def parse(data: bytes) -> frontmatter.Parsed:
        if b"INJECT" in data:
            raise raised
        return real(data)

    monkeypatch.setattr(frontmatter, "parse", parse)
    result = sitegen.write_docs(record, tmp_path / "out")
    assert any(p.startswith(f"projects/web/artifacts/plan/{bad.name}")
               for p in result.problems), result.problems
    page = (result.docs_dir / "artifacts/web/plan.md").read_text()
    assert "healthy plan text" in page
    assert "healthy notes text" in (result.docs_dir / "artifacts/web/notes.md").read_text()


@pytest.mark.skipif(AS_ROOT, reason="root reads every file whatever its mode")
def test_an_unreadable_topic_folder_or_version_is_skipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _record(tmp_path / "rec")
    artifacts.put(record, "locked", "locked text\n", author="alice")
    _hand_write(record, "plan", 2, b"unreadable v2\n").chmod(0)
    folder = record.root / "projects/web/artifacts/locked"
    folder.chmod(0)
    try:
        code, _, err = _main("--record", str(record.root), "site", "build", "--out",
                             str(tmp_path / "out"), capsys=capsys)
    finally:
        folder.chmod(0o755)
    assert code == 0, err
    assert "projects/web/artifacts/locked" in err and "plan.v0002.md" in err
    page = (tmp_path / "out/site/artifacts/web/plan.html").read_text()
    assert "healthy plan text" in page


def _aliases_refused() -> bool:
    try:
        frontmatter.parse(b"---\na: &x [1]\nb: *x\n---\n")
    except frontmatter.FrontMatterError:
        return True
    return False


@pytest.mark.skipif(not _aliases_refused(),
                    reason="the front-matter parser still accepts YAML aliases")
def test_a_yaml_alias_bomb_is_skipped(tmp_path: Path) -> None:
    record = _record(tmp_path / "rec")
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    head = "\n".join(["---", "name: plan", "version: 2", "based_on: 1", "author: m",
                      "written_at: '2026-01-01T00:00:00Z'", *lines, "links: *a8", "---"])
    path = record.root / "projects/web/artifacts/plan/plan.v0002.md"
    path.write_text(head + "\nbody\n")
    result = sitegen.write_docs(record, tmp_path / "out")
    assert any("plan.v0002.md" in p for p in result.problems)
    assert "healthy plan text" in (result.docs_dir / "artifacts/web/plan.md").read_text()


def test_the_build_reports_problems_in_its_json(tmp_path: Path) -> None:
    record = _record(tmp_path / "rec")
    (record.root / "projects/web/artifacts/plan/plan.v0002.md").mkdir()
    r = run_atlas("site", "build", "--out", str(tmp_path / "out"), "--json",
                  record=record.root, timeout=180)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert any(p.startswith("projects/web/artifacts/plan/plan.v0002.md")
               for p in data["problems"])


def test_a_fifo_among_decisions_leases_or_telemetry_does_not_hang_the_build(
        tmp_path: Path) -> None:
    from atlas_files.protocol import decisions, leases

    record = _record(tmp_path / "rec")
    decisions.decide(record, topic="kept", recommended="a", chosen="a", relation="agreed",
                     why="healthy decision", author="alice")
    lost = decisions.decide(record, topic="lost", recommended="b", chosen="b",
                            relation="agreed", why="x", author="alice")
    leases.claim(record, "box", holder="alice", duration_s=600, why="healthy lease")
    leases.claim(record, "pipe", holder="bob", duration_s=600, why="x")
    record = probemod.add_machine(record, "gpubox", "local", interval="5m")
    pipes = [
        next(p for p in (record.root / "projects/web/decisions").iterdir()
             if lost.id in p.name),
        max((record.root / "leases/pipe").iterdir()),
        record.root / "telemetry/gpubox.json",
    ]
    for path in pipes:
        if path.exists():
            path.unlink()
        os.mkfifo(path)
    out = tmp_path / "out"
    try:
        r = run_atlas("site", "build", "--out", str(out), record=record.root, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("the build hung on a named pipe in the record")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "healthy decision" in page_text(out / "site/decisions.html")
    assert "healthy lease" in page_text(out / "site/leases.html")
    assert "healthy plan text" in page_text(out / "site/artifacts/web/plan.html")
