"""`atlas search` on a big record, each figure against a baseline run in the same run.

A record of 100,000 versions (1,000 topics x 100, two projects) + 10,000 decisions,
written directly, with prose drawn from a 5,000-word vocabulary. One decision's why, 50
decisions before the last, holds a word found nowhere else but in one passing mention.

1. first search (builds the index) against the floor: a Python walk that reads every
   file (target <= 2x); then the first --all-versions search, which adds the history;
2. warm query p50 against `grep -rl WORD` over the same record (target <= 0.1x);
3. a query right after one new version against the warm p50 (target <= 1.2x);
4. the index's size against the record's.

    python bench/bench_search.py              # full scale
    python bench/bench_search.py --scale 0.2  # a fifth of it
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import atlas_argv, clean_env

from atlas_files.search import search as library_search
from atlas_files.storage import entries, frontmatter
from atlas_files.storage.record import Record

NEEDLE = "quillwort"
FLOOR = """
import os, sys
n = 0
for folder, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if d not in (".git", ".atlas-cache")]
    for f in files:
        with open(os.path.join(folder, f), "rb") as fh:
            n += len(fh.read())
print(n)
"""


def vocabulary(rng: random.Random, n: int = 5000) -> list[str]:
    letters = "abcdefghiklmnoprstuvwy"
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    words.discard(NEEDLE)
    return sorted(words)


def prose(rng: random.Random, vocab: list[str], n: int) -> str:
    # Zipf-like: a few words are common, most are rare, as in real text.
    return " ".join(vocab[min(int(rng.paretovariate(1.1)) - 1, len(vocab) - 1)]
                    if rng.random() < 0.5 else rng.choice(vocab) for _ in range(n))


def write_version(folder: Path, name: str, v: int, body: str) -> None:
    raw = body.encode()
    meta = {"name": name, "version": v, "based_on": v - 1, "author": f"w{v % 7}",
            "written_at": f"2026-01-{1 + v % 28:02d}T12:00:00.000000Z",
            "summary": body.splitlines()[0][:200], "digest": frontmatter.digest_of(raw)}
    path = folder / f"{name}.v{v:04d}.md"
    path.write_bytes(frontmatter.render(meta, raw))
    os.chmod(path, 0o444)


def big_record(base: Path, versions: int, decisions: int) -> Record:
    rng = random.Random(7)
    vocab = vocabulary(rng)
    record = Record.init(base / "big", ["web", "ml"])
    per_topic = 100
    topics = max(1, versions // per_topic)
    for t in range(topics):
        project = "web" if t % 2 == 0 else "ml"
        name = f"topic-{t:05d}"
        folder = record.root / "projects" / project / "artifacts" / name
        folder.mkdir(parents=True)
        for v in range(1, per_topic + 1):
            body = (f"# {name} v{v}\n\n{prose(rng, vocab, 50)}\n\n## Next\n\n"
                    f"{prose(rng, vocab, 12)}\n")
            if t == 3 and v == per_topic:  # the passing mention, in a long body
                body += f"\n{prose(rng, vocab, 300)} {NEEDLE} {prose(rng, vocab, 300)}\n"
            write_version(folder, name, v, body)
    folder = record.root / "projects" / "web" / "decisions"
    for i in range(decisions):
        entry_id = f"dec-20260131t{i // 1000000:06d}{i % 1000000:06d}z-{i:08x}"
        why = prose(rng, vocab, 25)
        if i == decisions - 50:
            why += f" because the {NEEDLE} test failed twice"
        meta = {
            "id": entry_id, "kind": "decision", "at": "2026-01-31T12:00:00.000000Z",
            "author": "ann", "project": "web", "topic": prose(rng, vocab, 5),
            "recommended": prose(rng, vocab, 4), "chosen": prose(rng, vocab, 4),
            "relation": "agreed", "why": why,
        }
        meta["digest"] = entries.digest_of_entry(meta, b"")
        (folder / f"{entry_id}.md").write_bytes(frontmatter.render(meta, b""))
    return record


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=clean_env(), check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return wall, proc.stdout.decode()


def size_of(root: Path, skip: str) -> tuple[int, int]:
    """(bytes on disk, bytes of content) of the files under ``root``."""
    disk = content = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != skip]
        for f in files:
            st = os.lstat(os.path.join(folder, f))
            disk += st.st_blocks * 512
            content += st.st_size
    return disk, content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="fraction of the full sizes (1.0: 100k versions, 10k decisions)")
    parser.add_argument("--rounds", type=int, default=15, help="warm queries timed")
    args = parser.parse_args()
    versions = max(100, int(100_000 * args.scale))
    decisions = max(60, int(10_000 * args.scale))
    base = Path(tempfile.mkdtemp(prefix="atlas-bench-"))
    try:
        t0 = time.perf_counter()
        record = big_record(base, versions, decisions)
        root = str(record.root)
        print(f"a record of {versions} versions + {decisions} decisions "
              f"(written in {time.perf_counter() - t0:.1f} s)")
        search = [*atlas_argv(), "--record", root, "search", "--all-projects", "--json"]
        floor = min(timed([sys.executable, "-c", FLOOR, root])[0] for _ in range(2))
        first, out = timed([*search, NEEDLE])
        found = out.count('"kind"')
        print(f"[1] first search (builds the index): {first:7.2f} s   ({found} results)")
        print(f"    floor (read every file):         {floor:7.2f} s")
        print(f"    ratio: {first / floor:.2f}x (target <= 2x) "
              f"{'OK' if first <= 2 * floor else 'MISSED'}")

        hist, _ = timed([*search, "--all-versions", NEEDLE])
        print(f"    first --all-versions search (reads the history too): {hist:7.2f} s, "
              f"{hist / floor:.2f}x the floor")

        grep = statistics.median(timed(["grep", "-rl", "--exclude-dir=.atlas-cache", NEEDLE,
                                        root])[0] for _ in range(3))
        warm = statistics.median(timed([*search, NEEDLE])[0] for _ in range(args.rounds))
        word = vocabulary(random.Random(7))[0]  # the commonest word of the prose
        common = statistics.median(timed([*search, word])[0] for _ in range(5))
        print(f"[2] warm query p50 ({args.rounds} runs): {warm * 1000:7.1f} ms")
        print(f"    grep -rl WORD (p50 of 3):      {grep * 1000:7.1f} ms")
        print(f"    ratio: {warm / grep:.3f}x (target <= 0.1x) "
              f"{'OK' if warm <= 0.1 * grep else 'MISSED'}")
        print(f"    (the commonest word, {word!r}, in most items: p50 {common * 1000:.1f} ms)")
        version = statistics.median(timed([*atlas_argv(), "--version"])[0] for _ in range(5))
        print(f"    (`atlas --version`, the interpreter and click alone: p50 "
              f"{version * 1000:.1f} ms, {version / grep:.3f}x grep)")
        lib = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            library_search(Record(root), NEEDLE, all_projects=True)
            lib.append(time.perf_counter() - start)
        warm_lib = statistics.median(lib)
        print(f"    the library call alone, in one process (no interpreter start): "
              f"p50 {warm_lib * 1000:.1f} ms, {warm_lib / grep:.3f}x grep")

        rng = random.Random(11)
        after = []
        for i in range(9):
            t = rng.randrange(max(1, versions // 100))
            project = "web" if t % 2 == 0 else "ml"
            name = f"topic-{t:05d}"
            folder = record.root / "projects" / project / "artifacts" / name
            latest = max(int(p.name[len(name) + 2:-3]) for p in folder.glob("*.v*.md"))
            write_version(folder, name, latest + 1, f"# {name}\n\nnew version {i} {NEEDLE}\n")
            after.append(timed([*search, NEEDLE])[0])
        one = statistics.median(after)
        print(f"[3] query after one new version (p50 of 9): {one * 1000:7.1f} ms")
        print(f"    ratio to the warm query: {one / warm:.2f}x (target <= 1.2x) "
              f"{'OK' if one <= 1.2 * warm else 'MISSED'}")

        index_bytes, _ = size_of(record.root / ".atlas-cache", "")
        record_disk, record_bytes = size_of(record.root, ".atlas-cache")
        print(f"[4] index with the whole history: {index_bytes / 2**20:.1f} MiB, against the "
              f"record's {record_bytes / 2**20:.1f} MiB of file contents "
              f"({index_bytes / record_bytes:.2f}x) and {record_disk / 2**20:.1f} MiB on disk "
              f"({index_bytes / record_disk:.2f}x)")
    finally:
        for here, _, files in os.walk(base):
            for f in files:
                os.chmod(os.path.join(here, f), 0o644)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
