"""`atlas demo` exactly as the README's first line runs it: no arguments, from a fresh
folder; and run again, it replaces its own earlier demo but nothing else."""

from __future__ import annotations

from pathlib import Path

from conftest import run_atlas


def test_the_demo_as_a_newcomer_runs_it(tmp_path: Path) -> None:
    r = run_atlas("demo", cwd=tmp_path, timeout=600)
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
    again = run_atlas("demo", cwd=tmp_path, timeout=600)
    assert again.returncode == 0, again.stderr


def test_the_demo_never_replaces_a_folder_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "atlas-demo").mkdir()
    (tmp_path / "atlas-demo" / "notes.txt").write_text("mine\n")
    r = run_atlas("demo", cwd=tmp_path)
    assert r.returncode == 2 and "refusing" in r.stderr
    assert (tmp_path / "atlas-demo" / "notes.txt").read_text() == "mine\n"
