"""Every file name atlas makes, committed as a link out of the record (issue 39).

Threat model: a teammate who can push to the record's remote commits anything git can
hold, `git add -f` past the record's .gitignore included: a symbolic link at any name
atlas itself reads or writes in a work tree (its caches, stamps, journals, locks, live
rows, hints, indexes, versions). `git clone` checks the link out as it is, and a
newcomer's first commands run on that checkout before any sync has judged it.

The generator learns the names instead of listing them: a normal flow (init, sync with a
local bare remote, put, get, ls, feed, begin, search, the news hook, end, check, sync)
runs on a clone, and every file and folder it leaves in the work tree (and the few that
live only while a sync runs) is a name. For each one, a link is committed there pointing
outside: at a file in a temp "home" folder, at /dev/zero, at a path that does not exist
(its folder does), at a named pipe; a folder's name points at the home folder itself.
A fresh clone then runs sync (not yet accepted, then accepted), put, get, ls, feed,
begin, search, the news hook, end and check, each a child process under an address-space
cap and a wall-clock limit. Every run must exit 0-4 with no traceback, within its bounds,
and leave every file of the home folder (bytes and times) as it was, with nothing added.

``ATLAS_LINK_TARGETS=all`` commits each name once per kind of target (four times as many
cases); by default each name gets one kind, taken in turn.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.git import git, isolate_git
from support.runner import atlas_command

from atlas_files.facts import layout

MEMORY = 1 << 30  # bytes of address space a command (and each git child) may take
SECONDS = 60.0  # wall-clock limit of one command
ME = "alice"  # the identity of both machines: the names of her rows are the ones planted
# Names that exist only while a command runs, so no listing after the flow sees them:
# a sync's marker and move journal, SQLite's journal beside the search index.
TRANSIENT = [f"{layout.CACHE}/sync/running", f"{layout.CACHE}/sync/journal.json",
             f"{layout.CACHE}/search.sqlite-journal"]
SYNC_BLOCK = "sync:\n  remote: origin\n  branch: main\n  auto: true\n  fetch_every: 0s\n"
TARGETS = ("file", "zero", "missing", "fifo")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATLAS_", "GIT_"))}
    env.update(isolate_git(home))
    env.update(XDG_CACHE_HOME=str(home / ".cache"), ATLAS_AS=ME)
    return env


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def atlas(root: Path, env: dict[str, str], *args: str,
          stdin: str = "") -> subprocess.CompletedProcess[str] | None:
    """`atlas ARGS` in ``root`` as a child under the bounds; None if it ran past SECONDS."""
    try:
        return subprocess.run(atlas_command(*args), cwd=root, env=env, input=stdin,
                              capture_output=True, text=True, timeout=SECONDS,
                              preexec_fn=_limits, check=False)
    except subprocess.TimeoutExpired:
        return None


def flow(root: Path, env: dict[str, str]) -> list[tuple[list[str], str]]:
    """The commands of a normal session, with their stdin: the flow the names are learned
    from, and what the newcomer runs on the planted clone."""
    hook = json.dumps({"session_id": "s-1", "transcript_path": None, "cwd": str(root),
                       "hook_event_name": "PostToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "tool_use_id": "t-1",
                       "tool_response": {}})
    return [(["sync"], ""), (["put", "plan", "-f", "-", "--summary", "the plan"], "a plan\n"),
            (["get", "plan"], ""), (["ls"], ""), (["feed"], ""), (["begin"], ""),
            (["search", "plan"], ""), (["news", "--hook", "claude"], hook),
            (["end", "--status", "where things stand"], ""), (["check"], ""), (["sync"], "")]


class Base:
    """The remote after the learning flow, and the names that flow made."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = _env(root / "home-alice")
        self.remote = root / "remote.git"
        git(root, "init", "-q", "--bare", "-b", "main", str(self.remote), env=self.env)
        first = root / "first"
        git(root, "clone", "-q", str(self.remote), str(first), env=self.env)
        for args in (["init"], ["sync", "accept", "--yes"]):
            if args == ["sync", "accept", "--yes"]:
                with open(first / layout.CONFIG_NAME, "a", encoding="utf-8") as fh:
                    fh.write(SYNC_BLOCK)
            done = atlas(first, self.env, *args)
            assert done is not None and done.returncode == 0, done
        for args, stdin in flow(first, self.env):
            done = atlas(first, self.env, *args, stdin=stdin)
            assert done is not None and done.returncode in (0, 1), (args, done)
        self.files, self.folders = learn(first)


def learn(root: Path) -> tuple[list[str], list[str]]:
    """Every file and folder under ``root`` but git's own, relative to it."""
    files: set[str] = set(TRANSIENT)
    folders: set[str] = set()
    for here, dirs, names in os.walk(root):
        rel = os.path.relpath(here, root)
        dirs[:] = [d for d in dirs if not (rel == "." and d == ".git")]
        for d in dirs:
            folders.add(os.path.normpath(os.path.join(rel, d)))
        for n in names:
            files.add(os.path.normpath(os.path.join(rel, n)))
    return sorted(files), sorted(folders)


class Outside:
    """The folder no command may change: a file, a named pipe, and room for a new file."""

    def __init__(self, where: Path) -> None:
        self.where = where
        where.mkdir(parents=True)
        (where / "bashrc").write_text("export PATH=$HOME/bin:$PATH\n")
        (where / "gone").mkdir()
        os.mkfifo(where / "fifo")
        os.utime(where / "bashrc", (1_000_000_000, 1_000_000_000))

    def target(self, kind: str) -> str:
        return {"file": str(self.where / "bashrc"), "zero": "/dev/zero",
                "missing": str(self.where / "gone" / "made"),
                "fifo": str(self.where / "fifo"), "folder": str(self.where)}[kind]

    def snapshot(self) -> dict[str, tuple[int, int, int, bytes]]:
        """Every entry's mode, size and times, and a plain file's bytes (a pipe is never
        opened)."""
        seen = {}
        for here, _, names in os.walk(self.where):
            for name in [".", *names]:
                path = os.path.join(here, name)
                st = os.lstat(path)
                data = Path(path).read_bytes() if os.path.isfile(path) \
                    and not os.path.islink(path) else b""
                seen[os.path.normpath(path)] = (st.st_mode, st.st_size, st.st_mtime_ns, data)
        return seen


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Base]:
    yield Base(tmp_path_factory.mktemp("links"))


def cases(base: Base) -> list[tuple[str, str]]:
    every = os.environ.get("ATLAS_LINK_TARGETS") == "all"
    found = [(name, kind) for i, name in enumerate(base.files)
             for kind in (TARGETS if every else [TARGETS[i % len(TARGETS)]])]
    found += [(name, "folder") for name in base.folders]
    only = os.environ.get("ATLAS_LINK_ONLY")  # a substring of the names to try, to hunt one
    return [(n, k) for n, k in found if only is None or only in n]


def plant(base: Base, case: Path, name: str, target: str) -> Path:
    """A remote like the base one whose head commits a link at ``name`` to ``target``;
    returns the newcomer's fresh clone of it."""
    remote = case / "remote.git"
    git(case, "clone", "-q", "--bare", str(base.remote), str(remote), env=base.env)
    mallory = case / "mallory"
    git(case, "clone", "-q", str(remote), str(mallory), env=base.env)
    path = mallory / name
    git(mallory, "rm", "-r", "-q", "--ignore-unmatch", "--", name, env=base.env)
    if os.path.lexists(path) and not os.path.isdir(path):
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    git(mallory, "add", "-f", "--", name, env=base.env)
    git(mallory, "commit", "-q", "--no-verify", "-m", f"a link at {name}", env=base.env)
    git(mallory, "push", "-q", "origin", "main", env=base.env)
    newcomer = case / "newcomer"
    git(case, "clone", "-q", str(remote), str(newcomer), env=base.env)
    return newcomer


def problems(base: Base, case: Path, name: str, kind: str) -> list[str]:
    """What the newcomer's commands did on a clone with a link at ``name``."""
    outside = Outside(case / "outside")
    newcomer = plant(base, case, name, outside.target(kind))
    env = _env(case / "home-newcomer")
    before = outside.snapshot()
    found = []
    steps = [(["sync"], "")] + flow(newcomer, env)[1:-1] + [
        (["sync", "accept", "--yes"], ""), (["sync"], "")]
    for args, stdin in steps:
        done = atlas(newcomer, env, *args, stdin=stdin)
        where = f"{name} -> {kind}: atlas {' '.join(args)}"
        if done is None:
            found.append(f"{where}: ran past {SECONDS} s")
            continue
        if done.returncode not in (0, 1, 2, 3, 4):
            found.append(f"{where}: exit {done.returncode}: {done.stderr[-600:]}")
        if "Traceback" in done.stderr or "MemoryError" in done.stderr:
            found.append(f"{where}: {done.stderr[-600:]}")
        if done.returncode and "atlas:" not in done.stderr and args[0] != "check":
            found.append(f"{where}: exit {done.returncode} without a message")
        after = outside.snapshot()
        if after != before:
            changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
            found.append(f"{where}: changed outside: {changed}")
            before = after
    return found


def test_no_link_at_a_name_atlas_makes_reaches_outside(base: Base,
                                                        tmp_path: Path) -> None:
    assert f"{layout.CACHE}/sync/git-version" in base.files  # the flow learned its names
    assert f"{layout.SESSIONS}/.{ME}.news" in base.files
    # Each case is child processes in folders of its own: run a few side by side.
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        runs = pool.map(lambda c: problems(base, tmp_path / f"case{c[0]}", *c[1]),
                        enumerate(cases(base)))
        found = [line for lines in runs for line in lines]
    assert found == [], "\n".join(found)


def test_the_watch_sees_a_write_outside(tmp_path: Path) -> None:
    """The check itself: a change in the outside folder, a command past its memory cap
    and a traceback are each seen."""
    outside = Outside(tmp_path / "outside")
    before = outside.snapshot()
    (outside.where / "gone" / "made").write_text("x")
    assert outside.snapshot() != before
    env = _env(tmp_path / "home")
    hog = subprocess.run([sys.executable, "-c", "b = bytearray(2 << 30)"], env=env,
                         preexec_fn=_limits, capture_output=True, text=True, check=False)
    assert hog.returncode != 0 and "MemoryError" in hog.stderr
