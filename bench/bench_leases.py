"""Lease throughput and latency. Run: python bench/bench_leases.py [--seconds 10] [--procs 16]

1. Uncontended: claim+release pairs per second through the library, as a ratio to a raw
   loop of the same file operations (list the folder, read the newest generation, write a
   temp file, fsync, link it to the next name, unlink the temp, fsync the folder), run side
   by side in the same process and the same file system. Target: ratio >= 0.3.
2. Contention: N processes hammer one resource for S seconds (claim, and release at once
   when granted): claims granted per second, and p50/p99 latency of one claim attempt.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from atlas_files.facts.errors import LeaseHeld
from atlas_files.protocol import leases
from atlas_files.storage.record import Record

PAIRS = 150
REPS = 5


def raw_pairs(folder: Path, pairs: int) -> float:
    """The syscalls a claim and a release make, with nothing else: pairs per second."""
    folder.mkdir()
    body = b'{"kind": "lease", "generation": 0, "padding": "' + b"x" * 250 + b'"}\n'
    n = 0
    start = time.perf_counter()
    for _ in range(pairs * 2):
        names = os.listdir(folder)
        if names:
            newest = max(names)
            with open(folder / newest, "rb") as fh:
                fh.read()
        n += 1
        tmp = folder / f".tmp-{os.getpid()}-{n}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, body)
        os.fchmod(fd, 0o444)
        os.fsync(fd)
        os.close(fd)
        os.link(tmp, folder / f"g{n:08d}.json")
        os.unlink(tmp)
        dfd = os.open(folder, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
    return pairs / (time.perf_counter() - start)


def library_pairs(record: Record, resource: str, pairs: int) -> float:
    start = time.perf_counter()
    for _ in range(pairs):
        lease = leases.claim(record, resource, holder="bench", duration_s=60, why="bench")
        leases.release(record, resource, holder="bench", generation=lease.generation)
    return pairs / (time.perf_counter() - start)


def uncontended(root: Path) -> None:
    record = Record.init(root / "uncontended")
    raw, lib = [], []
    for rep in range(REPS):  # interleaved, so both see the same disk and machine load
        raw.append(raw_pairs(root / f"raw{rep}", PAIRS))
        lib.append(library_pairs(record, f"bench.r{rep}", PAIRS))
    r, li = statistics.median(raw), statistics.median(lib)
    print(f"uncontended claim+release pairs/s: library {li:,.0f}, raw syscalls {r:,.0f}; "
          f"ratio {li / r:.2f} (target >= 0.3; median of {REPS} runs of {PAIRS} pairs)")


def _hammer(root: str, who: str, seconds: float, start: Any, out: str) -> None:
    record = Record(root)
    latencies: list[float] = []
    granted = refused = 0
    start.wait()
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        t0 = time.perf_counter()
        try:
            lease = leases.claim(record, "gpubox.gpu0", holder=who, duration_s=60, why="hammer")
        except LeaseHeld:
            latencies.append(time.perf_counter() - t0)
            refused += 1
            continue
        latencies.append(time.perf_counter() - t0)
        granted += 1
        leases.release(record, "gpubox.gpu0", holder=who, generation=lease.generation)
    Path(out).write_text(json.dumps({"granted": granted, "refused": refused,
                                     "latencies": latencies}))


def contended(root: Path, procs: int, seconds: float) -> None:
    record = Record.init(root / "contended")
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    outs = [root / f"hammer{i}.json" for i in range(procs)]
    workers = [ctx.Process(target=_hammer, args=(str(record.root), f"w{i:02d}", seconds,
                                                 start, str(out)))
               for i, out in enumerate(outs)]
    for w in workers:
        w.start()
    start.set()
    for w in workers:
        w.join()
    results = [json.loads(o.read_text()) for o in outs]
    granted = sum(r["granted"] for r in results)
    refused = sum(r["refused"] for r in results)
    lat = sorted(x for r in results for x in r["latencies"])
    p50 = lat[len(lat) // 2] * 1000
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
    current, _ = leases.show(record, "gpubox.gpu0")
    print(f"contention, {procs} processes on one resource for {seconds:.0f} s: "
          f"{granted / seconds:,.0f} claims granted/s ({granted:,} granted, {refused:,} "
          f"refused with exit 4), claim attempt latency p50 {p50:.2f} ms, p99 {p99:.2f} ms; "
          f"{current.generation:,} generations written, {os.cpu_count()} CPUs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--procs", type=int, default=16)
    parser.add_argument("--dir", default=None,
                        help="Where to make the records (default: the system temp folder); "
                        "fsync cost, and so every figure, depends on its file system.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-leases-", dir=args.dir) as tmp:
        root = Path(tmp)
        print(f"records under {root}")
        uncontended(root)
        contended(root, args.procs, args.seconds)


if __name__ == "__main__":
    main()
