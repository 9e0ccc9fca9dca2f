"""8 writers and 8 searchers, real processes, for about 10 s: no error, and no result names
a version or entry that does not exist. One searcher deletes the index now and then, so
rebuilds race the others too."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings

import pytest
from support.runner import child_env

from atlas_files.facts.errors import AtlasWarning
from atlas_files.search import search, store
from atlas_files.storage.record import Record

SECONDS = 10.0

WRITER = r"""
import os, sys, time
from atlas_files.protocol import artifacts, decisions, corrections
from atlas_files.facts.errors import VersionConflict
from atlas_files.storage.record import Record
root, who, seconds, go = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
record = Record(root)
while not os.path.exists(go):
    time.sleep(0.001)
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    n += 1
    artifacts.put(record, f"own-{who}", f"kestrel {who} {n}\n", author=who, expect=n - 1)
    if n % 3 == 0:
        stream = record.artifact_stream("shared")
        try:
            artifacts.put(record, "shared", f"kestrel shared by {who} {n}\n", author=who,
                       expect=stream.latest())
        except VersionConflict:
            pass
    if n % 5 == 0:
        d = decisions.decide(record, topic=f"kestrel {who}", recommended="a", chosen="b",
                             relation="agreed", why=f"kestrel why {n}", author=who)
        corrections.correct(record, d.id, what=f"kestrel fix {n}", author=who)
print(n)
"""

SEARCHER = r"""
import os, random, sys, time, warnings
from atlas_files.facts.errors import AtlasWarning
from atlas_files.storage.record import Record
from atlas_files.search import search
root, me, seconds, go = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
warnings.simplefilter("error", AtlasWarning)  # a fallback to a scan would be a failure
record = Record(root)
rng = random.Random(me)
while not os.path.exists(go):
    time.sleep(0.001)
end = time.monotonic() + seconds
done = bad = 0
index = os.path.join(root, ".atlas-cache", "search.sqlite")
while time.monotonic() < end:
    if me == 0 and done % 15 == 14:
        try:
            os.unlink(index)
        except FileNotFoundError:
            pass
    doc = search(record, rng.choice(["kestrel", "kestrel shared", "why", "fix", "kest*"]),
                 all_versions=rng.random() < 0.5, limit=rng.choice([5, 50, 1000]))
    for r in doc["results"]:
        if r["version"] is not None:
            name = r["name"]
            folder = "status" if name == "status" else f"artifacts/{name}"
            path = os.path.join(root, "projects", r["project"], folder,
                                f"{name}.v{r['version']:04d}.md")
        else:
            sub = "decisions" if r["id"].startswith("dec-") else "corrections"
            path = os.path.join(root, "projects", r["project"], sub, r["id"] + ".md")
        if not os.path.isfile(path):
            bad += 1
            print("MISSING", r["id"], path, flush=True)
    done += 1
print("searches", done, "missing", bad)
"""


def test_eight_writers_and_eight_searchers(record: Record) -> None:
    go = record.root.parent / "go"
    env = child_env()
    root = str(record.root)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, root, f"w{n}", str(SECONDS),
                               str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env) for n in range(8)]
    procs += [subprocess.Popen([sys.executable, "-c", SEARCHER, root, str(n), str(SECONDS),
                                str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env) for n in range(8)]
    time.sleep(1.0)  # let every process reach the start line
    go.touch()
    outputs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-3000:]
        outputs.append(out.decode())
    written = sum(int(o.split()[-1]) for o in outputs[:8])
    searched = [o.split("\n")[-2] for o in outputs[8:]]
    assert written >= 8, outputs[:8]
    assert all(line.startswith("searches ") and line.endswith(" missing 0")
               for line in searched), searched
    assert sum(int(line.split()[1]) for line in searched) >= 16

    # Afterwards the index agrees with a scan of every file: nothing lost, nothing extra.
    indexed = {r["id"] for r in search(record, "kestrel", all_versions=True,
                                       limit=1000)["results"]}
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        mp.setattr(store, "has_fts5", lambda: False)
        warnings.simplefilter("ignore", AtlasWarning)
        scanned = {r["id"] for r in search(record, "kestrel", all_versions=True,
                                           limit=1000)["results"]}
    assert indexed == scanned and len(indexed) > 8
    print(f"{written} versions written, searches: {searched}")
