"""`atlas check` against hostile records: what it cannot read is a finding on that file or
folder, never a traceback, never an exit 2 for the whole run, never hours of backtracking,
and never a pass where every other command refuses."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import stat
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.runner import run_atlas

from atlas_files.check import check_record
from atlas_files.cli import main
from atlas_files.protocol import artifacts, decisions, leases
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record

# A generous bound: each case below takes well under a second now, and took from a minute
# and a half to hours before. Never a tight timed assertion.
SLOW = 20


def run_check(root: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """`atlas check --json` in-process: (exit code, the JSON document, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["--record", str(root), "check", "--json", *args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        else:  # pragma: no cover - main always exits
            code = 0
    text = out.getvalue()
    return code, (json.loads(text) if text.strip() else {}), err.getvalue()


def named(report: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [f for f in report.get("findings", []) if Path(f["path"]).name == name]


def hand_version(folder: Path, name: str, version: int, body: bytes = b"x\n",
                 **extra: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {"name": name, "version": version, "based_on": version - 1,
                            "author": "ann", "written_at": "2026-01-31T12:00:00Z",
                            "summary": "by hand"}
    meta.update(extra)
    path = folder / f"{name}.v{version:04d}.md"
    path.write_bytes(frontmatter.render(meta, body))
    return path


@pytest.fixture
def healthy(record: Record) -> Record:
    """A record written through the library, plus one hand-made flaw that every check
    must still report (a version skip in topic `other`), whatever else is damaged."""
    artifacts.put(record, "plan", "# Plan\n", author="ann", project="web")
    leases.claim(record, "gpu", holder="ann", duration_s=600, why="a run")
    decisions.decide(record, topic="t", recommended="a", chosen="a", relation="agreed",
                     why="w", author="ann", project="web")
    other = record.root / "projects/web/artifacts/other"
    hand_version(other, "other", 1, digest=frontmatter.digest_of(b"x\n"))
    hand_version(other, "other", 3, based_on=2, digest=frontmatter.digest_of(b"x\n"))
    return record


def assert_neighbour_still_reported(report: dict[str, Any]) -> None:
    assert [f["code"] for f in named(report, "other.v0003.md")] == ["ATL003"], report


def writable(path: Path) -> Path:
    path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return path


# -- 5: linear time on untrusted text -------------------------------------------------------


def test_a_line_of_backticks_is_checked_in_linear_time(tmp_path: Path) -> None:
    """16,000 backticks before a link took 94 s (the pre-commit hook hung on it)."""
    (tmp_path / "ticks.md").write_text("x" + "`" * 16000 + "](a.md)\n")
    result = run_atlas("check", "--links-only", "--json", str(tmp_path / "ticks.md"),
                       cwd=tmp_path, timeout=SLOW)
    assert result.returncode == 1, result.stderr
    assert [f["code"] for f in result.json()["findings"]] == ["ATL010"]


def test_a_version_body_of_backticks_is_checked_in_linear_time(record: Record) -> None:
    hand_version(record.root / "projects/web/artifacts/plan", "plan", 1,
                 body=("x" + "`" * 16000 + "](gone.md)\n").encode())
    result = run_atlas("check", "--json", record=record.root, timeout=SLOW)
    assert "ATL010" in [f["code"] for f in result.json()["findings"]]


def test_headings_with_long_runs_of_hashes_and_spaces_are_linear(tmp_path: Path) -> None:
    """Each of these headings was quadratic (minutes at this length), or handed to
    Python-Markdown, which is."""
    n = 300_000
    (tmp_path / "t.md").write_text(
        "#" * n + "x\n\n" + "#" + " " * n + "x\\\n\n" + "# a " + "#" * n + " b\n\n"
        + "# Real\n")
    (tmp_path / "many.md").write_text("# a\n" * 100_000)  # the 100,000th is #a_99999
    (tmp_path / "brackets.md").write_text("# " + "[# " * 20_000 + "\n\n## *Kept*\n")
    (tmp_path / "links.md").write_text(
        "[ok](t.md#real) [ok](many.md#a_99999) [ok](brackets.md#kept)\n"
        "[bad](t.md#gone) [bad](brackets.md#gone)\n")
    result = run_atlas("check", "--links-only", "--json", str(tmp_path / "links.md"),
                       cwd=tmp_path, timeout=SLOW)
    found = result.json()["findings"]
    assert [(f["code"], f["line"]) for f in found] == [("ATL011", 2), ("ATL011", 2)]
    # Too long a heading for the renderer: the anchors are worked out from plain text, and
    # the finding says so.
    assert "may differ from the site's" in found[1]["message"]
    assert "may differ" not in found[0]["message"]


def test_a_decision_topic_of_a_megabyte_is_judged_quickly(record: Record) -> None:
    """The schema's one-line pattern for a topic backtracks: it is run on no more than the
    topic's allowed length."""
    decisions.decide(record, topic="t", recommended="a", chosen="a", relation="agreed",
                     why="w", author="ann", project="web")
    path = writable(next((record.root / "projects/web/decisions").iterdir()))
    path.write_bytes(path.read_bytes().replace(
        b'topic: "t"', b'topic: "' + b"a" * 100_000 + b'\\nb"'))
    result = run_atlas("check", "--json", record=record.root, timeout=SLOW)
    codes = {f["code"] for f in result.json()["findings"]}
    assert "ATL001" in codes and "ATL099" not in codes


def test_a_version_number_of_twenty_digits_does_not_hang_the_check(record: Record) -> None:
    """v1 followed by v10^19 once made the check walk every number in between."""
    folder = record.root / "projects/web/artifacts/plan"
    hand_version(folder, "plan", 1)
    big = 10**19
    (folder / f"plan.v{big}.md").write_bytes(frontmatter.render(
        {"name": "plan", "version": big, "based_on": 0, "author": "ann",
         "written_at": "2026-01-31T12:00:00Z", "summary": "s"}, b"x\n"))
    result = run_atlas("check", "--json", record=record.root, timeout=SLOW)
    assert result.returncode == 1
    assert "ATL003" in {f["code"] for f in result.json()["findings"]}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX thing")
def test_a_named_pipe_where_a_file_should_be_is_a_finding_not_a_hang(healthy: Record) -> None:
    """Opening a pipe waits for a writer: the check once waited for ever."""
    os.mkfifo(healthy.root / "projects/web/artifacts/plan/plan.v0002.md")
    (healthy.root / "telemetry").mkdir(exist_ok=True)
    os.mkfifo(healthy.root / "telemetry/box.json")
    os.mkfifo(healthy.root / "notes.md")
    result = run_atlas("check", "--json", record=healthy.root, timeout=SLOW)
    assert result.returncode == 1, result.stderr
    report = result.json()
    for name in ("plan.v0002.md", "box.json", "notes.md"):
        (finding,) = named(report, name)
        assert finding["code"] == "ATL002" and "not a regular file" in finding["message"]
    assert_neighbour_still_reported(report)


def test_yaml_aliases_in_atlas_yaml_are_refused_not_expanded(record: Record) -> None:
    """Ten lines of aliases make a billion values for whatever walks them."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    config = record.root / "atlas.yaml"
    config.write_text(config.read_text() + "\n".join(lines) + "\n")
    result = run_atlas("check", "--json", record=record.root, timeout=SLOW)
    (finding,) = named(result.json(), "atlas.yaml")
    assert finding["code"] == "ATL002" and "alias" in finding["message"]
    assert finding["line"] > len(config.read_text().splitlines()) - len(lines)  # on one


# -- 11: what every other command refuses, check reports ------------------------------------


def _outside(record: Record, tmp_path: Path, rel: str) -> None:
    """Move ``rel`` out of the record and leave a symlink to it in its place."""
    target = tmp_path / "elsewhere" / rel.replace("/", "_")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(record.root / rel), target)
    (record.root / rel).symlink_to(target)


def _inside(record: Record, rel: str, twin: str) -> None:
    """Replace ``rel`` by a symlink to a copy of it at ``twin``, inside the record."""
    shutil.copytree(record.root / rel, record.root / twin, symlinks=True)
    shutil.rmtree(record.root / rel)
    (record.root / rel).symlink_to(record.root / twin)


def _file_instead(record: Record, rel: str) -> None:
    shutil.rmtree(record.root / rel)
    (record.root / rel).write_text("not a folder\n")


FOLDER_CASES: dict[str, tuple[str, Callable[[Record, Path], None]]] = {
    "projects outside": ("projects", lambda r, t: _outside(r, t, "projects")),
    "topic outside": ("plan", lambda r, t: _outside(r, t, "projects/web/artifacts/plan")),
    "decisions a file": ("decisions", lambda r, t: _file_instead(r, "projects/web/decisions")),
    "leases a file": ("leases", lambda r, t: _file_instead(r, "leases")),
    "topic inside": ("plan", lambda r, t: _inside(r, "projects/web/artifacts/plan",
                                                  "projects/web/plan-copy")),
    "project inside": ("ml", lambda r, t: _inside(r, "projects/ml", "ml-copy")),
    "decisions inside": ("decisions", lambda r, t: _inside(r, "projects/web/decisions",
                                                           "decisions-copy")),
    "leases inside": ("leases", lambda r, t: _inside(r, "leases", "leases-copy")),
    "lease resource inside": ("gpu", lambda r, t: _inside(r, "leases/gpu", "gpu-copy")),
}


@pytest.mark.parametrize("case", sorted(FOLDER_CASES))
def test_a_record_folder_that_is_a_symlink_or_a_file_is_an_error(
        healthy: Record, tmp_path: Path, case: str) -> None:
    name, make = FOLDER_CASES[case]
    (healthy.root / "projects/ml/status").mkdir(parents=True, exist_ok=True)
    make(healthy, tmp_path)
    code, report, err = run_check(healthy.root)
    assert code == 1, (code, err, report)
    found = named(report, name)
    assert [f["code"] for f in found] == ["ATL037"], report
    finding = found[0]
    assert finding["severity"] == "error" and finding["hint"]
    assert name in finding["message"]
    assert ("symlink" in finding["message"]) != ("a file" in case)
    if case != "projects outside":  # else the neighbour lies behind the symlink
        assert_neighbour_still_reported(report)


@pytest.mark.parametrize("case", ["topic outside", "topic inside"])
def test_a_symlinked_topic_given_as_the_path_is_reported_as_a_symlink(
        healthy: Record, tmp_path: Path, case: str) -> None:
    FOLDER_CASES[case][1](healthy, tmp_path)
    code, report, err = run_check(healthy.root, str(healthy.root / "projects/web/artifacts/plan"))
    assert code == 1, err
    assert [f["code"] for f in report["findings"]] == ["ATL037"]


# -- 12: an entry readers will not show -----------------------------------------------------


def test_a_decision_named_in_uppercase_hex_is_an_error(healthy: Record) -> None:
    folder = healthy.root / "projects/web/decisions"
    path = next(folder.iterdir())
    shouting = path.with_name(path.name[:-11] + "ABCDEF01.md")
    text = path.read_text().replace(path.name[:-3], shouting.name[:-3])
    shouting.write_text(text)
    path.unlink()
    assert decisions.list_decisions(healthy, project="web") == []  # readers skip it
    code, report, _ = run_check(healthy.root)
    assert code == 1
    found = named(report, shouting.name)
    assert [(f["code"], f["severity"]) for f in found] == [("ATL036", "error")]
    assert shouting.name.lower() in found[0]["message"]


def test_markdown_holding_an_entry_under_another_name_is_an_error(healthy: Record) -> None:
    folder = healthy.root / "projects/web/decisions"
    shutil.copy(next(folder.iterdir()), folder / "my-decision.md")
    (folder / "notes.md").write_text("just notes\n")
    _, report, _ = run_check(healthy.root)
    assert [f["code"] for f in named(report, "my-decision.md")] == ["ATL036"]
    assert [f["code"] for f in named(report, "notes.md")] == ["ATL032"]


# -- 13: one unreadable folder or damaged file never stops the run --------------------------


@contextlib.contextmanager
def reachable_record(record: Record) -> Iterator[Path]:
    """A copy of ``record`` in a folder any user can reach (pytest's own is private)."""
    base = Path(tempfile.mkdtemp(prefix="atlas-check-"))
    try:
        base.chmod(0o755)
        root = base / "rec"
        shutil.copytree(record.root, root, symlinks=True)
        yield root
    finally:
        for folder, dirs, _ in os.walk(base):
            for d in dirs:
                with contextlib.suppress(OSError):
                    os.chmod(os.path.join(folder, d), 0o755)
        shutil.rmtree(base, ignore_errors=True)


def as_unprivileged(fn: Callable[[], Any]) -> Any:
    """``fn()`` as a user without root's power to read anything: in-process as we are if
    we are not root, else in a forked child that drops to uid/gid 65534 (everything it
    needs is imported already, so it reads no file of ours but the record)."""
    if os.geteuid() != 0:
        return fn()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        status = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            out = json.dumps({"ok": fn()}).encode()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            out = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
            status = 1
        with os.fdopen(write, "wb") as fh:
            fh.write(out)
        os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    answer = json.loads(data or b'{"error": "the child wrote nothing"}')
    if "error" in answer:
        if answer["error"].startswith(("PermissionError", "OSError")):
            pytest.skip(f"cannot drop root's privileges here: {answer['error']}")
        raise AssertionError(answer["error"])
    return answer["ok"]


def test_an_unreadable_folder_is_a_finding_and_the_rest_is_checked(healthy: Record) -> None:
    with reachable_record(healthy) as root:
        run_check(root)  # as we are: every module the check uses is now imported
        os.chmod(root / "projects/web/artifacts/plan", 0)
        os.chmod(root / "leases/gpu/g00000001.json", 0)
        code, report, err = as_unprivileged(lambda: run_check(root))
    assert code == 1, (err, report)
    folder = named(report, "plan")
    assert [(f["code"], f["severity"]) for f in folder] == [("ATL038", "error")]
    assert "projects/web/artifacts/plan" in folder[0]["message"] and folder[0]["hint"]
    # The one unreadable file is a finding too, as docs/check.md promises.
    assert [f["code"] for f in named(report, "g00000001.json")] == ["ATL002"]
    assert_neighbour_still_reported(report)


def _edit(path: Path, old: bytes, new: bytes) -> None:
    data = writable(path).read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


def _generation(r: Record) -> Path:
    return r.root / "leases/gpu/g00000001.json"


def _decision(r: Record) -> Path:
    return next((r.root / "projects/web/decisions").iterdir())


def _plan(r: Record) -> Path:
    return r.root / "projects/web/artifacts/plan/plan.v0001.md"


def _row(r: Record, folder: str, name: str, data: bytes) -> None:
    (r.root / folder).mkdir(exist_ok=True)
    (r.root / folder / name).write_bytes(data)


DEEP = b"[" * 100_000
DAMAGE: dict[str, tuple[str, Callable[[Record], object], str]] = {
    # case: (file name, damage, what the message must say)
    "nested generation": ("g00000001.json", lambda r: writable(_generation(r)).write_bytes(
        DEEP), "nested too deeply"),
    "nested telemetry": ("box.json", lambda r: _row(r, "telemetry", "box.json", DEEP),
                         "nested too deeply"),
    "nested receipt": ("ann.json", lambda r: _row(
        r, "receipts", "ann.json", b'{"identity": "ann", "read": ' + DEEP), "nested too deeply"),
    "nested decision links": ("dec", lambda r: _edit(
        _decision(r), b"\n---\n", b"\nlinks: " + DEEP + b"\n---\n"), "nest"),
    "1e999 in front matter": ("plan.v0001.md", lambda r: _edit(
        _plan(r), b"\nversion: 1\n", b"\nversion: 1e999\n"), "version"),
    "1e999 in a receipt": ("ann.json", lambda r: _row(
        r, "receipts", "ann.json",
        b'{"identity": "ann", "updated_at": "2026-01-31T12:00:00Z", "read": {"x": 1e999}}'),
        "inf"),
    "a number of 5000 digits": ("plan.v0001.md", lambda r: _edit(
        _plan(r), b"\nversion: 1\n", b"\nversion: " + b"9" * 5000 + b"\n"), "digits"),
    "a reference of 5000 digits": ("dec", lambda r: _edit(
        _decision(r), b"\n---\n", b'\nlinks: ["plan@v' + b"9" * 5000 + b'"]\n---\n'),
        "links"),
    "not UTF-8": ("plan.v0001.md", lambda r: writable(_plan(r)).write_bytes(
        b"---\nname: \xff\xfe\n---\nx\n"), "UTF-8"),
    "a byte-order mark": ("plan.v0001.md", lambda r: writable(_plan(r)).write_bytes(
        b"\xef\xbb\xbf" + _plan(r).read_bytes()), "byte-order mark"),
    "a BOM in a lease generation": ("g00000001.json", lambda r: writable(
        _generation(r)).write_bytes(b"\xef\xbb\xbf" + _generation(r).read_bytes()),
        "byte-order mark"),
    "a folder for a version": ("plan.v0002.md", lambda r: (
        r.root / "projects/web/artifacts/plan/plan.v0002.md").mkdir(), "folder"),
    "a folder for a generation": ("g00000002.json", lambda r: (
        r.root / "leases/gpu/g00000002.json").mkdir(), "folder"),
    "a folder for a telemetry row": ("box.json", lambda r: (
        r.root / "telemetry/box.json").mkdir(parents=True), "folder"),
    "a folder for an entry": ("dec-20260131t120000000000z-1a2b3c4d.md", lambda r: (
        r.root / "projects/web/decisions/dec-20260131t120000000000z-1a2b3c4d.md").mkdir(),
        "folder"),
    "a truncated version": ("plan.v0001.md", lambda r: writable(_plan(r)).write_bytes(
        _plan(r).read_bytes()[:30]), "closing"),
    "a truncated generation": ("g00000001.json", lambda r: writable(
        _generation(r)).write_bytes(_generation(r).read_bytes()[:30]), "JSON"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_file_is_a_finding_on_it_and_the_rest_is_checked(
        healthy: Record, case: str) -> None:
    name, damage, says = DAMAGE[case]
    damage(healthy)
    code, report, err = run_check(healthy.root)
    assert code == 1 and not err, (code, err)
    found = [f for f in report["findings"] if Path(f["path"]).name.startswith(name)]
    assert found, report
    # Findings on the file, each an error, none of them "the checker failed" (ATL099).
    assert all(f["code"] != "ATL099" and f["severity"] == "error" for f in found), found
    assert any(says in f["message"] for f in found), found
    assert_neighbour_still_reported(report)


def test_messages_name_a_folder_for_what_it_is(healthy: Record) -> None:
    """'Is a directory', with no word of what was expected, told nobody anything."""
    (healthy.root / "projects/web/artifacts/plan/plan.v0002.md").mkdir()
    _, report, _ = run_check(healthy.root)
    (finding,) = named(report, "plan.v0002.md")
    assert "folder, where a file should be" in finding["message"]
    assert finding["path"].endswith("projects/web/artifacts/plan/plan.v0002.md")


# -- 15: a byte-order mark is reported as one, and --fix removes it where safe -------------


def test_a_byte_order_mark_on_a_new_version_is_named_and_fix_removes_it(
        record: Record) -> None:
    folder = record.root / "projects/web/artifacts/plan"
    path = hand_version(folder, "plan", 1)
    clean = path.read_bytes()
    path.write_bytes(b"\xef\xbb\xbf" + clean)
    (finding,) = [f for f in named(run_check(record.root)[1], path.name)
                  if f["code"] == "ATL002"]
    assert "byte-order mark" in finding["message"] and "front matter line" not in \
        finding["message"]
    assert "--fix" in finding["hint"] and "restore" not in finding["hint"]
    code, report, _ = run_check(record.root, "--fix")
    assert code == 0 and report["findings"] == [], report
    assert any("byte-order mark" in line for line in report["fixed"])
    fixed = frontmatter.parse(path.read_bytes())
    assert not path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert fixed.digest_ok is True and fixed.body == b"x\n"  # and stamped in the same run


def test_fix_leaves_the_byte_order_mark_of_a_stamped_version_to_a_person(
        record: Record) -> None:
    artifacts.put(record, "plan", "# Plan\n", author="ann", project="web")
    path = writable(_plan(record))
    data = b"\xef\xbb\xbf" + path.read_bytes()
    path.write_bytes(data)
    code, report, _ = run_check(record.root, "--fix")
    assert code == 1 and path.read_bytes() == data
    (finding,) = named(report, path.name)
    assert "byte-order mark" in finding["message"] and "git" in finding["hint"]


def test_a_byte_order_mark_on_a_new_decision_is_removed_by_fix(record: Record) -> None:
    folder = record.root / "projects/web/decisions"
    path = folder / "dec-20260131t120000000000z-1a2b3c4d.md"
    path.write_text(
        "\ufeff---\nid: dec-20260131t120000000000z-1a2b3c4d\nkind: decision\n"
        "at: 2026-01-31T12:00:00Z\nauthor: ann\nproject: web\ntopic: cache\n"
        "recommended: redis\nchosen: redis\nrelation: agreed\nwhy: fits\n---\n")
    assert "byte-order mark" in named(run_check(record.root)[1], path.name)[0]["message"]
    code, report, _ = run_check(record.root, "--fix")
    assert code == 0 and report["findings"] == []
    assert [d.topic for d in decisions.list_decisions(record, project="web")] == ["cache"]


# -- 6: body_limit ------------------------------------------------------------------------


def _set_body_limit(record: Record, limit: int) -> None:
    config = record.root / "atlas.yaml"
    text = config.read_text()
    assert "body_limit:" in text
    config.write_text("\n".join(
        f"body_limit: {limit}" if line.startswith("body_limit:") else line
        for line in text.split("\n")))


def test_a_body_over_body_limit_is_an_error_with_both_sizes(record: Record) -> None:
    _set_body_limit(record, 1000)
    artifacts.put(record, "plan", "small\n", author="ann", project="web")
    hand_version(record.root / "projects/web/artifacts/plan", "plan", 2, body=b"y" * 5000)
    code, report, _ = run_check(record.root)
    assert code == 1
    found = [f for f in named(report, "plan.v0002.md") if f["code"] == "ATL039"]
    assert len(found) == 1 and found[0]["severity"] == "error"
    assert "5,000 bytes" in found[0]["message"] and "1,000" in found[0]["message"]
    assert named(report, "plan.v0001.md") == []


def test_a_huge_version_is_measured_not_loaded(record: Record) -> None:
    _set_body_limit(record, 1000)
    size = 30 * 1024 * 1024
    body = b"z" * size
    hand_version(record.root / "projects/web/artifacts/plan", "plan", 1, body=body,
                 digest=frontmatter.digest_of(body))
    del body
    tracemalloc.start()
    try:
        report = check_record(record.root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < size // 4, f"the check held {peak:,} bytes for a {size:,}-byte file"
    (finding,) = report.findings
    assert finding.code == "ATL039" and f"{size:,} bytes" in finding.message


def test_a_damaged_versioned_file_outside_a_record_is_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "plan.v1.md").write_bytes(b"---\nlinks: " + DEEP + b"\n---\nx\n")
    (tmp_path / "plan.v3.md").write_text("x\n")
    result = run_atlas("check", "--versions-only", str(tmp_path), cwd=tmp_path, timeout=SLOW)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "ATL003" in result.stdout
