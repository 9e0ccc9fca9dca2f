"""Clock skew between a lease's writer and its reader: measured against the record's
volume, stated where the expiry is shown, and what it does to exclusion.

Writers with deliberately offset clocks are real processes under faketime (libfaketime
shifts the process's clock; the file system keeps stamping with the kernel's). The
figure docs/leases.md quotes comes from the first test: a holder whose clock runs 3 s
behind loses exclusion for 3 s."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.runner import Result, child_env

from atlas_files.facts import timeutil
from atlas_files.facts.errors import LeaseHeld
from atlas_files.protocol import leases
from atlas_files.protocol.leases import view
from atlas_files.storage import fsio, volclock
from atlas_files.storage.record import Record

GPU = "gpubox.gpu0"
FAKETIME = shutil.which("faketime")
pytestmark = pytest.mark.skipif(
    FAKETIME is None and not os.environ.get("ATLAS_REQUIRE_FAKETIME"),
    reason="faketime is not installed (apt-get install faketime)")


def offset_atlas(clock: str, *args: str, record: Path, identity: str | None = None,
                 ) -> subprocess.CompletedProcess[str]:
    """`atlas` in a process whose clock runs at ``clock`` (faketime's offset, ``-3s``)."""
    assert FAKETIME is not None
    who = ["--as", identity] if identity else []
    return subprocess.run([FAKETIME, "-f", clock, sys.executable, "-m", "atlas_files",
                           "--record", str(record), *who, *args], capture_output=True,
                          text=True, env=child_env(), timeout=120,
                          stdin=subprocess.DEVNULL)


def take_when_free(record: Record, holder: str, deadline_s: float = 30) -> tuple[float, Any]:
    """Claim GPU as soon as this machine's clock says it is free: (when, by this clock)."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            lease = leases.claim(record, GPU, holder=holder, duration_s=60, why="next run")
            return time.time(), lease
        except LeaseHeld:
            if time.monotonic() > end:
                raise
            time.sleep(0.01)


def overlap_s(record: Record, clock: str) -> tuple[float, Any, Any]:
    """A holder whose clock runs at ``clock`` claims GPU for 5 s; a worker with this
    machine's clock takes it as soon as it reads as free. How long both believed they
    held it (the holder's own end, in true time, minus the taker's start), the sheet
    the taker read before, and the taker's claim."""
    claimed = offset_atlas(clock, "lease", "claim", GPU, "--for", "5s", "--why", "run 1",
                           "--json", record=record.root, identity="slow")
    assert claimed.returncode == 0, claimed.stderr
    expires = timeutil.parse_time(json.loads(claimed.stdout)["expires_at"]).timestamp()
    behind = -float(clock.rstrip("s"))  # how far the holder's clock runs behind true time
    sheet = leases.sheet(record)
    taken_at, taken = take_when_free(record, "fast")
    # The holder thinks it holds the lease until its own clock reads `expires`.
    return expires + behind - taken_at, sheet, taken


def test_a_holder_whose_clock_runs_behind_loses_exclusion_for_that_long(
        record: Record, capsys: pytest.CaptureFixture[str]) -> None:
    lost, sheet, taken = overlap_s(record, "-3s")
    (row,) = sheet.leases
    # Before taking it, the reader was told, with the figure.
    assert row.held and row.clock_skew_s is not None and abs(row.clock_skew_s + 3) < 0.1
    assert "runs 3.0 s behind this machine's" in (row.clock_warning or "")
    assert "two workers can both believe they hold it" in (row.clock_warning or "")
    # The other worker took it about 3 s before the holder's own clock ended it.
    assert 2.7 < lost < 3.3, lost
    # Once the holder's own time is up too, the skew is still measured but no longer said.
    time.sleep(max(0.0, lost) + 0.3)
    leases.release(record, GPU, holder="fast")
    old = leases.show(record, GPU)[1][0]
    assert view.state_of(GPU, old, timeutil.now(), 120, reader_clock=volclock.measure(
        record.leases_dir)).clock_warning is None
    # And the claim that took it over says the old holder may still be at work.
    assert taken.clock_warning and "by its own clock slow's lease" in taken.clock_warning
    with capsys.disabled():
        print(f"\n[figure] holder 3 s behind: exclusion lost for {lost:.2f} s; "
              f"measured skew {row.clock_skew_s:.3f} s +/- {row.clock_skew_error_s:.3f} s")


def test_with_clocks_that_agree_exclusion_holds(record: Record) -> None:
    lost, sheet, taken = overlap_s(record, "+0s")
    (row,) = sheet.leases
    assert row.clock_warning is None and abs(row.clock_skew_s or 0) < 0.1
    assert lost < 0.05, lost  # taken only once the holder's own time was up
    assert taken.clock_warning is None


def test_where_the_skew_is_shown(atlas: Callable[..., Result], record: Record,
                                 tmp_path: Path) -> None:
    claimed = offset_atlas("+6s", "lease", "claim", GPU, "--for", "10m", "--why",
                           "fast clock", record=record.root, identity="fast")
    assert claimed.returncode == 0, claimed.stderr
    ls = atlas("lease", "ls")
    assert "clock warning: fast's clock (generation 1) runs 6.0 s ahead" in ls.stdout
    assert "held up to 6.0 s after its holder's clock ends it" in ls.stdout
    (row,) = atlas("lease", "ls", "--json").json()["leases"]
    assert 5.9 <= row["clock_skew_s"] <= 6.1 and row["clock_skew_error_s"] == 0.1
    shown = atlas("lease", "show", GPU, "--json").json()
    assert shown["clock_warning"] == row["clock_warning"]
    assert shown["history"][0]["writer_clock"]["ahead_of_volume_s"] > 5.9
    assert "clock warning:" in atlas("lease", "show", GPU).stdout
    begin = atlas("begin", "--json", identity="ann").json()
    (held,) = begin["leases"]["held"]
    assert "6.0 s ahead" in held["clock_warning"]
    text = atlas("begin", identity="bob").stdout
    assert "the holder's clock runs 6.0 s ahead of yours" in text
    site = atlas("site", "build", "--out", str(tmp_path / "site"))
    assert site.returncode == 0, site.stderr
    board = (tmp_path / "site" / "site" / "leases.html").read_text()
    assert "runs 6.0 s ahead of this machine" in board


def test_a_skew_within_the_allowance_is_measured_but_not_flagged(
        atlas: Callable[..., Result], record: Record) -> None:
    assert offset_atlas("-1s", "lease", "claim", GPU, "--for", "10m", "--why", "w",
                        record=record.root, identity="a").returncode == 0
    (row,) = atlas("lease", "ls", "--json").json()["leases"]
    assert -1.1 < row["clock_skew_s"] < -0.9 and row["clock_warning"] is None
    # The allowance is the record's to set.
    record.update_config(lambda data: {**data, "clock_skew_allowance": "0s"})
    (row,) = atlas("lease", "ls", "--json").json()["leases"]
    assert "behind this machine's" in row["clock_warning"]


def test_a_record_that_travels_by_git_measures_no_skew(atlas: Callable[..., Result],
                                                       record: Record) -> None:
    record.update_config(lambda data: {**data, "sync": {"remote": "origin"}})
    # No person accepted that sync: block on this clone, so the claim is held here only,
    # knowingly (--no-sync).
    assert offset_atlas("-9s", "lease", "claim", GPU, "--for", "10m", "--why", "w",
                        "--no-sync", record=record.root, identity="a").returncode == 0
    (row,) = atlas("lease", "ls", "--json").json()["leases"]
    # Each clone is its own volume: the writer's offset is to its own disk, so nothing
    # here can be compared with it, and nothing is claimed.
    assert row["clock_skew_s"] is None and row["clock_warning"] is None


def _hand_written(record: Record, writer_clock: Any) -> None:
    now = timeutil.now()
    data = {"kind": "lease", "resource": GPU, "generation": 1, "action": "claim",
            "holder": "hand", "why": "by hand", "claimed_at": timeutil.format_time(now),
            "expires_at": timeutil.format_time(now.replace(year=now.year + 1)),
            "duration_s": 3600, "written_at": timeutil.format_time(now),
            "written_by": "hand", "previous": None, "writer_clock": writer_clock}
    folder = record.leases_dir / GPU
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.chmod(0o644)
        old.unlink()
    fsio.publish_exclusive(folder / "g00000001.json", json.dumps(data).encode())


# JSON has no NaN or infinity (a generation holding one is damaged as a whole, elsewhere).
NUMBERS = st.integers() | st.floats(allow_nan=False, allow_infinity=False)
JSON = st.recursive(st.none() | st.booleans() | NUMBERS | st.text(),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=20), inner, max_size=3), max_leaves=8)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSON | st.fixed_dictionaries({"ahead_of_volume_s": JSON, "error_s": JSON,
                                            "resolution_s": JSON}))
def test_a_hand_written_writer_clock_never_breaks_a_reader(record: Record, value: Any) -> None:
    _hand_written(record, value)
    sheet = leases.sheet(record)
    (row,) = sheet.leases
    assert row.held
    skew = row.clock_skew_s
    assert skew is None or math.isfinite(skew)
    if skew is not None:
        assert isinstance(value, dict) and row.clock_skew_error_s is not None


def test_atlas_check_reports_a_malformed_writer_clock(atlas: Callable[..., Result],
                                                      record: Record) -> None:
    _hand_written(record, {"ahead_of_volume_s": "soon"})
    report = atlas("check", "--json").json()
    assert not report["ok"]
    assert any("g00000001.json" in f["path"] for f in report["findings"])
    _hand_written(record, None)
    (row,) = atlas("lease", "ls", "--json").json()["leases"]
    assert row["clock_skew_s"] is None  # written without one: nothing measured


def test_the_offset_reading_bounds_the_truth(tmp_path: Path) -> None:
    """Unit: a local disk's clock is this machine's, so the bound holds zero, tightly."""
    offset = volclock.measure(tmp_path)
    assert offset.low <= 0 <= offset.high and offset.error_s < 0.1
    best = volclock.measure_best(tmp_path)
    assert best.low <= 0 <= best.high
    assert volclock.skew(offset, best).beyond(0.5) == 0
    assert not [p for p in tmp_path.iterdir()]  # its probe files are gone
