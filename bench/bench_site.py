"""Site build benchmark: the generator's share against MkDocs' own build, and growth.

    python bench/bench_site.py [--topics 250,500,1000] [--versions 5]

For each size a record of N topics x V versions is written straight to disk (the same
file format the library writes, without the fsyncs, to keep set-up short), then
``sitegen.build`` runs on it. Printed: the time to write the docs folder (the generator),
MkDocs' build of that folder, their ratio (target <= 0.2 at 1,000 topics), and the time
per topic at each size (linear growth means it stays flat). The largest record is then
built again into the same folder, where the bodies rendered by the first build come from
its cache.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from atlas_files import frontmatter, sitegen, status, timeutil  # noqa: E402
from atlas_files.record import Record  # noqa: E402

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


def make_record(root: Path, topics: int, versions: int) -> Record:
    record = Record.init(root, ["web", "ml"])
    now = timeutil.format_time(timeutil.now())
    for t in range(topics):
        project = "web" if t % 2 == 0 else "ml"
        name = f"topic-{t:05d}"
        folder = record.path("projects", project, "artifacts", name)
        folder.mkdir(parents=True)
        for v in range(1, versions + 1):
            raw = body(t, v).encode()
            meta = {"name": name, "version": v, "based_on": v - 1,
                    "author": ("alice", "bob", "carol")[(t + v) % 3], "written_at": now,
                    "summary": f"revision {v} of topic {t}", "digest": frontmatter.digest_of(raw)}
            (folder / f"{name}.v{v:04d}.md").write_bytes(frontmatter.render(meta, raw))
    for project in ("web", "ml"):
        status.write(record, f"Status of {project}: {topics} topics.\n", author="alice",
                            project=project)
    return record


def timed_build(record: Record, out: Path) -> dict[str, float]:
    """Wall and CPU seconds of the generator and of MkDocs. CPU time is printed too because
    on a machine shared with other work the wall clock mostly measures the others."""
    from atlas_files.sitegen import runner

    w0, c0 = time.perf_counter(), time.process_time()
    docs = sitegen.write_docs(record, out)
    w1, c1 = time.perf_counter(), time.process_time()
    warnings = runner.build(docs.config_file, docs.pages)
    w2, c2 = time.perf_counter(), time.process_time()
    index = out / "site" / "search" / "search_index.json"
    return {"gen": w1 - w0, "gen_cpu": c1 - c0, "mk": w2 - w1, "mk_cpu": c2 - c1,
            "markdown": docs.seconds_markdown,
            "pages": docs.pages, "warnings": len(warnings),
            "index_mb": index.stat().st_size / 1e6}


def line(label: str, t: dict[str, float]) -> str:
    return (f"{label}: generator {t['gen']:5.2f}s + MkDocs {t['mk']:6.2f}s = "
            f"{t['gen'] + t['mk']:6.2f}s wall, ratio {t['gen'] / t['mk']:.3f}; CPU "
            f"{t['gen_cpu']:5.2f}s + {t['mk_cpu']:6.2f}s, ratio {t['gen_cpu'] / t['mk_cpu']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", default="250,500,1000")
    parser.add_argument("--versions", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(x) for x in args.topics.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            record = make_record(Path(tmp) / f"rec{n}", n, args.versions)
            t = timed_build(record, Path(tmp) / f"out{n}")
            rows.append((n, t))
            print(line(f"{n:>5} topics x {args.versions} versions", t))
            print(f"      of the generator's {t['gen']:.2f}s, {t['markdown']:.2f}s is "
                  "Python-Markdown rendering the latest bodies (work MkDocs would do if it "
                  "rendered them); "
                  f"without it, ratio {(t['gen'] - t['markdown']) / t['mk']:.3f}")
            print(f"      {t['pages']:.0f} pages, {t['warnings']:.0f} warnings, search index "
                  f"{t['index_mb']:.1f} MB, {(t['gen_cpu'] + t['mk_cpu']) / n * 1000:.1f} ms "
                  "CPU per topic")
        n, t = rows[-1]
        again = timed_build(record, Path(tmp) / f"out{n}")
        print(line(f"{n:>5} topics, rebuilt (rendered bodies and diffs from the cache)",
                   again))
    for label, key in (("wall", "gen"), ("CPU", "gen_cpu")):
        ratio = t[key] / t["mk" if key == "gen" else "mk_cpu"]
        print(f"target at {n} topics, first build, {label}: generator/MkDocs <= 0.2 -> "
              f"{ratio:.3f} {'OK' if ratio <= 0.2 else 'MISSED'}")
    if len(rows) > 1:
        small_n, small = rows[0]
        per = [(x["gen_cpu"] + x["mk_cpu"]) / k for k, x in rows]
        print("CPU per topic by size: " + ", ".join(
            f"{k}: {p * 1000:.1f} ms" for (k, _), p in zip(rows, per, strict=True))
              + f"; {n} vs {small_n} topics: {per[-1] / per[0]:.2f}x "
              f"(1.0 = linear; quadratic would be {n / small_n:.1f}x)")


if __name__ == "__main__":
    main()
