"""Leases through the real CLI and the library: claims, refusals, expiry, history, limits."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.runner import Result, snapshot

from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput, LeaseHeld
from atlas_files.facts.layout import generation_number
from atlas_files.facts.names import is_name
from atlas_files.protocol import leases
from atlas_files.storage import config as configmod
from atlas_files.storage import fsio, schemas
from atlas_files.storage.record import Record

GPU = "gpubox.gpu0"


def _words(text: str) -> str:
    return " ".join(text.split())


def _set_config(record: Record, **changes: object) -> Record:
    data = dict(record.config.raw)
    data.update(changes)
    fsio.replace_atomic(record.root / "atlas.yaml", configmod.render(data))
    return Record(record.root)


def _generation_files(record: Record, resource: str) -> list[Path]:
    folder = record.leases_dir / resource
    return sorted(p for p in folder.iterdir() if generation_number(p.name) is not None)


def test_claim_then_another_is_refused_with_exit_4_naming_holder_why_and_time_left(
    atlas: Callable[..., Result], record: Record
) -> None:
    r = atlas("lease", "claim", GPU, "--for", "2h", "--why", "train run 7", "--json",
              identity="alice")
    assert r.returncode == 0, r.stderr
    data = r.json()
    assert {"resource", "holder", "why", "generation", "claimed_at", "expires_at",
            "state"} <= set(data)
    assert (data["holder"], data["state"], data["generation"]) == ("alice", "held", 1)
    before = snapshot(record.root)

    r = atlas("lease", "claim", GPU, "--for", "1h", "--why", "eval", identity="bob")
    assert r.returncode == 4
    assert "alice" in r.stderr and "train run 7" in r.stderr
    assert re.search(r"for (1h59m|2h) more", r.stderr), r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 2
    assert snapshot(record.root) == before

    # A claim by the current holder renews: the next generation, same holder.
    r = atlas("lease", "claim", GPU, "--for", "3h", "--why", "train run 7b", "--json",
              identity="alice")
    assert r.returncode == 0
    assert (r.json()["generation"], r.json()["action"]) == (2, "renew")


def test_show_and_ls_json_keys_and_history_with_how_each_generation_ended(
    atlas: Callable[..., Result], record: Record
) -> None:
    leases.claim(record, GPU, holder="alice", duration_s=600, why="run 1")
    leases.renew(record, GPU, holder="alice", duration_s=1200)
    leases.release(record, GPU, holder="alice")
    leases.claim(record, GPU, holder="bob", duration_s=60, why="run 2")
    leases.break_lease(record, GPU, holder="carol", why="bob's process is gone")

    show = atlas("lease", "show", GPU, "--json").json()
    assert (show["holder"], show["state"], show["generation"]) == ("carol", "held", 5)
    hist = show["history"]
    assert [h["action"] for h in hist] == ["claim", "renew", "release", "claim", "break"]
    assert [h["generation"] for h in hist] == [1, 2, 3, 4, 5]
    assert hist[0]["ended"].startswith("renewed")
    assert hist[1]["ended"] == "released by alice"
    assert hist[3]["ended"] == "broken by carol: bob's process is gone"
    assert hist[4]["previous"]["holder"] == "bob"
    assert hist[4]["why"] == "bob's process is gone"

    text = atlas("lease", "show", GPU).stdout
    assert "held by carol" in text and "took over from bob" in text

    listing = atlas("lease", "ls", "--json").json()
    assert set(listing) >= {"advisory", "leases"}
    (row,) = listing["leases"]
    assert {"resource", "state", "holder", "why", "generation", "expires_at",
            "expires_in_s"} <= set(row)
    assert row["resource"] == GPU and row["state"] == "held" and row["holder"] == "carol"
    assert 0 < row["expires_in_s"] <= 3600

    for path in _generation_files(record, GPU):
        assert schemas.errors("lease", json.loads(path.read_bytes())) == [], path
        assert path.stat().st_mode & 0o222 == 0, "published generations are read-only"


def test_limits_stated_in_help_ls_text_ls_json_and_schema(
    atlas: Callable[..., Result], record: Record
) -> None:
    advisory = _words(leases.ADVISORY)
    for needed in ("advisory", "nothing enforces", "same second", "only the claim",
                   "does not prove", "took no lease is invisible", "clocks"):
        assert needed in advisory.lower()
    assert advisory in _words(atlas("lease", "--help").stdout)
    assert advisory in _words(atlas("lease", "ls").stdout)  # also when the sheet is empty
    leases.claim(record, GPU, holder="alice", duration_s=60, why="x")
    assert advisory in _words(atlas("lease", "ls").stdout)
    assert atlas("lease", "ls", "--json").json()["advisory"] == leases.ADVISORY
    assert leases.ADVISORY in schemas.load("lease")["description"]
    page = Path(__file__).resolve().parents[3] / "docs" / "leases.md"
    assert advisory in _words(page.read_text(encoding="utf-8").replace("\n> ", " "))


def test_refusals_by_a_non_holder_change_nothing(
    atlas: Callable[..., Result], record: Record
) -> None:
    r = atlas("lease", "renew", GPU, identity="bob")
    assert r.returncode == 2 and "nobody has ever claimed it" in r.stderr
    assert atlas("lease", "claim", GPU, "--for", "1h", "--why", "x",
                 identity="alice").returncode == 0
    before = snapshot(record.root)
    for args in (("renew", GPU), ("renew", GPU, "--for", "2h"), ("release", GPU),
                 ("claim", GPU, "--for", "1m", "--why", "mine now")):
        r = atlas("lease", *args, identity="bob")
        assert r.returncode == 4, (args, r.stderr)
        assert "held by alice" in r.stderr
    # The holder itself, with a generation that is not the newest: refused as well.
    r = atlas("lease", "renew", GPU, "--generation", "7", identity="alice")
    assert r.returncode == 2
    r = atlas("lease", "break", GPU, "--why", "x", identity="alice")
    assert r.returncode == 2 and "hold" in r.stderr
    assert snapshot(record.root) == before

    assert atlas("lease", "release", GPU, identity="alice").returncode == 0
    before = snapshot(record.root)
    r = atlas("lease", "release", GPU, identity="bob")
    assert r.returncode == 2 and "do not hold" in r.stderr
    r = atlas("lease", "break", GPU, "--why", "x", identity="bob")
    assert r.returncode == 2 and "free" in r.stderr
    assert snapshot(record.root) == before


def test_duration_over_the_cap_is_refused_not_cut(
    atlas: Callable[..., Result], record: Record
) -> None:
    before = snapshot(record.root)
    for duration in ("4h1s", "5h", "1d", "0s", "soon", "-1h"):
        r = atlas("lease", "claim", GPU, "--for", duration, "--why", "x", identity="alice")
        assert r.returncode == 2, (duration, r.stderr)
        assert "Traceback" not in r.stderr
    assert snapshot(record.root) == before
    assert atlas("lease", "claim", GPU, "--for", "4h", "--why", "x",
                 identity="alice").returncode == 0
    # Over the cap on a renew too; the lease is left as it was.
    before = snapshot(record.root)
    assert atlas("lease", "renew", GPU, "--for", "6h", identity="alice").returncode == 2
    assert snapshot(record.root) == before

    record = _set_config(record, lease_cap="24h")
    assert atlas("lease", "claim", "gpubox.gpu1", "--for", "25h", "--why", "x",
                 identity="alice").returncode == 2
    r = atlas("lease", "claim", "gpubox.gpu1", "--for", "20h", "--why", "x", "--json",
              identity="alice")
    assert r.returncode == 0 and 19.9 * 3600 < r.json()["expires_in_s"] <= 20 * 3600


def test_bad_resource_names_and_missing_options_exit_2_before_any_file(
    atlas: Callable[..., Result], record: Record
) -> None:
    before = snapshot(record.root)
    for name in ("../escape", "GPU0", "a/b", ".hidden", "a..b", "x" * 101, "-lead", "gpu 0"):
        r = atlas("lease", "claim", name, "--for", "1h", "--why", "x", identity="alice")
        assert r.returncode == 2, (name, r.stderr)
        assert "Traceback" not in r.stderr
        assert atlas("lease", "show", name).returncode == 2
    assert atlas("lease", "claim", GPU, "--for", "1h", identity="alice").returncode == 2
    assert atlas("lease", "claim", GPU, "--why", "x", identity="alice").returncode == 2
    assert atlas("lease", "claim", GPU, "--for", "1h", "--why", "x").returncode == 2  # no --as
    r = atlas("lease", "claim", GPU, "--for", "1h", "--why", "two\nlines", identity="alice")
    assert r.returncode == 2
    assert snapshot(record.root) == before
    assert not (record.root.parent / "escape").exists()


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=0, max_size=40))
def test_fuzzed_resource_names_are_refused_or_stay_inside_leases(
    record: Record, name: str
) -> None:
    try:
        leases.claim(record, name, holder="fuzz", duration_s=5, why="fuzz")
    except BadInput:
        assert not is_name(name)
        return
    assert is_name(name)
    assert (record.leases_dir / name).is_dir()


def test_expiry_is_computed_when_read_and_a_renewed_lease_is_not_expired(
    atlas: Callable[..., Result], record: Record
) -> None:
    short = leases.claim(record, "gpubox.gpu1", holder="alice", duration_s=1, why="short")
    kept = leases.claim(record, "gpubox.gpu2", holder="alice", duration_s=1, why="kept")
    with pytest.raises(LeaseHeld):
        leases.claim(record, "gpubox.gpu1", holder="bob", duration_s=60, why="b")
    leases.renew(record, "gpubox.gpu2", holder="alice", duration_s=30)
    expiry = timeutil.parse_time(short.expires_at or "")
    time.sleep(max(0.0, (expiry - timeutil.now()).total_seconds()) + 0.05)
    # Nothing ran in between: no cleanup job, no release. The read alone says free.
    assert leases.current(record, "gpubox.gpu1").state == "free"
    assert leases.current(record, "gpubox.gpu1").ended == "expired"
    assert timeutil.parse_time(kept.expires_at or "") < timeutil.now()
    r = atlas("lease", "claim", "gpubox.gpu1", "--for", "1m", "--why", "mine", "--json",
              identity="bob")
    assert r.returncode == 0 and r.json()["holder"] == "bob" and r.json()["generation"] == 2
    r = atlas("lease", "claim", "gpubox.gpu2", "--for", "1m", "--why", "mine", identity="bob")
    assert r.returncode == 4 and "alice" in r.stderr
    _, history = leases.show(record, "gpubox.gpu1")
    assert history[0].ended is not None and history[0].ended.startswith("expired")
    assert history[0].ended.endswith("then claimed by bob")


def test_an_expired_lease_nobody_took_can_still_be_renewed_by_its_holder(
    record: Record,
) -> None:
    lease = leases.claim(record, GPU, holder="alice", duration_s=1, why="x")
    time.sleep(1.1)
    renewed = leases.renew(record, GPU, holder="alice", duration_s=60,
                           generation=lease.generation)
    assert renewed.held and renewed.generation == 2
    with pytest.raises(LeaseHeld):
        leases.renew(record, GPU, holder="alice", generation=1)


def test_a_claim_written_in_the_future_is_flagged_when_read(
    atlas: Callable[..., Result], record: Record
) -> None:
    ahead = timeutil.now() + timedelta(minutes=10)
    for resource, when in (("fast.gpu0", ahead), ("ok.gpu0", timeutil.now() + timedelta(
            seconds=30))):
        data = {
            "kind": "lease", "resource": resource, "generation": 1, "action": "claim",
            "holder": "faraway", "why": "written by a machine with a fast clock",
            "claimed_at": timeutil.format_time(when),
            "expires_at": timeutil.format_time(when + timedelta(hours=1)),
            "duration_s": 3600, "written_at": timeutil.format_time(when),
            "written_by": "faraway", "previous": None,
        }
        folder = record.leases_dir / resource
        folder.mkdir()
        fsio.publish_exclusive(folder / "g00000001.json", json.dumps(data).encode())
    rows = {r["resource"]: r for r in atlas("lease", "ls", "--json").json()["leases"]}
    assert "future" in rows["fast.gpu0"]["clock_warning"]
    assert rows["ok.gpu0"]["clock_warning"] is None  # within the 2 minute tolerance
    text = atlas("lease", "ls").stdout
    assert text.count("clock warning") == 1
    assert "clock warning" in atlas("lease", "show", "fast.gpu0").stdout


def test_telemetry_beside_gpu_leases_and_busy_gpus_without_a_lease(
    atlas: Callable[..., Result], record: Record
) -> None:
    row = {
        "machine": "gpubox", "observed_at": timeutil.format_time(timeutil.now()),
        "observer": "prober", "reachable": True, "error": None,
        "gpus": [
            {"index": 0, "memory_used_mib": 30000, "memory_total_mib": 81559, "processes": []},
            {"index": 1, "memory_used_mib": 20000, "memory_total_mib": 81559,
             "processes": [{"pid": 7}]},
            {"index": 2, "memory_used_mib": 300, "memory_total_mib": 81559, "processes": []},
        ],
    }
    record.telemetry_dir.mkdir(exist_ok=True)
    (record.telemetry_dir / "gpubox.json").write_text(json.dumps(row))
    leases.claim(record, GPU, holder="alice", duration_s=600, why="run")
    leases.claim(record, "dataset.imagenet", holder="alice", duration_s=600, why="rebuild")
    data = atlas("lease", "ls", "--json").json()
    rows = {r["resource"]: r for r in data["leases"]}
    assert rows[GPU]["telemetry"]["memory_used_mib"] == 30000
    assert rows["dataset.imagenet"]["telemetry"] is None
    assert [g["resource"] for g in data["unleased_busy"]] == ["gpubox.gpu1"]
    text = atlas("lease", "ls").stdout
    assert "30000 of 81559 MiB" in text and "busy but unleased" in text
    assert "gpubox.gpu1" in text
    assert _words(leases.ADVISORY) in _words(text)  # telemetry does not replace the limits


def test_damaged_generation_is_reported_and_can_be_broken(
    atlas: Callable[..., Result], record: Record
) -> None:
    leases.claim(record, GPU, holder="alice", duration_s=600, why="run")
    leases.claim(record, "other", holder="alice", duration_s=600, why="run")
    folder = record.leases_dir / GPU
    fsio.publish_exclusive(folder / "g00000002.json", b"{not json")
    r = atlas("lease", "claim", GPU, "--for", "1h", "--why", "x", identity="bob")
    assert r.returncode == 2 and "damaged" in r.stderr and "Traceback" not in r.stderr
    r = atlas("lease", "ls")
    assert r.returncode == 0 and "other" in r.stdout and "damaged" in r.stderr
    r = atlas("lease", "break", GPU, "--why", "generation 2 is garbage", "--json",
              identity="bob")
    assert r.returncode == 0 and r.json()["generation"] == 3
    # The break says the details are in `lease show`: they are, damaged generation and all.
    r = atlas("lease", "show", GPU)
    assert r.returncode == 0, r.stderr
    assert "held by bob" in r.stdout and "g2    damaged" in r.stdout
    assert "took over past damaged generation 2" in r.stdout
    shown = atlas("lease", "show", GPU, "--json").json()
    assert [g["action"] for g in shown["history"]] == ["claim", "damaged", "break"]
    assert "not valid JSON" in shown["history"][1]["why"]


def test_a_duration_over_the_cap_is_said_as_given(
    atlas: Callable[..., Result], record: Record
) -> None:
    r = atlas("lease", "claim", GPU, "--for", "300000000h", "--why", "x", identity="alice")
    assert r.returncode == 2
    assert "300000000h is longer than this record's lease cap of 4h" in r.stderr
    assert "11574074d" not in r.stderr


def test_a_hand_edited_expiry_past_the_cap_is_read_at_the_cap_and_said(
    atlas: Callable[..., Result], record: Record
) -> None:
    leases.claim(record, GPU, holder="alice", duration_s=600, why="run")
    [path] = _generation_files(record, GPU)
    data = json.loads(path.read_text())
    data["expires_at"] = "2030-01-01T00:00:00Z"
    path.chmod(0o644)
    path.write_text(json.dumps(data))
    row = atlas("lease", "show", GPU, "--json").json()
    assert row["state"] == "held" and 0 < row["expires_in_s"] <= 4 * 3600
    assert row["expires_at"] != "2030-01-01T00:00:00Z"
    assert "lease cap of 4h" in row["clock_warning"]
    listed = atlas("lease", "ls", "--json").json()["leases"]
    assert listed[0]["expires_in_s"] <= 4 * 3600
    assert "lease cap" in atlas("lease", "ls").stdout
    # Honoured as written before, it blocked the resource for three years.
    r = atlas("lease", "claim", GPU, "--for", "1h", "--why", "x", identity="bob")
    assert r.returncode == 4 and "1126d" not in r.stderr
    assert "ATL020" in atlas("check").stdout


def test_debris_of_a_crashed_writer_is_ignored_and_cleaned(record: Record) -> None:
    leases.claim(record, GPU, holder="alice", duration_s=60, why="x")
    folder = record.leases_dir / GPU
    debris = folder / f"{fsio.TEMP_PREFIX}{fsio._host_tag()}-999999999-deadbeef"
    debris.write_text("half a generation")
    assert leases.current(record, GPU).holder == "alice"
    assert not debris.exists()


def test_newest_generation_found_from_the_listing_despite_stray_files(record: Record) -> None:
    for _ in range(12):
        lease = leases.claim(record, GPU, holder="alice", duration_s=60, why="x")
    folder = record.leases_dir / GPU
    (folder / "notes.txt").write_text("a stray file sorts after every generation")
    (folder / "g1.json").write_text("too few digits: not a generation")
    now = leases.current(record, GPU)
    assert (now.generation, now.holder) == (lease.generation, "alice") == (12, "alice")
    assert leases.renew(record, GPU, holder="alice").generation == 13


def test_a_symlinked_generation_is_damage_never_followed(
    atlas: Callable[..., Result], record: Record, tmp_path: Path
) -> None:
    """A generation that is a symlink is reported as damaged, not read through: the file
    it points at (here outside the record) never decides who holds the resource."""
    outside = tmp_path / "forged.json"
    forged = {"kind": "lease", "resource": GPU, "generation": 1, "action": "claim",
              "holder": "mallory", "why": "forged", "claimed_at": "2026-01-01T00:00:00Z",
              "expires_at": "2999-01-01T00:00:00Z", "duration_s": 60,
              "written_at": "2026-01-01T00:00:00Z", "written_by": "mallory", "previous": None}
    outside.write_text(json.dumps(forged))
    folder = record.leases_dir / GPU
    folder.mkdir()
    (folder / "g00000001.json").symlink_to(outside)

    r = atlas("lease", "ls", "--json")
    assert r.returncode == 0, r.stderr
    [row] = r.json()["leases"]  # a row that says it is damaged, never what the link says
    assert (row["state"], row["holder"]) == ("damaged", None) and "mallory" not in r.stdout
    [problem] = r.json()["problems"]
    assert "symlink" in problem and "g00000001.json" in problem
    for args in (("lease", "show", GPU), ("lease", "claim", GPU, "--for", "1h", "--why", "x")):
        r = atlas(*args, identity="bob")
        assert r.returncode == 2 and "symlink" in r.stderr, (args, r.stderr)
        assert "mallory" not in r.stderr and "Traceback" not in r.stderr
    r = atlas("lease", "break", GPU, "--why", "generation 1 is a link", "--json",
              identity="bob")
    assert r.returncode == 0 and r.json()["holder"] == "bob"
    assert json.loads(outside.read_text()) == forged  # the target was never touched


def test_a_file_where_a_lease_folder_belongs_is_reported_not_a_traceback(
    atlas: Callable[..., Result], record: Record
) -> None:
    leases.claim(record, "other", holder="alice", duration_s=600, why="run")
    (record.leases_dir / GPU).write_text("not a folder")
    r = atlas("lease", "ls")
    assert r.returncode == 0 and "other" in r.stdout
    assert f"{GPU} should be a folder" in r.stderr and "Traceback" not in r.stderr
    r = atlas("lease", "claim", GPU, "--for", "1h", "--why", "x", identity="alice")
    assert r.returncode == 2 and "should be a folder" in r.stderr
    assert "Traceback" not in r.stderr and "hint:" in r.stderr

    # leases/ itself a file: every lease command says so plainly.
    import shutil

    shutil.rmtree(record.leases_dir)
    (record.root / "leases").write_text("not a folder")
    r = atlas("lease", "ls", "--json")
    assert r.returncode == 0 and r.json()["leases"] == []
    assert any("leases should be a folder" in p for p in r.json()["problems"])
    r = atlas("lease", "ls")
    assert "no readable leases" in r.stdout and "no leases yet" not in r.stdout
    for args in (("lease", "show", GPU), ("lease", "claim", GPU, "--for", "1h", "--why", "x"),
                 ("lease", "break", GPU, "--why", "x")):
        r = atlas(*args, identity="alice")
        assert r.returncode == 2, (args, r.stderr)
        assert "leases should be a folder" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("why", ["bell\a", "esc \x1b[2J clear", "nul\x00", "del\x7f",
                                 "c1 \x85 next line", "tab\there", "\ud800 surrogate",
                                 "two\nlines", "cr\rreturn"])
def test_a_lease_why_follows_the_same_text_rule_as_a_decision(
    atlas: Callable[..., Result], record: Record, why: str
) -> None:
    """One rule for one-line text: a --why a decision's --topic refuses is refused for a
    lease too (exit 2, nothing written), and never printed back to a terminal."""
    from atlas_files.facts.errors import BadInput as Refused
    from atlas_files.facts.text import clean_text

    with pytest.raises(Refused):
        clean_text(why, "the topic", one_line=True, limit=200)
    before = snapshot(record.root)
    with pytest.raises(Refused):
        leases.claim(record, GPU, holder="alice", duration_s=60, why=why)
    if "\x00" not in why and "\ud800" not in why:  # argv cannot carry these two
        r = atlas("lease", "claim", GPU, "--for", "1h", "--why", why, identity="alice")
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert why not in r.stdout + r.stderr
    assert snapshot(record.root) == before
    leases.claim(record, GPU, holder="alice", duration_s=60, why="fine: Ünïcødé ✓ 😀")
    with pytest.raises(Refused):
        leases.break_lease(record, GPU, holder="bob", why=why)


ODD = st.sampled_from(["", " ", "0", "-1", "1e400", "nan", "inf", "9" * 30 + "d",
                       "1" * 400 + "s", "1h" * 40, "é", "😀", "\x07", "4h1s", "45s"])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(duration=ODD | st.text(max_size=20), why=ODD | st.text(max_size=20),
       verb=st.sampled_from(["claim", "renew", "break"]))
@example(duration="1" * 400 + "s", why="x", verb="claim")
@example(duration="1" * 400 + "s", why="x", verb="renew")
@example(duration="1" * 400 + "s", why="x", verb="break")
@example(duration="1h", why="bell\a", verb="claim")
@example(duration="1h", why="\ud800", verb="break")
def test_odd_durations_and_reasons_never_give_a_traceback(
    record: Record, duration: str, why: str, verb: str
) -> None:
    import contextlib
    import io

    from atlas_files.cli import main

    args = {"claim": ["--for", duration, "--why", why], "renew": ["--for", duration],
            "break": ["--why", why, "--for", duration]}[verb]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        with pytest.raises(SystemExit) as exit_:
            main(["--record", str(record.root), "--as", "fuzz", "lease", verb, GPU, *args])
    assert exit_.value.code in (0, 2, 4), err.getvalue()
    if exit_.value.code:
        assert err.getvalue().startswith("atlas: error: ")


def test_the_demo_scene_runs_the_cli_through_the_shared_demo_runner(
    record: Record, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease scene shows bob's refused claim (exit 4) and his later claim (exit 0)
    through the one demo runner, atlas_files.cli.demo.atlas_cli."""
    from atlas_files.cli import demo
    from atlas_files.cli.demo import leases as scene_module

    calls: list[tuple[str | None, tuple[str, ...]]] = []
    real = demo.atlas_cli

    def recording(rec: Record, who: str | None, *args: str,
                  body: str | None = None) -> tuple[int, str, str]:
        calls.append((who, args))
        return real(rec, who, *args, body=body)

    monkeypatch.setattr(demo, "atlas_cli", recording)
    said: list[str] = []
    scene_module.scene(record, said.append)
    assert [(who, args[:2]) for who, args in calls] == [("bob", ("lease", "claim"))] * 2
    shown = "\n".join(said)
    assert "-> exit 4" in shown and "-> exit 0" in shown and "held by alice" in shown


@pytest.mark.parametrize("cap", ["0s", "0m"])
def test_a_lease_cap_that_refuses_every_claim_is_a_check_finding(
        atlas: Callable[..., Result], record: Record, cap: str) -> None:
    # Every claim was refused while `atlas check` said nothing about atlas.yaml.
    record = _set_config(record, lease_cap=cap)
    assert atlas("lease", "claim", GPU, "--for", "1m", "--why", "x",
                 identity="alice").returncode == 2
    r = atlas("check", "--json")
    assert r.returncode == 1
    [finding] = [f for f in r.json()["findings"] if f["path"].endswith("atlas.yaml")]
    assert finding["code"] == "ATL001" and "refuses every lease claim" in finding["message"]
