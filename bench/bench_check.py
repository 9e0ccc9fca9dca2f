"""Benchmarks of `atlas check`, each against a baseline run side by side in the same run.

1. Schema validation: the same N JSON rows (telemetry rows) validated by `atlas check` and
   by `check-jsonschema --schemafile`; the ratio per file (target: atlas at least as fast).
2. A big record (default 100,000 version files + 10,000 decisions, written directly, not
   through `atlas put`): `atlas check` wall time (target <= 20 s) and peak memory of the
   child (target <= 300 MB), beside a floor: a plain Python walk that only reads every file.
3. The pre-commit path: `atlas check --staged` on a one-file change in that record kept in
   git (target <= 0.5 s), beside `git diff --cached --name-status` (git's own cost).

    python bench/bench_check.py            # full scale (a few minutes)
    python bench/bench_check.py --scale 0.1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from atlas_files.storage import entries, frontmatter  # noqa: E402
from atlas_files.storage.record import Record  # noqa: E402

FLOOR = """
import os, sys
n = 0
for folder, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if d != ".git"]
    for f in files:
        with open(os.path.join(folder, f), "rb") as fh:
            n += len(fh.read())
print(n)
"""


def measure(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS in MB of that child alone, exit code, stdout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")})
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    return wall, 0.0, proc.returncode, out.decode("utf-8", "replace") + err.decode()[-2000:]


def measure_rss(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, int, str]:
    """Like ``measure``, with the peak RSS of this one child (os.wait4, not all children)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                env={k: v for k, v in os.environ.items()
                                     if not k.startswith("ATLAS_")})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return wall, usage.ru_maxrss / 1024, proc.returncode, text


ATLAS = [sys.executable, "-m", "atlas_files"]


def telemetry_rows(record: Record, n: int) -> None:
    folder = record.root / "telemetry"
    for i in range(n):
        row = {
            "machine": f"m{i:06d}", "observed_at": "2026-01-31T12:00:00.000000Z",
            "observer": "prober", "reachable": True, "error": None, "probe": "local",
            "duration_s": 0.4, "host": f"host{i}", "sampled_at": "2026-01-31T12:00:00Z",
            "nvml": {"available": True, "reason": None, "driver_version": "550.54"},
            "gpus": [],
        }
        (folder / f"m{i:06d}.json").write_text(json.dumps(row, indent=1) + "\n")


def bench_schema(base: Path, n: int) -> None:
    record = Record.init(base / "rows", ["web"])
    telemetry_rows(record, n)
    files = sorted(str(p) for p in (record.root / "telemetry").iterdir())
    schema = str(REPO / "schemas" / "telemetry.schema.json")
    cj = shutil.which("check-jsonschema")
    a_wall, _, a_rc, a_out = measure(ATLAS + ["--record", str(record.root), "check",
                                              str(record.root / "telemetry")])
    print(f"[1] schema validation of {n} telemetry rows")
    print(f"    atlas check:             {a_wall:7.2f} s  ({a_wall / n * 1e6:6.0f} us/file, "
          f"exit {a_rc}: {a_out.strip().splitlines()[-1]})")
    if cj is None:
        print("    check-jsonschema: not installed")
        return
    c_wall, _, c_rc, c_out = measure([cj, "--schemafile", schema, *files])
    print(f"    check-jsonschema:        {c_wall:7.2f} s  ({c_wall / n * 1e6:6.0f} us/file, "
          f"exit {c_rc}: {c_out.strip().splitlines()[-1][:60]})")
    print(f"    ratio check-jsonschema / atlas: {c_wall / a_wall:.2f}x "
          "(target >= 3: atlas at least 3x faster per file)")


def version_bytes(name: str, version: int) -> bytes:
    body = (f"# {name} v{version}\n\nWhat changed in this version, in a paragraph or two of "
            f"plain text, as a handoff would say it.\n\n## Next\n\n- step {version}\n").encode()
    meta = {
        "name": name, "version": version, "based_on": version - 1, "author": "ann",
        "written_at": "2026-01-31T12:00:00.000000Z", "summary": f"{name} v{version}",
        "digest": frontmatter.digest_of(body),
    }
    return frontmatter.render(meta, body)


def big_record(base: Path, versions: int, decisions: int) -> Record:
    record = Record.init(base / "big", ["web", "ml"])
    per_topic = 100
    topics = max(1, versions // per_topic)
    written = 0
    for t in range(topics):
        project = "web" if t % 2 == 0 else "ml"
        name = f"topic-{t:05d}"
        folder = record.root / "projects" / project / "artifacts" / name
        folder.mkdir(parents=True)
        for v in range(1, per_topic + 1):
            if written == versions:
                break
            path = folder / f"{name}.v{v:04d}.md"
            path.write_bytes(version_bytes(name, v))
            os.chmod(path, 0o444)
            written += 1
    folder = record.root / "projects" / "web" / "decisions"
    for i in range(decisions):
        entry_id = f"dec-20260131t{i // 1000000:06d}{i % 1000000:06d}z-{i:08x}"
        meta = {
            "id": entry_id, "kind": "decision", "at": "2026-01-31T12:00:00.000000Z",
            "author": "ann", "project": "web", "topic": f"decision {i}",
            "recommended": "A", "chosen": "A", "relation": "agreed", "why": "it fits",
            "links": [f"topic-{(i * 2) % topics:05d}@v1"],
        }
        meta["digest"] = entries.digest_of_entry(meta, b"")
        (folder / f"{entry_id}.md").write_bytes(frontmatter.render(meta, b""))
    return record


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def bench_big(base: Path, versions: int, decisions: int) -> None:
    t0 = time.perf_counter()
    record = big_record(base, versions, decisions)
    made = time.perf_counter() - t0
    total = versions + decisions
    print(f"[2] a record of {versions} version files + {decisions} decisions "
          f"(written in {made:.1f} s)")
    f_wall, f_rss, _, _ = measure_rss([sys.executable, "-c", FLOOR, str(record.root)])
    a_wall, a_rss, a_rc, a_out = measure_rss(ATLAS + ["--record", str(record.root), "check"])
    last = a_out.strip().splitlines()[-1] if a_out.strip() else ""
    print(f"    atlas check:             {a_wall:7.2f} s  peak {a_rss:6.1f} MB  "
          f"({a_wall / total * 1e6:.0f} us/file; exit {a_rc}: {last})")
    print(f"    floor (read every file): {f_wall:7.2f} s  peak {f_rss:6.1f} MB")
    print(f"    ratio atlas / floor: {a_wall / f_wall:.1f}x; targets: <= 20 s, <= 300 MB")

    repo = record.root
    t0 = time.perf_counter()
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=b@example.invalid", "-c", "user.name=bench", "commit", "-q",
        "-m", "big record")
    print(f"[3] the pre-commit path: one new version in that record, in git "
          f"(committed in {time.perf_counter() - t0:.1f} s)")
    folder = repo / "projects" / "web" / "artifacts" / "topic-00000"
    latest = max(int(p.name.split(".v")[1][:4]) for p in folder.glob("*.v*.md"))
    new = folder / f"topic-00000.v{latest + 1:04d}.md"
    new.write_bytes(version_bytes("topic-00000", latest + 1))
    git(repo, "add", str(new))
    g_best = s_best = float("inf")
    s_rc, s_out = 0, ""
    for _ in range(3):  # best of three: the first run also warms git's index cache
        g_wall, _, _, _ = measure(["git", "diff", "--cached", "--name-status", "-M"], repo)
        s_wall, _, s_rc, s_out = measure(ATLAS + ["check", "--staged"], repo)
        g_best, s_best = min(g_best, g_wall), min(s_best, s_wall)
    last = s_out.strip().splitlines()[-1] if s_out.strip() else ""
    p_best = min(measure([sys.executable, "-c", "pass"])[0] for _ in range(3))
    print(f"    atlas check --staged:    {s_best:7.3f} s  (exit {s_rc}: {last})")
    print(f"    git diff --cached:       {g_best:7.3f} s")
    print(f"    python startup alone:    {p_best:7.3f} s")
    print(f"    ratio staged / full check: {s_best / a_wall:.3f}; target <= 0.5 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="fraction of the full sizes (1.0: 10k rows, 100k versions, 10k "
                        "decisions)")
    parser.add_argument("--keep", metavar="DIR", help="build in DIR and keep it")
    args = parser.parse_args()
    rows = max(10, int(10_000 * args.scale))
    versions = max(100, int(100_000 * args.scale))
    decisions = max(10, int(10_000 * args.scale))
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="atlas-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        bench_schema(base, rows)
        bench_big(base, versions, decisions)
    finally:
        if not args.keep:
            for folder, _, files in os.walk(base):
                for f in files:
                    os.chmod(os.path.join(folder, f), 0o644)
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
