"""Site build benchmark: both engines, the generator's share, rebuilds, and growth.

    python bench/bench_site.py [--topics 1000] [--versions 5] [--large 10000]
                               [--scale-versions 3] [--engines mkdocs,zensical]

Records are written straight to disk (the library's file format, without the fsyncs, to
keep set-up short). Each build runs in a child process of its own, so that its peak
memory is its own. Printed, with the issue's targets:

1. ``--topics`` x ``--versions`` (1,000 x 5), a first build with each engine: the
   generator, the engine, the total; Zensical's total against MkDocs' (target <= 0.5);
   the generator's share of each total (target <= 0.2).
2. One new version of one topic, then a rebuild into the same folder (both caches warm):
   the rebuild against the first build (target <= 0.1 with Zensical).
3. ``--topics`` and ``--large`` topics x ``--scale-versions`` (1,000 and 10,000 x 3): time
   and peak memory per topic, and their ratio (linear growth: near 1.0).

Times are CPU seconds (this process and its children) unless said: on a machine shared
with other work the wall clock mostly measures the others. Wall seconds are printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from atlas_files import sitegen
from atlas_files.facts import layout, timeutil
from atlas_files.protocol import status
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record

WORDS = ("loader evaluation seed batch shard cache index plan metric budget window retry "
         "queue merge split label sample export").split()


def body(topic: int, version: int) -> str:
    lines = [f"# Topic {topic}", "", f"Revision {version} of the notes on topic {topic}.", ""]
    for i in range(14):
        w = WORDS[(topic + i * version) % len(WORDS)]
        lines.append(f"- step {i}: check the {w} and the {WORDS[(i * 7) % len(WORDS)]} "
                     f"before run {topic % 17}{'' if i % version else ' (changed)'}")
    lines += ["", "```", f"threshold = {version * 0.1:.1f}", "```", "",
              "| metric | value |", "|---|---|", f"| loss | {1 / version:.3f} |", ""]
    return "\n".join(lines)


def write_version(record: Record, project: str, t: int, v: int, now: str) -> None:
    name = f"topic-{t:05d}"
    folder = record.path("projects", project, "artifacts", name)
    folder.mkdir(parents=True, exist_ok=True)
    raw = body(t, v).encode()
    meta = {"name": name, "version": v, "based_on": v - 1,
            "author": ("alice", "bob", "carol")[(t + v) % 3], "written_at": now,
            "summary": f"revision {v} of topic {t}", "digest": frontmatter.digest_of(raw)}
    (folder / layout.version_filename(name, v)).write_bytes(frontmatter.render(meta, raw))


def make_record(root: Path, topics: int, versions: int) -> Record:
    record = Record.init(root, ["web", "ml"])
    now = timeutil.format_time(timeutil.now())
    for t in range(topics):
        for v in range(1, versions + 1):
            write_version(record, "web" if t % 2 == 0 else "ml", t, v, now)
    for project in ("web", "ml"):
        status.write(record, f"Status of {project}: {topics} topics.\n", author="alice",
                     project=project)
    return record


def _child_build(record: str, out: str, engine: str) -> None:
    """Run in a child: one build, its figures as one JSON line on stdout."""
    wall = time.perf_counter()
    result = sitegen.build(Record(record), out, engine=engine)
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({
        "wall": time.perf_counter() - wall, "gen_wall": result.seconds_docs,
        "eng_wall": result.seconds_engine, "gen": result.cpu_docs, "eng": result.cpu_engine,
        "pages": result.docs.pages, "topics": result.docs.topics,
        "warnings": len(result.warnings), "entries": result.search_entries,
        "rss_mb": me.ru_maxrss / 1024, "child_rss_mb": kids.ru_maxrss / 1024,
    }))


def build(record: Record, out: Path, engine: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "_build", str(record.root), str(out), engine],
        capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{engine} build failed:\n{proc.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    figures["total"] = figures["gen"] + figures["eng"]
    figures["peak_mb"] = max(figures["rss_mb"], figures["child_rss_mb"])
    return figures


def line(label: str, f: dict[str, Any]) -> str:
    return (f"{label}: generator {f['gen']:6.2f}s + engine {f['eng']:6.2f}s = "
            f"{f['total']:6.2f}s CPU (wall {f['gen_wall']:.1f} + {f['eng_wall']:.1f} s), "
            f"generator's share {f['gen'] / f['total']:.3f}; {f['pages']} pages, "
            f"{f['entries']} search entries, {f['warnings']} warnings; peak RSS "
            f"{f['rss_mb']:.0f} MB" + (f" (Zensical {f['child_rss_mb']:.0f} MB)"
                                       if f["child_rss_mb"] > 1 else ""))


def verdict(ok: bool) -> str:
    return "OK" if ok else "MISSED"


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "_build":
        _child_build(*sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--large", type=int, default=10000, help="0: skip the growth runs")
    parser.add_argument("--scale-versions", type=int, default=3)
    parser.add_argument("--engines", default=",".join(sitegen.ENGINES))
    args = parser.parse_args()
    chosen = [e for e in args.engines.split(",") if e]
    n = args.topics
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        record = make_record(root / "rec", n, args.versions)
        first = {}
        print(f"== 1. first build, {n} topics x {args.versions} versions")
        for engine in chosen:
            first[engine] = build(record, root / f"out-{engine}", engine)
            print(line(f"{engine:>8}", first[engine]))
        if {"mkdocs", "zensical"} <= set(first):
            ratio = first["zensical"]["total"] / first["mkdocs"]["total"]
            wall = ((first["zensical"]["gen_wall"] + first["zensical"]["eng_wall"])
                    / (first["mkdocs"]["gen_wall"] + first["mkdocs"]["eng_wall"]))
            print(f"target: Zensical total <= 0.5x MkDocs total -> {ratio:.3f} CPU "
                  f"({wall:.3f} wall) {verdict(ratio <= 0.5)}")
        for engine, f in first.items():
            share = f["gen"] / f["total"]
            print(f"target: generator's share <= 0.2 with {engine} -> {share:.3f} "
                  f"{verdict(share <= 0.2)}")

        print(f"== 2. one new version of one topic, rebuilt into the same folder ({n} topics)")
        write_version(record, "web", 0, args.versions + 1, timeutil.format_time(timeutil.now()))
        for engine in chosen:
            again = build(record, root / f"out-{engine}", engine)
            ratio = again["total"] / first[engine]["total"]
            print(line(f"{engine:>8}", again))
            print(f"          rebuild / first build: {ratio:.3f} CPU, "
                  f"{again['wall'] / first[engine]['wall']:.3f} wall"
                  + (f"; target <= 0.1 -> {verdict(ratio <= 0.1)}" if engine == "zensical"
                     else ""))

        if args.large <= 0:
            return
        print(f"== 3. growth, {n} and {args.large} topics x {args.scale_versions} versions")
        sizes = {}
        for size in (n, args.large):
            sizes[size] = make_record(root / f"scale{size}", size, args.scale_versions)
        for engine in chosen:
            per: dict[int, dict[str, Any]] = {}
            for size, rec in sizes.items():
                per[size] = build(rec, root / f"scale-out-{engine}-{size}", engine)
                print(line(f"{engine:>8} {size:>6} topics", per[size]))
            small, large = per[n], per[args.large]
            t_ratio = (large["total"] / args.large) / (small["total"] / n)
            m_ratio = (large["peak_mb"] / args.large) / (small["peak_mb"] / n)
            print(f"          per topic: {small['total'] / n * 1000:.1f} -> "
                  f"{large['total'] / args.large * 1000:.1f} ms CPU (ratio {t_ratio:.2f}), "
                  f"peak {small['peak_mb'] / n * 1024:.0f} -> "
                  f"{large['peak_mb'] / args.large * 1024:.0f} KB (ratio {m_ratio:.2f}; "
                  "1.0 = linear, below 1 = a fixed cost spread wider)")
            growth = (large["peak_mb"] - small["peak_mb"]) / (args.large - n) * 1024
            print(f"          memory added per topic from {n} to {args.large}: "
                  f"{growth:.0f} KB")


if __name__ == "__main__":
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    main()
