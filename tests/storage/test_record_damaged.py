"""Every reader survives damaged files: a damaged lease generation, telemetry row, read
receipt, decision or version is a finding or a marked row, never a traceback, and never
hides the healthy rows beside it. Also: an unreadable folder is reported and skipped, and
messages that used to mislead say what is true."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from atlas_files.cli import main
from atlas_files.protocol import artifacts, decisions, leases, status, telemetry
from atlas_files.storage import jsonfile, receipts
from atlas_files.storage.record import Record

DEEP = "[" * 100_000
NOBODY = 65534


def run(record: Record, *args: str, identity: str | None = "ann") -> tuple[int, str, str]:
    """Run the real command in this process: (exit code, stdout, stderr). A traceback
    would escape as the exception itself and fail the test."""
    argv = ["--record", str(record.root)]
    if identity:
        argv += ["--as", identity]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv + list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        else:  # pragma: no cover - main always exits
            code = 0
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return code, out.getvalue(), err.getvalue()


def overwrite(path: Path, text: str) -> None:
    """Replace a published (read-only) file's bytes, as a hand edit or bad merge would."""
    if path.exists():
        path.chmod(0o644)
    path.write_text(text, encoding="utf-8")


def sub_front_matter(path: Path, key: str, value: str) -> None:
    text = path.read_text(encoding="utf-8")
    new, n = re.subn(rf"^{key}: .*$", f"{key}: {value}", text, count=1, flags=re.M)
    if n == 0:  # add the key just before the closing ---
        head, sep, body = text[4:].partition("\n---\n")
        new = f"---\n{head}\n{key}: {value}{sep}{body}"
    overwrite(path, new)


@pytest.fixture
def rec(tmp_path: Path) -> Record:
    record = Record.init(tmp_path / "rec", ["web"])
    artifacts.put(record, "plan", "the plan\n", author="bob", summary="the plan")
    artifacts.put(record, "notes", "notes\n", author="bob", summary="some notes")
    status.write(record, "all good\n", author="bob")
    return record


# -- the helper ---------------------------------------------------------------------------


@pytest.mark.parametrize("data, words", [
    (DEEP, "nests too deeply"),
    ('{"a": ' * 40 + "1" + "}" * 40, "levels deep"),
    ('{"read": {"x": 1e999}}', "out of range"),
    ('{"a": NaN}', "NaN"),
    (b"\xff\xfe", "not UTF-8"),
    ("1" * 5000, "not readable JSON"),
    ("{nope", "not valid JSON"),
])
def test_the_json_reader_turns_every_damage_into_one_exception(data: Any, words: str) -> None:
    with pytest.raises(jsonfile.JSONDamage, match=words):
        jsonfile.loads(data)


@pytest.mark.parametrize("value", [True, False, 1.0, float("inf"), None, "3", [3]])
def test_an_int_field_that_is_a_bool_float_or_anything_else_is_damage(value: Any) -> None:
    with pytest.raises(jsonfile.JSONDamage, match="whole number"):
        jsonfile.need_int(value, "generation")
    assert jsonfile.need_int(7, "generation") == 7


# -- leases -------------------------------------------------------------------------------


def _newest_generation(record: Record, resource: str) -> Path:
    return sorted((record.leases_dir / resource).glob("g*.json"))[-1]


@pytest.mark.parametrize("damage", [
    DEEP,
    '{"kind": "lease", "resource": "gpu0", "generation": 1e999, "action": "claim"}',
    '{"kind": "lease", "resource": "gpu0", "generation": true, "action": "claim", '
    '"holder": "ann", "expires_at": "2999-01-01T00:00:00Z"}',
])
def test_lease_ls_shows_a_damaged_resource_as_a_row_beside_the_healthy_ones(
    rec: Record, damage: str
) -> None:
    leases.claim(rec, "gpu0", holder="ann", duration_s=600, why="train")
    leases.claim(rec, "gpu1", holder="bob", duration_s=600, why="eval")
    overwrite(_newest_generation(rec, "gpu0"), damage)

    code, out, err = run(rec, "lease", "ls", "--json")
    assert code == 0
    rows = {row["resource"]: row for row in json.loads(out)["leases"]}
    assert rows["gpu1"]["state"] == "held" and rows["gpu1"]["holder"] == "bob"
    assert rows["gpu1"]["damaged"] is None
    assert rows["gpu0"]["state"] == "damaged" and rows["gpu0"]["holder"] is None
    assert "g00000001.json" in rows["gpu0"]["damaged"]
    assert rows["gpu0"]["generation"] == 1

    code, out, err = run(rec, "lease", "ls")
    assert code == 0
    assert re.search(r"gpu1\s+held by bob", out)
    assert re.search(r"gpu0\s+DAMAGED", out) and "lease break" in out

    # Every lease command on that resource says what is wrong, plainly.
    for args in (("lease", "show", "gpu0"),
                 ("lease", "claim", "gpu0", "--for", "1h", "--why", "x")):
        code, out, err = run(rec, *args, identity="cat")
        assert code == 2 and "damaged" in err, (args, err)
    code, out, err = run(rec, "lease", "break", "gpu0", "--why", "garbage", "--json",
                         identity="cat")
    assert code == 0 and json.loads(out)["holder"] == "cat"


def test_a_busy_gpu_under_a_damaged_lease_is_not_called_unleased(rec: Record) -> None:
    leases.claim(rec, "box.gpu0", holder="ann", duration_s=600, why="train")
    overwrite(_newest_generation(rec, "box.gpu0"), DEEP)
    _healthy_row(rec, "box")  # GPU 0 of box has 30000 MiB in use
    code, out, err = run(rec, "lease", "ls", "--json")
    assert code == 0
    data = json.loads(out)
    assert [row["state"] for row in data["leases"]] == ["damaged"]
    assert data["leases"][0]["telemetry"]["memory_used_mib"] == 30000
    assert data["unleased_busy"] == []


def test_a_file_in_place_of_a_lease_folder_is_a_damaged_row(rec: Record) -> None:
    leases.claim(rec, "gpu1", holder="bob", duration_s=600, why="eval")
    rec.leases_dir.joinpath("gpu0").write_text("not a folder")
    code, out, err = run(rec, "lease", "ls", "--json")
    assert code == 0
    rows = {row["resource"]: row for row in json.loads(out)["leases"]}
    assert rows["gpu0"]["state"] == "damaged" and "should be a folder" in rows["gpu0"]["damaged"]
    assert rows["gpu1"]["state"] == "held"


# -- telemetry ----------------------------------------------------------------------------


def _healthy_row(record: Record, machine: str) -> None:
    from atlas_files.facts import timeutil
    from atlas_files.protocol.telemetry import rows

    rows.write_row(record, {
        "machine": machine, "reachable": True, "observer": "ann",
        "observed_at": timeutil.format_time(timeutil.now()),
        "gpus": [{"index": 0, "memory_used_mib": 30000, "memory_total_mib": 81559,
                  "processes": []}],
        "nvml": {"available": True}, "error": None,
    })


@pytest.mark.parametrize("damage", [
    DEEP,
    '{"machine": "box", "reachable": true, "observed_at": "2026-01-01T00:00:00Z", '
    '"duration_s": 1e999, "gpus": []}',
    '{"machine": "box", "reachable": true, "gpus": [' + "[" * 40 + "]" * 40 + "]}",
    '"just a string"',
])
def test_telemetry_ls_marks_a_damaged_row_and_shows_the_others(
    rec: Record, damage: str
) -> None:
    _healthy_row(rec, "good")
    rec.telemetry_dir.joinpath("box.json").write_text(damage)

    code, out, err = run(rec, "telemetry", "ls", "--json")
    assert code == 0
    rows = {row["machine"]: row for row in json.loads(out)["machines"]}
    assert rows["good"]["reachable"] is True and rows["good"]["gpus"]
    assert rows["box"]["reachable"] is None
    assert "damaged row box.json" in rows["box"]["error"]

    code, out, err = run(rec, "telemetry", "ls")
    assert code == 0 and "good: reachable" in out and "box: NO ROW" in out

    # The lease sheet reads telemetry too: a lease on the damaged machine still shows.
    leases.claim(rec, "box.gpu0", holder="ann", duration_s=600, why="x")
    code, out, err = run(rec, "lease", "ls")
    assert code == 0 and "box.gpu0" in out


def test_a_row_with_a_gpu_that_is_not_an_object_does_not_break_the_listing(
    rec: Record
) -> None:
    rec.telemetry_dir.mkdir(exist_ok=True)
    rec.telemetry_dir.joinpath("box.json").write_text(json.dumps({
        "machine": "box", "reachable": True, "observed_at": "2026-01-01T00:00:00Z",
        "gpus": [3, "x", None, {"index": True, "memory_used_mib": "lots"}],
        "nvml": {"available": True}}))
    code, out, err = run(rec, "telemetry", "ls")
    assert code == 0 and "box: reachable" in out
    code, out, err = run(rec, "lease", "ls")
    assert code == 0


# -- receipts and the feed ----------------------------------------------------------------


@pytest.mark.parametrize("damage", [
    DEEP,
    '{"identity": "ann", "read": {"web/status": 1e999}}',
    '{"identity": "ann", "read": {"web/artifacts/plan": true}}',
    '{"identity": "ann", "read": {"web/artifacts/plan": 1.5}}',
])
def test_feed_reads_a_damaged_receipt_as_no_receipts_with_a_warning(
    rec: Record, damage: str
) -> None:
    rec.receipts_dir.mkdir(exist_ok=True)
    rec.receipts_dir.joinpath("ann.json").write_text(damage)

    code, out, err = run(rec, "feed", "--json")
    assert code == 0
    new = {item["name"] for item in json.loads(out)["new"]}
    assert new == {"status", "plan", "notes"}  # everything reads as never read
    assert "ann.json" in err and "warning" in err

    code, out, err = run(rec, "feed")
    assert code == 0 and "web/plan" in out and "never read" in out

    # --mark-read cannot update a damaged row: it lists, then says that nothing was
    # marked and exits 2 (it used to end with "marked 3 as read" and exit 0), and leaves
    # the row as it was.
    code, out, err = run(rec, "feed", "--mark-read")
    assert code == 2 and "web/plan" in out and "marked 3 as read" not in out
    assert "3 new to you, but nothing was marked as read" in err and "ann.json" in err
    code, out, err = run(rec, "feed", "--mark-read", "--json")
    assert code == 2 and json.loads(out)["error"]["kind"] == "environment"
    assert "nothing was marked" in json.loads(out)["error"]["message"]
    assert rec.receipts_dir.joinpath("ann.json").read_text() == damage

    # A read of a topic still shows it (the receipt update is what fails, with a warning).
    code, out, err = run(rec, "get", "plan")
    assert code == 0 and "the plan" in out and "ann.json" in err


def test_library_receipt_read_raises_damaged_file_not_a_parser_error(rec: Record) -> None:
    from atlas_files.facts.errors import DamagedFile

    rec.receipts_dir.mkdir(exist_ok=True)
    rec.receipts_dir.joinpath("ann.json").write_text('{"read": {"web/status": 1e999}}')
    with pytest.raises(DamagedFile, match="ann.json"):
        receipts.read(rec, "ann")


# -- decisions and corrections ------------------------------------------------------------


def _two_decisions(record: Record) -> tuple[Path, Path]:
    first = decisions.decide(record, topic="first", recommended="a", chosen="a",
                             relation="agreed", why="w", author="ann")
    second = decisions.decide(record, topic="second", recommended="a", chosen="b",
                              relation="disagreed", why="w", author="ann")
    return first.path, second.path


@pytest.mark.parametrize("links", [DEEP, "[" * 900 + "]" * 900, "1e999"])
def test_a_damaged_decision_is_skipped_with_a_warning_naming_its_file(
    rec: Record, links: str
) -> None:
    bad, good = _two_decisions(rec)
    sub_front_matter(bad, "links", links)

    code, out, err = run(rec, "decisions")
    assert code == 0 and "second" in out
    assert bad.name in err  # skipped as unreadable, or shown but marked as edited
    if links == DEEP:
        assert "first" not in out
    code, out, err = run(rec, "decisions", "--json")
    assert code == 0
    assert "second" in [d["topic"] for d in json.loads(out)["decisions"]]


def test_a_damaged_correction_leaves_decisions_and_get_readable(rec: Record) -> None:
    from atlas_files.protocol import corrections

    bad, good = _two_decisions(rec)
    fix = corrections.correct(rec, "plan@v1", what="typo", author="ann")
    sub_front_matter(fix.path, "ref", DEEP)
    code, out, err = run(rec, "decisions")
    assert code == 0 and "first" in out and "second" in out
    code, out, err = run(rec, "get", "plan")
    assert code == 0 and "the plan" in out


# -- versions: 1e999 and deep nesting in front matter -------------------------------------


@pytest.mark.parametrize("key, value", [
    ("version", "1e999"), ("based_on", "1e999"), ("links", DEEP),
])
def test_ls_and_get_survive_a_damaged_version(rec: Record, key: str, value: str) -> None:
    path = rec.artifact_stream("notes", "web").path(1)
    sub_front_matter(path, key, value)

    code, out, err = run(rec, "ls")
    assert code == 0 and "plan" in out and "notes.v0001.md" in err
    code, out, err = run(rec, "get", "notes")
    assert code == 2 and "notes.v0001.md" in err
    code, out, err = run(rec, "get", "plan")
    assert code == 0 and "the plan" in out
    code, out, err = run(rec, "feed", identity="cat")
    assert code == 0 and "web/plan" in out and "notes.v0001.md" in err


@pytest.mark.parametrize("stream", ["plan", "status"])
def test_history_lists_every_readable_version_and_marks_the_damaged_one(
        rec: Record, stream: str) -> None:
    # One version's broken front matter used to fail the whole history (exit 2) while
    # ls, get and diff worked.
    if stream == "status":
        status.write(rec, "still good\n", author="bob", expect=1)
        status.write(rec, "better\n", author="bob", expect=2)
        command, path = ["status", "log"], rec.status_stream("web").path(2)
    else:
        artifacts.put(rec, "plan", "v2\n", author="bob", expect=1)
        artifacts.put(rec, "plan", "v3\n", author="bob", expect=2)
        command, path = ["history", "plan"], rec.artifact_stream("plan", "web").path(2)
    sub_front_matter(path, "author", "[broken")

    code, out, err = run(rec, *command)
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()] == ["v3", "v2", "v1"]
    assert "UNREADABLE" in out.splitlines()[1] and path.name in err
    code, out, err = run(rec, *command, "--json")
    assert code == 0, err
    listing = json.loads(out)
    assert [v["version"] for v in listing["versions"]] == [3, 1]
    [damaged] = listing["unreadable"]
    assert (damaged["version"], damaged["path"]) == (2, str(path))
    assert "not valid YAML" in damaged["error"]


def test_a_deeply_nested_latest_hints_file_is_ignored(rec: Record) -> None:
    from atlas_files.facts.layout import LATEST_HINTS

    run(rec, "ls")  # writes the hints
    hints = rec.path("projects", "web", "artifacts") / LATEST_HINTS
    overwrite(hints, DEEP)
    code, out, err = run(rec, "ls")
    assert code == 0 and "plan" in out and "notes" in out


# -- everything at once: the site ---------------------------------------------------------


def test_site_build_survives_every_kind_of_damage(rec: Record, tmp_path: Path) -> None:
    leases.claim(rec, "gpu0", holder="ann", duration_s=600, why="train")
    leases.claim(rec, "gpu1", holder="bob", duration_s=600, why="eval")
    overwrite(_newest_generation(rec, "gpu0"), DEEP)
    _healthy_row(rec, "good")
    rec.telemetry_dir.joinpath("box.json").write_text(DEEP)
    rec.receipts_dir.mkdir(exist_ok=True)
    rec.receipts_dir.joinpath("ann.json").write_text(DEEP)
    bad, good = _two_decisions(rec)
    sub_front_matter(bad, "links", DEEP)
    sub_front_matter(rec.artifact_stream("notes", "web").path(1), "version", "1e999")

    code, out, err = run(rec, "site", "build", "--out", str(tmp_path / "site"), "--json")
    assert code == 0, err
    problems = "\n".join(json.loads(out)["problems"])
    assert bad.name in problems and "g00000001.json" in problems
    home = (tmp_path / "site" / "site" / "index.html").read_text(encoding="utf-8")
    assert "plan" in home


# -- unreadable folders (item 13) ---------------------------------------------------------


@contextlib.contextmanager
def _reachable_copy(record: Record) -> Iterator[Record]:
    """A copy of ``record`` that the unprivileged user owns, in a folder it can reach."""
    base = Path(tempfile.mkdtemp(prefix="atlas-perm-"))
    try:
        base.chmod(0o755)
        shutil.copytree(record.root, base / "rec", symlinks=True)
        if os.geteuid() == 0:
            for root, dirs, files in os.walk(base):
                for name in [*dirs, *files]:
                    os.lchown(os.path.join(root, name), NOBODY, NOBODY)
        yield Record.find(base / "rec")
    finally:
        for root, dirs, _ in os.walk(base):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
        shutil.rmtree(base, ignore_errors=True)


def _run_unprivileged(record: Record, *args: str) -> tuple[int, str, str]:
    """``run`` as a user that file permissions apply to. As root (whom they do not stop),
    the command runs in a forked child that drops to uid 65534 first: the interpreter
    may live where that user cannot exec it, so the child reuses this one."""
    if os.geteuid() != 0:
        return run(record, *args)
    run(record, *args)  # as root first: every module the command imports is loaded now
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 98
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with os.fdopen(out_w, "w") as o, os.fdopen(err_w, "w") as e, \
                    contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
                try:
                    main(["--record", str(record.root), "--as", "ann", *args])
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException:  # noqa: BLE001 - the child reports whatever it was
                    import traceback

                    traceback.print_exc()
                    code = 99
        finally:
            os._exit(code)
    os.close(out_w)
    os.close(err_w)
    with os.fdopen(out_r) as o, os.fdopen(err_r) as e:
        out, err = o.read(), e.read()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert "Traceback" not in err, err
    return code, out, err


needs_posix_permissions = pytest.mark.skipif(
    not hasattr(os, "fork") or not hasattr(os, "setuid"),
    reason="needs POSIX permissions and fork to act as an unprivileged user",
)


@needs_posix_permissions
def test_an_unreadable_topic_folder_is_reported_and_the_rest_listed(rec: Record) -> None:
    with _reachable_copy(rec) as copy:
        folder = copy.path("projects", "web", "artifacts", "notes")
        folder.chmod(0)
        code, out, err = _run_unprivileged(copy, "ls")
        assert code == 0 and "plan" in out and str(folder) in err
        code, out, err = _run_unprivileged(copy, "feed")
        assert code == 0 and "web/plan" in out and "web/status" in out
        assert str(folder) in err


@needs_posix_permissions
def test_an_unreadable_artifacts_folder_leaves_the_status_in_the_feed(rec: Record) -> None:
    with _reachable_copy(rec) as copy:
        folder = copy.path("projects", "web", "artifacts")
        folder.chmod(0)
        code, out, err = _run_unprivileged(copy, "feed")
        assert code == 0 and "web/status" in out and str(folder) in err
        code, out, err = _run_unprivileged(copy, "ls")
        assert code == 0 and str(folder) in err and "no topics yet" not in out


@needs_posix_permissions
def test_unreadable_decision_and_telemetry_folders_are_reported(rec: Record) -> None:
    _two_decisions(rec)
    _healthy_row(rec, "good")
    with _reachable_copy(rec) as copy:
        decided = copy.path("projects", "web", "decisions")
        rows = copy.telemetry_dir
        decided.chmod(0)
        rows.chmod(0)
        code, out, err = _run_unprivileged(copy, "decisions")
        assert code == 0 and str(decided) in err
        code, out, err = _run_unprivileged(copy, "telemetry", "ls")
        assert code == 0 and str(rows) in err
        code, out, err = _run_unprivileged(copy, "lease", "ls")
        assert code == 0 and str(rows) in err


def test_permission_errors_are_caught_per_folder_even_as_root(
    rec: Record, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root passes every permission check, so the per-folder handling is shown here by
    making the system refuse one folder's listing."""
    notes = str(rec.path("projects", "web", "artifacts", "notes"))
    real_listdir, real_exists = os.listdir, os.path.exists

    def listdir(path: Any = ".") -> list[str]:
        if str(path) == notes:
            raise PermissionError(13, "Permission denied", notes)
        return real_listdir(path)

    def exists(path: Any) -> bool:
        return False if str(path).startswith(notes) else real_exists(path)

    monkeypatch.setattr(os, "listdir", listdir)
    monkeypatch.setattr(os.path, "exists", exists)
    hints = rec.path("projects", "web", "artifacts", ".atlas-latest.json")
    hints.unlink(missing_ok=True)
    code, out, err = run(rec, "ls")
    assert code == 0 and "plan" in out and notes in err
    code, out, err = run(rec, "feed", identity="cat")
    assert code == 0 and "web/plan" in out and notes in err


# -- messages (item 15) -------------------------------------------------------------------


@pytest.mark.parametrize("asked, shown", [("4h1s", "4h1s"), ("4h0m30s", "4h0m30s"),
                                          ("5h", "5h"), ("14401s", "14401s")])
def test_a_lease_over_the_cap_names_the_exact_duration_asked_for(
    rec: Record, asked: str, shown: str
) -> None:
    code, out, err = run(rec, "lease", "claim", "gpu0", "--for", asked, "--why", "x")
    assert code == 2
    assert f"{shown} is longer than this record's lease cap of 4h" in err, err
    assert "4h is longer" not in err


def test_ls_with_only_damaged_topics_says_so_instead_of_no_topics_yet(rec: Record) -> None:
    for name in ("notes", "plan"):
        sub_front_matter(rec.artifact_stream(name, "web").path(1), "author", DEEP)
    code, out, err = run(rec, "ls")
    assert code == 0
    assert "no topics yet" not in out
    assert "no readable topics; 2 damaged: notes, plan" in out
    code, out, err = run(rec, "ls", "--json")
    assert json.loads(out)["topics"] == [] and json.loads(out)["unreadable"] == ["notes", "plan"]


def test_telemetry_module_reexports_still_work(rec: Record) -> None:
    # The damaged-row path goes through the package's public view as well.
    rec.telemetry_dir.mkdir(exist_ok=True)
    rec.telemetry_dir.joinpath("box.json").write_text(DEEP)
    row = telemetry.view(rec, "box")
    assert row.reachable is None and row.error and "nests too deeply" in row.error
    assert (rec.telemetry_dir / "box.json").read_text() == DEEP  # a reader never rewrites


@pytest.mark.parametrize("answer", [DEEP.encode(),
                                    b'{"gpus": [{"index": 0, "memory_used_mib": 1e999}]}'])
def test_a_probe_answer_nested_deep_or_out_of_range_is_no_sample_not_a_crash(
    answer: bytes
) -> None:
    from atlas_files.protocol.telemetry.probe import readings

    with pytest.raises(ValueError, match="not JSON"):
        readings(answer)


# -- hints that sent the reader the wrong way ---------------------------------------------


def test_expect_past_the_latest_names_the_command_that_lists_that_stream(
        rec: Record, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text("text\n")
    code, _, err = run(rec, "status", "write", "-f", str(body), "--expect", "99")
    assert code == 2 and "`atlas status log` lists" in err  # `atlas history` refuses status
    code, _, err = run(rec, "put", "plan", "-f", str(body), "--expect", "99")
    assert code == 2 and "`atlas history plan` lists" in err


def test_a_deleted_version_is_named_missing_not_promised_or_unreadable(
        rec: Record, tmp_path: Path) -> None:
    for n in range(2, 6):
        artifacts.put(rec, "plan", f"v{n}\n", author="bob", expect=n - 1)
    rec.artifact_stream("plan", "web").path(3).unlink()
    code, _, err = run(rec, "get", "plan", "--version", "3")
    assert code == 2 and "v1..v5" not in err
    assert "it has v1..v2, v4..v5; v3 is missing" in err
    body = tmp_path / "body.md"
    body.write_text("text\n")
    code, _, err = run(rec, "put", "plan", "-f", str(body), "--expect", "2")
    assert code == 3 and "v3 (missing)" in err and "unreadable" not in err


def test_damaged_row_and_config_hints_say_what_fits_the_file(rec: Record) -> None:
    rec.receipts_dir.mkdir(exist_ok=True)
    rec.receipts_dir.joinpath("ann.json").write_text("{bad")
    # Every read warns while the row is damaged: the warning says how to end it.
    code, _, err = run(rec, "get", "plan")
    assert code == 0 and "delete it" in err
    config = rec.root / "atlas.yaml"
    config.write_text(config.read_text() + "projects: [\n")
    code, out, _ = run(rec, "check", "--json")
    hints = {Path(f["path"]).name: f["hint"] for f in json.loads(out)["findings"]}
    # Receipts are git-ignored: there is no git to restore them from.
    assert hints["ann.json"].startswith("delete it") and "git ignores" in hints["ann.json"]
    assert "never edited" not in hints["atlas.yaml"]
    assert "meant to be edited" in hints["atlas.yaml"]


def test_check_fix_says_why_it_leaves_a_misnumbered_hand_written_version(rec: Record) -> None:
    # A hand-written v3 after v1 (no digest): --fix stamps only a version that is
    # otherwise right, so "run `atlas check --fix`" there would send the reader in a circle.
    stream = rec.artifact_stream("plan", "web")
    stream.path(3).write_text("---\nname: plan\nversion: 3\nbased_on: 1\nauthor: ann\n"
                              'written_at: "2026-01-01T00:00:00Z"\nsummary: by hand\n---\n'
                              "by hand\n")
    for args in (("check", "--json"), ("check", "--fix", "--json")):
        code, out, _ = run(rec, *args)
        assert code == 1
        found = {f["code"]: f["hint"] for f in json.loads(out)["findings"]}
        assert "rename it to plan.v0002.md" in found["ATL003"]
        assert "--fix` to stamp" not in found["ATL006"]
        assert "fix the other findings on this file first" in found["ATL006"]
