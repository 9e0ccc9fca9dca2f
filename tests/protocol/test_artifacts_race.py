"""Real OS processes racing on one topic, and writers killed with SIGKILL mid-write."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.runner import atlas_command
from support.writers import KILLED_WRITER

from atlas_files.protocol import artifacts
from atlas_files.storage import frontmatter
from atlas_files.storage.fsio import TEMP_PREFIX
from atlas_files.storage.record import Record

# Each writer: read the latest (recording its receipt), write the next version; on the
# stop sign, read again and retry. Exactly what the issue asks a well-behaved agent to do.
WRITER = r"""
import sys
from atlas_files.storage.record import Record
from atlas_files.protocol import artifacts
from atlas_files.facts.errors import VersionConflict
root, who, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
import os, time
while not os.path.exists(go):
    time.sleep(0.001)
record = Record(root)
written = conflicts = 0
while written < count:
    try:
        artifacts.get(record, "plan", reader=who)
    except Exception:
        pass  # the topic does not exist yet
    try:
        artifacts.put(record, "plan", f"{who} write {written}\n", author=who)
        written += 1
    except VersionConflict:
        conflicts += 1
print(conflicts)
"""




def _check_versions(topic: Path, expected: int | None = None) -> int:
    names = sorted(p.name for p in topic.iterdir() if not p.name.startswith("."))
    versions = [int(n.split(".v")[1].split(".")[0]) for n in names]
    assert versions == list(range(1, len(versions) + 1)), "versions must be 1..N without a gap"
    if expected is not None:
        assert len(versions) == expected
    for name, version in zip(names, versions, strict=True):
        parsed = frontmatter.parse((topic / name).read_bytes())
        assert parsed.meta["version"] == version
        assert parsed.meta["based_on"] == version - 1
        assert parsed.digest_ok is True, f"{name} is incomplete or corrupt"
    return len(versions)


def test_sixteen_writers_fifty_writes_each_lose_nothing(record: Record, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(record.root), f"w{i:02d}", "50", str(go)],
            stdout=subprocess.PIPE,
        )
        for i in range(16)
    ]
    time.sleep(1.0)
    go.touch()
    conflicts = 0
    for p in procs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0
        conflicts += int(out)
    topic = record.root / "projects" / "web" / "artifacts" / "plan"
    _check_versions(topic, expected=800)
    # Every writer's 50 writes are there, none lost, none duplicated.
    bodies = [d.body for d in artifacts.history(record, "plan")]
    assert len(set(bodies)) == 800
    for i in range(16):
        assert sum(b.startswith(f"w{i:02d} ") for b in bodies) == 50
    assert conflicts > 0, "16 racing writers must have hit the stop sign at least once"


def test_writers_killed_at_random_moments_leave_only_complete_versions(
    record: Record,
) -> None:
    rng = random.Random(1234)
    kills = 0
    while kills < 120:
        batch = [
            subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(record.root), f"k{j}"])
            for j in range(4)
        ]
        time.sleep(0.25 + rng.random() * 0.1)  # let them start writing
        for p in batch:
            time.sleep(rng.random() * 0.03)
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            kills += 1
    topic = record.root / "projects" / "web" / "artifacts" / "plan"
    count = _check_versions(topic)
    assert count > 0
    for leftover in topic.iterdir():
        assert leftover.name.startswith(TEMP_PREFIX) or leftover.name.endswith(".md")
    # Reads and writes work afterwards, and the next write removes crash debris.
    latest = artifacts.get(record, "plan", reader="survivor")
    debris = topic / f"{TEMP_PREFIX}00000000-999999-deadbeef"
    debris.write_bytes(b"partial")
    old = time.time() - 7200
    os.utime(debris, (old, old))
    written = artifacts.put(record, "plan", "after the storm\n", author="survivor")
    assert written.version == latest.version + 1
    assert not [p for p in topic.iterdir() if p.name.startswith(TEMP_PREFIX)]
    _check_versions(topic, expected=count + 1)


def test_two_cli_writers_for_the_same_next_version_exactly_one_wins(
    record: Record, tmp_path: Path
) -> None:
    artifacts.put(record, "plan", "v1\n", author="a")
    artifacts.get(record, "plan", reader="b")
    # Both believe v1 is the latest; --expect 1 for both, started together.
    procs = [
        subprocess.Popen(
            atlas_command("--record", str(record.root), "--as", who, "put", "plan", "--expect",
                          "1"),
            stdin=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for who in ("a", "b", "c", "d")
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(b"racing\n")
        p.stdin.close()
    codes = sorted(p.wait(timeout=60) for p in procs)
    assert codes == [0, 3, 3, 3]
    assert artifacts.history(Record(record.root), "plan")[-1].version == 2
