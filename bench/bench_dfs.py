"""A put on a MooseFS mount against the raw publish loop on the same mount, and the same
pair on local disk: the library's share of a write over a distributed file system.

The raw loop is the syscalls a put makes to publish a version and nothing else: a temp
file written and fsynced, link(2) onto the version's name, the temp file unlinked, the
folder fsynced. `Record.put` adds the stop-sign check (listing the topic, reading who
wrote its latest version), the front matter, and the writer's receipt row where its own
versions cannot tell what it read (its first write of the topic). Target: ratio >= 0.5 on
the mount, as on local disk.

Needs root (MooseFS runs in a private network namespace, mounted through FUSE; see
tests/support/moosefs.py) and Debian's moosefs-master, moosefs-chunkserver and moosefs-client.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_core import raw_loop  # noqa: E402
from support import moosefs  # noqa: E402

from atlas_files.protocol import artifacts  # noqa: E402
from atlas_files.storage import frontmatter  # noqa: E402
from atlas_files.storage.record import Record  # noqa: E402

BODY = "line of a handoff document\n" * 40


def puts(folder: Path, n: int) -> float:
    record = Record.init(folder, ["web"])
    start = time.perf_counter()
    for _ in range(n):
        artifacts.put(record, "doc", BODY, author="bench")
    return time.perf_counter() - start


def publishes(folder: Path, n: int) -> float:
    """The stream's publish alone (the listing, front matter, exclusive create), with
    neither the stop sign's look at the latest version nor a folder kept from the last
    write: the walk to the topic's folder each time."""
    stream = Record.init(folder, ["web"]).artifact_stream("doc", "web")
    start = time.perf_counter()
    for k in range(n):
        stream.write(BODY, author="bench", based_on=k)
    return time.perf_counter() - start


def pair(label: str, where: Path, n: int, rounds: int) -> float:
    """Best of ``rounds`` of each, run in turns; prints them and returns the put's ratio."""
    data = frontmatter.render({"name": "doc"}, BODY.encode())
    raw = lib = bare = float("inf")
    for i in range(rounds):
        raw = min(raw, raw_loop(where / f"raw{i}", n, data))
        lib = min(lib, puts(where / f"rec{i}", n))
        bare = min(bare, publishes(where / f"bare{i}", n))
    ratio = raw / lib
    print(f"{label}: raw loop {n / raw:8.1f} /s, Record.put {n / lib:8.1f} /s, "
          f"ratio {ratio:.2f} (target >= 0.5) {'OK' if ratio >= 0.5 else 'MISSED'}")
    print(f"  {'':<{len(label)}}  the stream's publish alone {n / bare:8.1f} /s, "
          f"ratio {raw / bare:.2f}")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200, help="writes per run (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, best kept")
    args = parser.parse_args()
    reason = moosefs.unavailable()
    if reason is not None:
        sys.exit(f"bench_dfs: {reason}")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="atlas-bench-dfs-") as tmp:
        base = Path(tmp)
        (base / "local").mkdir()
        pair("local disk", base / "local", args.n, args.rounds)
        with moosefs.moosefs(base / "mfs", mounts=1) as fs:
            pair("MooseFS (FUSE)", fs.mounts[0], args.n, args.rounds)


if __name__ == "__main__":
    main()
