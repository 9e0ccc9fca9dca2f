"""8 OS processes rewrite one telemetry row 200 times each while others read it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from atlas_files.protocol.telemetry import rows
from atlas_files.storage import schemas
from atlas_files.storage.fsio import TEMP_PREFIX
from atlas_files.storage.record import Record

WRITERS = 8
WRITES = 200
READERS = 3

# Each write is self-describing: its GPU count and every uuid follow from (writer, n), and
# sizes differ from write to write, so a reader can tell a torn or mixed file from a whole.
WRITER = """
import sys
from atlas_files.storage.record import Record
from atlas_files.protocol.telemetry import rows

record, me, writes = Record(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for n in range(writes):
    tag = f"w{me}-{n}"
    gpus = [{"index": k, "uuid": f"{tag}-{k}", "name": "x" * (n % 97),
             "memory_used_mib": n, "memory_total_mib": 1000, "processes": []}
            for k in range((me + n) % 9)]
    rows.write_row(record, {
        "machine": "box", "observed_at": "2026-01-01T00:00:00Z", "observer": f"p{me}",
        "reachable": True, "error": None, "host": tag,
        "nvml": {"available": True, "reason": None}, "gpus": gpus})
"""

READER = """
import json, os, sys
path, stop = sys.argv[1], sys.argv[2]
reads = bad = 0
first_bad = None
while True:
    done = os.path.exists(stop)  # read once more after the writers finished
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        row = json.loads(data)
        me, n = (int(x) for x in row["host"][1:].split("-"))
        ok = (len(row["gpus"]) == (me + n) % 9
              and all(g["uuid"] == f"{row['host']}-{g['index']}" for g in row["gpus"])
              and row["observer"] == f"p{me}")
    except Exception as exc:
        ok = False
        first_bad = first_bad or f"{type(exc).__name__}: {exc} ({len(data)} bytes)"
    reads += 1
    bad += not ok
    if done:
        break
print(json.dumps({"reads": reads, "bad": bad, "first_bad": first_bad}))
"""


def test_no_reader_ever_sees_a_torn_or_empty_row(record: Record, tmp_path: Path) -> None:
    rows.write_row(record, {"machine": "box", "observed_at": "2026-01-01T00:00:00Z",
                            "observer": "p0", "reachable": True, "error": None,
                            "host": "w0-0", "nvml": {"available": True, "reason": None},
                            "gpus": []})
    path = rows.row_path(record, "box")
    stop = tmp_path / "writers-done"
    readers = [subprocess.Popen([sys.executable, "-c", READER, str(path), str(stop)],
                                stdout=subprocess.PIPE, text=True) for _ in range(READERS)]
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(record.root), str(i),
                                 str(WRITES)]) for i in range(WRITERS)]
    try:
        for w in writers:
            assert w.wait(timeout=240) == 0
    finally:
        stop.touch()
        for p in writers:
            if p.poll() is None:
                p.kill()
    results = [json.loads(r.communicate(timeout=60)[0]) for r in readers]
    assert all(r["bad"] == 0 for r in results), results
    assert sum(r["reads"] for r in results) > WRITERS * WRITES // 4, results
    final = json.loads(path.read_text())
    assert final["host"].endswith(f"-{WRITES - 1}")  # some writer's last write won, whole
    assert schemas.errors("telemetry", final) == []
    assert not [p for p in record.telemetry_dir.iterdir() if p.name.startswith(TEMP_PREFIX)]
