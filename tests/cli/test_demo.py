"""`atlas demo` exactly as the README's first line runs it: no arguments, from a fresh
folder; and run again, it replaces its own earlier demo but nothing else."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from support.runner import run_atlas


def test_the_demo_as_a_newcomer_runs_it(tmp_path: Path) -> None:
    started = datetime.now(UTC).replace(microsecond=0)
    r = run_atlas("demo", cwd=tmp_path, timeout=600)
    ended = datetime.now(UTC)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Traceback" not in out + r.stderr
    assert "error: no record" not in out, "every scene must find the demo record"
    # Several identities, the stop sign, a lease refusal, the checks and the site.
    for expected in ("alice", "bob", "carol", "-> exit 3", "-> exit 4", "ATL003",
                     "ATL005", "open "):
        assert expected in out, expected
    site = out.strip().splitlines()[-1].split("open ", 1)[1]
    assert Path(site).is_file() and site.endswith("index.html")
    record = tmp_path / "atlas-demo" / "record"
    assert run_atlas("check", record=record).returncode == 0
    # What a newcomer sees is what a real record looks like: every write dated when the
    # demo made it (a fixed date read "304 days ago" and sorted the newest write last).
    for project in ("web", "ml"):
        listed = json.loads(run_atlas("-p", project, "ls", "--json", record=record).stdout)
        for topic in listed["topics"]:
            written = datetime.fromisoformat(topic["written_at"].replace("Z", "+00:00"))
            assert started - timedelta(seconds=1) <= written <= ended, topic
    again = run_atlas("demo", cwd=tmp_path, timeout=600)
    assert again.returncode == 0, again.stderr


def test_the_demo_never_replaces_a_folder_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "atlas-demo").mkdir()
    (tmp_path / "atlas-demo" / "notes.txt").write_text("mine\n")
    r = run_atlas("demo", cwd=tmp_path)
    assert r.returncode == 2 and "refusing" in r.stderr
    assert (tmp_path / "atlas-demo" / "notes.txt").read_text() == "mine\n"
