"""Path leases and repository activity. Run: python bench/bench_paths.py [--rounds 7]

1. The commit guard (`atlas lease guard --staged`, the atlas-leases hook) on a commit of
   100 files against 1,000 unexpired path leases of another identity (a third each on a
   folder, a file and a `**` glob, the commit's files next to them but not covered, so
   every file is tried against the leases around it and the commit passes), against the
   floor it cannot go below: `git diff --cached --name-only` plus
   `python -c "import click, yaml"`, side by side. Target: <= 2x.
2. `atlas activity` on a repository of 10,000 commits on two branches, all within the last
   24 hours, against `git log --all --since=24.hours --name-only` on the same repository.
   Target: <= 2x. `--paths` on one file is shown beside it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import atlas_argv, clean_env, interleaved

from atlas_files.protocol import leases
from atlas_files.storage.record import Record

LEASES = 1000
FILES = 100
COMMITS = 10_000


def _git(repo: Path, *args: str, data: bytes | None = None) -> None:
    subprocess.run(["git", *args], cwd=repo, input=data, check=True,
                   stdout=subprocess.DEVNULL, env=_git_env())


def _git_env() -> dict[str, str]:
    env = clean_env()
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.invalid",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.invalid")
    return env


def guard_setup(root: Path) -> Path:
    """A record with LEASES path leases held by bob, and a repository below it whose
    index stages FILES new files; returns the repository."""
    record = Record.init(root)
    for i in range(LEASES):
        glob = (f"pkg{i}/", f"pkg{i}/mod.py", f"pkg{i}/**/*.py")[i % 3]
        leases.claim(record, f"repo.pkg{i}", holder="bob", duration_s=3600, why="bench",
                     paths=[glob])
    repo = root / "code"
    repo.mkdir()
    _git(repo, "init", "-q")
    added = 0
    i = 0
    while added < FILES:
        i += 1
        if i % 3 == 0:
            continue  # a folder lease would cover anything in it
        folder = repo / f"pkg{i}"
        folder.mkdir()
        (folder / "notes.txt").write_text("not covered by a lease\n")
        added += 1
    _git(repo, "add", "-A")
    return repo


def bench_guard(root: Path, rounds: int) -> None:
    repo = guard_setup(root / "guard")
    env = {**_git_env(), "ATLAS_AS": "alice"}
    commands: dict[str, Sequence[str]] = {
        "guard": [*atlas_argv(), "lease", "guard", "--staged", "--repo", str(repo)],
        "git diff": ["git", "-C", str(repo), "diff", "--cached", "--name-only"],
        "import floor": [sys.executable, "-c", "import click, yaml"],
    }
    t = interleaved(commands, rounds, env)
    floor = t["git diff"] + t["import floor"]
    print(f"guard, {FILES} files vs {LEASES} leases: {t['guard'] * 1000:.0f} ms; git diff "
          f"{t['git diff'] * 1000:.0f} ms + click+yaml import {t['import floor'] * 1000:.0f} "
          f"ms = {floor * 1000:.0f} ms; ratio {t['guard'] / floor:.2f} (target <= 2; "
          f"median of {rounds})")


def activity_setup(root: Path) -> Path:
    """COMMITS commits on two branches, one every few seconds over the last 20 hours,
    each touching one to three of 500 files; written with git fast-import."""
    repo = root / "activity"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    now = int(time.time())
    start = now - 20 * 3600
    step = (20 * 3600) // COMMITS
    lines: list[bytes] = []
    for n in range(COMMITS):
        branch = "main" if n % 2 == 0 else "side"
        when = start + n * step
        files = [f"src/m{(n * k) % 500}.py" for k in (1, 7, 13)[: 1 + n % 3]]
        message = f"change {n}".encode()
        lines.append(f"commit refs/heads/{branch}\nmark :{n + 1}\n".encode())
        lines.append(f"committer bench{n % 5} <b{n % 5}@example.invalid> {when} +0000\n"
                     .encode())
        lines.append(b"data %d\n%s\n" % (len(message), message))
        if n >= 2:
            lines.append(f"from :{n - 1}\n".encode())
        for f in files:
            body = f"{n}\n".encode()
            lines.append(b"M 644 inline %s\ndata %d\n%s\n" % (f.encode(), len(body), body))
    _git(repo, "fast-import", "--quiet", data=b"".join(lines))
    return repo


def bench_activity(root: Path, rounds: int) -> None:
    repo = activity_setup(root)
    env = _git_env()
    commands: dict[str, Sequence[str]] = {
        "atlas activity": [*atlas_argv(), "activity", "--repo", str(repo), "--json"],
        "atlas activity --paths": [*atlas_argv(), "activity", "--repo", str(repo),
                                   "--paths", "src/m7.py"],
        "git log": ["git", "-C", str(repo), "log", "--all", "--since=24.hours",
                    "--name-only"],
    }
    t = interleaved(commands, rounds, env)
    base = t["git log"]
    print(f"activity, {COMMITS:,} commits: atlas activity --json "
          f"{t['atlas activity'] * 1000:.0f} ms, with --paths "
          f"{t['atlas activity --paths'] * 1000:.0f} ms; git log "
          f"{base * 1000:.0f} ms; ratio {t['atlas activity'] / base:.2f} "
          f"({t['atlas activity --paths'] / base:.2f} with --paths; target <= 2; median of "
          f"{rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_guard(Path(tmp), args.rounds)
        bench_activity(Path(tmp), args.rounds)


if __name__ == "__main__":
    main()
