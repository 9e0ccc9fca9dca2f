"""The shared remote as an adversary writes it, against every command that reads what a
sync brings in.

Threat model: anyone who can push to the record's remote writes any tree git can carry
(names git's own commands refuse to make included, since a push is not fsck'ed by
default), and every clone's next sync, synced write and read takes it in. A generator
(hypothesis) builds such trees from the pieces an attacker has: git folders committed as
plain files with hooks, .gitattributes naming filter, merge and diff programs, .gitmodules
and submodules pointing at the network, symbolic links out of the record, atlas.yaml
variations (another remote, a path or a URL as the remote, limits, probes, aliases, bytes
that are not UTF-8), huge and odd files, names that collide by case, paths with `..` and
`.git`, and files posing as the clone's own state. Each is pushed to a real bare remote;
a victim's clone (a person who accepted the team's sync settings, and whose own git
config defines filter, merge and diff programs, as git-lfs does) then runs `atlas sync`,
a synced `atlas put`, `atlas begin`, `atlas check`, `atlas search` and `atlas ls` (and in
a second, smaller run `atlas site build`), each a child process under strace.

Every run must: exit 0-4 without a traceback; start no program but Python, git and git's
own helpers (every execve is read from strace); connect to no network address (every
connect, and a listener on 127.0.0.1 that the hostile URLs name); leave every file outside
the clone as it was, and the clone's own git config and hooks unchanged; run no hook,
filter or driver (each writes a marker); stay under MEMORY_BOUND of resident memory
(the whole process tree's peak, from wait4) and TIME_BOUND_S of wall time.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from support.git import git
from support.gitteam import Team
from support.hostile_repo import Listener
from support.memory import bound_kb, own_peak_kb
from support.runner import atlas_command, child_env

pytestmark = pytest.mark.usefixtures("isolated_git")

STRACE = shutil.which("strace")
if STRACE is None and not os.environ.get("ATLAS_REQUIRE_STRACE"):
    pytest.skip("strace is not installed: the adversarial sync suite reads every program "
                "started and every connection made from it (apt-get install strace; CI "
                "sets ATLAS_REQUIRE_STRACE and installs it)", allow_module_level=True)

# Generated cases per run, each pushed and read by every command (ATLAS_ADVERSARIAL_CASES
# raises it for a longer hunt).
CASES = int(os.environ.get("ATLAS_ADVERSARIAL_CASES", "12"))
SITE_CASES = max(2, CASES // 6)
MEMORY_BOUND = 400 << 20  # peak resident memory of one command's whole process tree
TIME_BOUND_S = 90.0  # wall time of one command
BIG = 6 << 20  # the largest file the generator pushes
COMMANDS = [["sync", "--json"], ["put", "adversary", "-f", "BODY"], ["begin", "--json"],
            ["check", "--json"], ["search", "plan", "--json"], ["ls", "--json"]]
SITE_COMMANDS = [["sync"], ["site", "build", "--out", "SITE", "--json"]]


# -- what the generator builds: entries of a tree -------------------------------------------

@dataclass(frozen=True)
class Entry:
    path: tuple[str, ...]  # the names, as git stores them (any but '/' and NUL)
    mode: str  # 100644, 100755, 120000 (a symlink: data is its target), 160000
    data: bytes

    def __repr__(self) -> str:  # a falsifying case shows its start, not megabytes
        data = self.data if len(self.data) <= 200 else \
            self.data[:200] + f"... ({len(self.data)} bytes)".encode()
        return f"Entry({'/'.join(self.path)!r}, {self.mode}, {data!r})"


@dataclass
class World:
    """What the generator's strategies need to know of the case's folders."""

    marker: Path
    outside: Path
    victim: Path
    port: int


def _hook(world: World, name: str) -> bytes:
    return f"#!/bin/sh\ntouch '{world.marker}/{name}'\n".encode()


SEGMENTS = st.sampled_from([
    "projects", "main", "artifacts", "plan", "hub", "hooks", "Plan", "PLAN", ".git", ".GIT",
    ".git.", "git~1", "..", "HEAD", "head", "objects", "refs", ".gitattributes",
    ".gitmodules", "receipts", "telemetry", ".atlas-cache", ".atlas-drafts", "leases",
    "gpu0", "README.md", "readme.md", "atlas.yaml", "Atlas.yaml", "é", "e\u0301", "a b",
    ".atlas-tmp-x", "x.lock", "plan.v0001.md", "plan.v1.md", "-rf", "$(touch x)",
]) | st.text(alphabet=st.characters(codec="utf-8", exclude_characters="/\0"),
             min_size=1, max_size=12)
PATHS = st.lists(SEGMENTS, min_size=1, max_size=5).map(tuple)


@st.composite
def git_folder(draw: st.DrawFn, world: World) -> list[Entry]:
    """A repository committed as plain files: bare, or a `.git` folder inside a folder."""
    at = draw(st.sampled_from([("hub",), ("projects", "main", "hub"), ("x",), ()]))
    inner = at + ((".git",) if draw(st.booleans()) or not at else ())
    config = (b"[core]\n\trepositoryformatversion = 0\n\tbare = " +
              (b"true" if inner == at else b"false") +
              f"\n\tfsmonitor = touch '{world.marker}/fsmonitor'\n"
              f"\thooksPath = hooks\n".encode())
    entries = [Entry(inner + ("HEAD",), "100644", b"ref: refs/heads/main\n"),
               Entry(inner + ("config",), "100644", config),
               Entry(inner + ("objects", ".keep"), "100644", b""),
               Entry(inner + ("refs", "heads", ".keep"), "100644", b"")]
    for name in draw(st.lists(st.sampled_from(
            ["pre-receive", "update", "post-receive", "post-update", "post-checkout",
             "post-merge", "pre-commit", "post-commit", "reference-transaction",
             "pre-push", "fsmonitor-watchman"]), min_size=1, max_size=4, unique=True)):
        entries.append(Entry(inner + ("hooks", name), "100755", _hook(world, name)))
    if bool(at) and draw(st.booleans()):
        # The whole attack: atlas.yaml's sync.remote names the folder, as a path git
        # would take a name it does not know for.
        remote = "/".join(at).encode()
        base = (world.victim / "atlas.yaml").read_bytes()
        entries.append(Entry(("atlas.yaml",), "100644",
                             base.replace(b"remote: origin", b"remote: " + remote)))
    return entries


@st.composite
def attributes(draw: st.DrawFn, world: World) -> list[Entry]:
    lines = draw(st.lists(st.sampled_from(
        ["* filter=evil", "* merge=evil", "* diff=evil", "* ident", "* text eol=crlf",
         "* working-tree-encoding=UTF-16", "* filter=lfs diff=lfs merge=lfs -text",
         "*.md filter=evil", "[attr]evil filter=evil merge=evil"]), min_size=1, max_size=4))
    at = draw(st.sampled_from([(), ("projects",), ("projects", "main", "artifacts", "plan")]))
    # A file beside it for the attributes to act on when it is checked out.
    return [Entry(at + (".gitattributes",), "100644", "\n".join(lines).encode() + b"\n"),
            Entry(("projects", "main", "artifacts", "plan", "plan.v0001.md"), "100644",
                  b"---\nname: plan\nversion: 1\n---\nfiltered\n")]


@st.composite
def submodule(draw: st.DrawFn, world: World) -> list[Entry]:
    url = draw(st.sampled_from([f"http://127.0.0.1:{world.port}/x.git",
                                f"git://127.0.0.1:{world.port}/x", str(world.outside),
                                "../../outside", "-u./payload"]))
    path = draw(st.sampled_from(["x", "projects/main/artifacts/plan", ".git/modules"]))
    text = f'[submodule "x"]\n\tpath = {path}\n\turl = {url}\n\tupdate = !touch x\n'
    entries = [Entry((".gitmodules",), "100644", text.encode())]
    if draw(st.booleans()):
        entries.append(Entry(tuple(path.split("/")), "160000", b"1" * 40))
    return entries


@st.composite
def symlink(draw: st.DrawFn, world: World) -> list[Entry]:
    target = draw(st.sampled_from([
        str(world.outside), str(world.outside / "secret.txt"),
        os.path.relpath(world.outside, world.victim / "projects" / "main" / "artifacts"),
        "../../../../..", ".", "..", "projects", "/proc/self/fd/0"]))
    at = draw(st.sampled_from([
        ("projects", "main", "artifacts", "plan"),
        ("projects", "main", "artifacts", "plan", "plan.v0001.md"),
        ("leases", "gpu0"), ("receipts",), (".atlas-drafts",), ("atlas.yaml",),
        ("README.md",), ("projects", "main", "decisions")]))
    return [Entry(at, "120000", target.encode())]


def _config(world: World, draw: st.DrawFn) -> bytes:
    """A variation of the team's atlas.yaml."""
    base = (world.victim / "atlas.yaml").read_bytes()
    kind = draw(st.sampled_from(["remote", "branch", "limits", "projects", "probe",
                                 "engine", "alias", "not-a-mapping", "not-utf8", "huge",
                                 "unknown-key"]))
    note(f"atlas.yaml variation: {kind}")
    if kind == "remote":
        remote = draw(st.sampled_from([
            "hub", "../remote.git", f"http://127.0.0.1:{world.port}/r.git",
            f"git://127.0.0.1:{world.port}/r", "backup", "-upload-pack=touch x", "origin/x",
            str(world.outside)]))
        return base.replace(b"remote: origin", b"remote: '" + remote.encode() + b"'")
    if kind == "branch":
        branch = draw(st.sampled_from(["x", "refs/heads/main", "main.lock", "a..b", "HEAD"]))
        return base.replace(b"branch: main", b"branch: '" + branch.encode() + b"'")
    if kind == "limits":
        value = draw(st.sampled_from([b"1", b"50", b"1099511627776", b"-1", b"true"]))
        return base.replace(b"body_limit: 1048576", b"body_limit: " + value)
    if kind == "projects":
        added: bytes = draw(st.sampled_from(
            [b"- main\n- ml\n", b"- main\n- ../x\n", b"- main\n- 1\n"]))
        return base.replace(b"- main\n", added, 1)
    if kind == "probe":
        return base.replace(b"machines: {}", f"machines:\n  box:\n    probe: touch "
                            f"'{world.marker}/probe'\n".encode())
    if kind == "engine":
        return base + draw(st.sampled_from([b"site:\n  engine: zensical\n",
                                            b"site:\n  engine: evil\n"]))
    if kind == "alias":
        return base + b"x: &a [&b [1,2,3,4,5,6,7,8,9]]\ny: [*a,*a,*a,*a,*a,*a,*a,*a]\n"
    if kind == "not-a-mapping":
        return b"[1, 2, 3]\n"
    if kind == "not-utf8":
        return base + b"# \xff\xfe\n"
    if kind == "huge":
        return base + b"# " + b"x" * (2 << 20) + b"\n"
    return base + b"hooks: {post-sync: touch x}\n"


@st.composite
def config(draw: st.DrawFn, world: World) -> list[Entry]:
    return [Entry(("atlas.yaml",), "100644", _config(world, draw))]


@st.composite
def odd_file(draw: st.DrawFn, world: World) -> list[Entry]:
    """A file under a name a sync may well let in, with content made to hurt a reader."""
    at = draw(st.sampled_from([
        ("projects", "main", "artifacts", "plan", "plan.v0001.md"),
        ("projects", "main", "artifacts", "big", "big.v0001.md"),
        ("projects", "main", "status", "status.v0001.md"),
        ("projects", "main", "decisions", "dec-20260101t000000000000z-00000000.md"),
        ("leases", "gpu0", "g00000001.json"), ("README.md",), (".gitignore",),
        ("notes", "n.md"), ("projects", "ml", "artifacts", "x", "x.v0001.md")]))
    size = draw(st.sampled_from([0, 100, (1 << 20) + 1, BIG]))
    body = draw(st.sampled_from([
        b"---\nname: plan\nversion: 1\nbased_on: 0\nauthor: mallory\n"
        b"written_at: 2026-01-01T00:00:00Z\nsummary: '\x1b]0;owned\x07'\n---\n",
        b"---\nname: &a plan\nversion: *a\n---\n", b"\xff\xfe\x00binary",
        b'{"holder": "mallory", "expires_at": "9999-12-31T23:59:59Z", "generation": 1}',
        b"*\n!receipts/\n", b"<script>alert(1)</script>[x](../../../../outside/secret.txt)\n"]))
    data = (body * (size // max(1, len(body)) + 1))[:size] if size else body
    return [Entry(at, draw(st.sampled_from(["100644", "100755"])), data)]


@st.composite
def any_path(draw: st.DrawFn, world: World) -> list[Entry]:
    """A file, or two whose names differ only by case or by Unicode form, anywhere."""
    path = draw(PATHS)
    entries = [Entry(path, "100644", b"x\n")]
    if draw(st.booleans()):
        last = path[-1]
        twin = last.swapcase() if last.swapcase() != last else last + "\u0301"
        entries.append(Entry(path[:-1] + (twin,), "100644", b"y\n"))
    return entries


PLAIN_SEGMENTS = st.sampled_from(["projects", "main", "artifacts", "plan", "notes", "hub",
                                  "hooks", "objects", "refs", "config", "leases", "x.md",
                                  "plan.v0002.md", "g00000002.json"])


@st.composite
def plain_path(draw: st.DrawFn, world: World) -> list[Entry]:
    """A file under a plain name, which a sync lets in: the readers then meet it."""
    path = tuple(draw(st.lists(PLAIN_SEGMENTS, min_size=1, max_size=5)))
    return [Entry(path, "100644", draw(st.sampled_from([b"x\n", b"\xff\x00", b"---\n"])))]


def plants(world: World) -> st.SearchStrategy[list[list[Entry]]]:
    """Half the cases mix every piece (and a sync refuses most of them); the other half
    hold only pieces a sync lets in, so that every reader meets them."""
    piece = st.one_of(git_folder(world), attributes(world), submodule(world),
                      symlink(world), config(world), odd_file(world), any_path(world))
    admitted = st.one_of(odd_file(world), config(world), plain_path(world))
    return st.one_of(st.lists(piece, min_size=1, max_size=4),
                     st.lists(admitted, min_size=1, max_size=4))


# -- pushing a tree git's porcelain would refuse to make ------------------------------------

def _plumb(repo: Path, env: dict[str, str], args: list[str], data: bytes) -> str:
    return git(repo, *args, env=env, input=data)


def build_tree(repo: Path, env: dict[str, str], base: str, entries: list[Entry]) -> str:
    """The tree of ``base`` with ``entries`` put in (a later entry wins a path; a file
    where a folder was replaces it), written with mktree, which checks no name."""
    listing = subprocess.run(["git", "ls-tree", "-r", "-z", base], cwd=repo,
                             capture_output=True, env=env, check=True).stdout
    tree: dict[str, Any] = {}

    def put_in(path: tuple[str, ...], item: tuple[str, str, str]) -> None:
        node = tree
        for name in path[:-1]:
            child = node.get(name)
            if not isinstance(child, dict):
                child = node[name] = {}
            node = child
        node[path[-1]] = item

    for record in listing.split(b"\0"):
        if record:
            head, _, name = record.partition(b"\t")
            mode, kind, sha = head.decode().split()
            put_in(tuple(name.decode("utf-8", "surrogateescape").split("/")),
                   (mode, kind, sha))
    for entry in entries:
        if entry.mode == "160000":
            put_in(entry.path, (entry.mode, "commit", entry.data.decode()))
        else:
            sha = _plumb(repo, env, ["hash-object", "-w", "--stdin"], entry.data)
            put_in(entry.path, (entry.mode, "blob", sha))

    def write(node: dict[str, Any]) -> str:
        lines = []
        for name, value in node.items():
            if isinstance(value, dict):
                lines.append(f"040000 tree {write(value)}\t{name}")
            else:
                lines.append(f"{value[0]} {value[1]} {value[2]}\t{name}")
        data = b"".join(line.encode("utf-8", "surrogateescape") + b"\0" for line in lines)
        return _plumb(repo, env, ["mktree", "-z", "--missing"], data)

    return write(tree)


# -- the victim's commands, each watched ----------------------------------------------------

@dataclass
class Run:
    argv: list[str]
    code: int
    stderr: str
    maxrss: int  # bytes
    seconds: float
    programs: list[tuple[str, list[str]]]
    connects: list[str]
    bound: int  # bytes: MEMORY_BOUND, or above the peak this process had when it started


_EXECVE = re.compile(r'execve\("((?:[^"\\]|\\.)*)", \[(.*?)\].*\) = 0$')
_CONNECT = re.compile(r"connect\(\d+, \{sa_family=AF_INET6?,")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def traced(prefix: Path) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """(every program started, with its arguments; every connection to a network
    address) in the logs of ``strace -ff -o PREFIX`` (one file per process, so no line is
    split between two processes)."""
    programs, connects = [], []
    for log in prefix.parent.glob(prefix.name + ".*"):
        for line in log.read_text(errors="replace").splitlines():
            m = _EXECVE.match(line)
            if m:
                programs.append((m.group(1), _STRING.findall(m.group(2))))
            elif _CONNECT.match(line):
                connects.append(line)
    return programs, connects


def strace(prefix: Path, argv: list[str]) -> list[str]:
    return [STRACE or "strace", "-ff", "-qq", "-s", "256", "-e", "trace=execve,connect",
            "-o", str(prefix), *argv]


def watched(argv: list[str], cwd: Path, env: dict[str, str], prefix: Path) -> Run:
    """``atlas ARGV`` in a child under strace, with its whole tree's peak memory."""
    start = time.monotonic()
    inherited = own_peak_kb()
    proc = subprocess.Popen(strace(prefix, atlas_command(*argv)),
                            cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    timer = threading.Timer(TIME_BOUND_S, proc.kill)
    timer.start()
    try:
        err = proc.stderr.read()
        # wait4: the child's own usage, folded with that of every child it waited for
        # (atlas, then git), so ru_maxrss is the peak of the largest in the tree.
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    programs, connects = traced(prefix)
    return Run(argv, proc.returncode, err.decode("utf-8", "replace"),
               usage.ru_maxrss * 1024, time.monotonic() - start, programs, connects,
               bound_kb(MEMORY_BOUND >> 10, inherited) << 10)


def _git_programs() -> set[str]:
    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True,
                               check=True).stdout.strip()
    return {os.path.realpath(shutil.which("git") or "git")} | {
        os.path.realpath(os.path.join(exec_path, name)) for name in os.listdir(exec_path)}


def unnamed(run: Run, allowed: set[str]) -> list[str]:
    """Programs a run started that are neither Python, nor git, nor a shell running one
    of git's own helpers (git starts upload-pack and receive-pack of a local remote so)."""
    found = []
    for exe, args in run.programs:
        real = os.path.realpath(exe)
        if real in allowed or os.path.basename(exe) == "git":
            continue
        if os.path.basename(real) in ("sh", "dash", "bash") and len(args) > 2 \
                and args[1] == "-c" and args[2].startswith(("git-upload-pack ",
                                                            "git-receive-pack ")):
            continue
        found.append(f"{exe} {' '.join(args[1:4])}")
    return found


def fingerprint(root: Path, skip: set[Path]) -> dict[str, tuple[int, int, str]]:
    """Every path under ``root`` (not under ``skip``) with its size, mode and link target:
    compared before and after, so a file written outside the clone shows."""
    out: dict[str, tuple[int, int, str]] = {}
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if Path(here, d) not in skip]
        for name in [*dirs, *files]:
            p = Path(here, name)
            st_ = os.lstat(p)
            target = os.readlink(p) if os.path.islink(p) else ""
            out[str(p.relative_to(root))] = (st_.st_size, st_.st_mode, target)
    return out


def snapshot_git(victim: Path) -> tuple[bytes, dict[str, bytes]]:
    hooks = victim / ".git" / "hooks"
    return ((victim / ".git" / "config").read_bytes(),
            {p.name: p.read_bytes() for p in hooks.iterdir()} if hooks.is_dir() else {})


# -- the cases ----------------------------------------------------------------------------

class Arena:
    """One team for all of a test's cases: reset to the same start before each."""

    def __init__(self, team: Team, first: Path, tmp: Path) -> None:
        self.team, self.tmp = team, tmp
        self.canary = Listener()
        self.marker = tmp / "markers"
        self.marker.mkdir()
        self.outside = tmp / "outside"
        (self.outside / "dir").mkdir(parents=True)
        (self.outside / "secret.txt").write_text("the victim's own file\n")
        self.victim = team.clone("victim")
        git(self.victim, "remote", "add", "backup", str(tmp / "served" / "remote.git"))
        self.base = git(self.victim, "rev-parse", "HEAD")
        self.mallory = team.clone("mallory", accept=False)
        (tmp / "logs").mkdir()
        self.body = tmp / "body.txt"
        self.body.write_text("the victim's plan\n")
        # The victim's own git config defines programs, as a git-lfs user's does.
        global_config = Path(os.environ["GIT_CONFIG_GLOBAL"])
        self.attacker_env = {**child_env(), "GIT_CONFIG_GLOBAL": str(tmp / "plain.gitconfig")}
        shutil.copy(global_config, tmp / "plain.gitconfig")
        touch = f"sh -c 'touch {self.marker}/$0' "
        with open(global_config, "a") as fh:
            fh.write(f"[filter \"evil\"]\n\tsmudge = {touch}smudge\n\tclean = {touch}clean\n"
                     f"\tprocess = {touch}process\n[filter \"lfs\"]\n\tsmudge = {touch}lfs\n"
                     f"\tclean = {touch}lfs-clean\n[merge \"evil\"]\n\tdriver = {touch}merge\n"
                     f"[diff \"evil\"]\n\tcommand = {touch}diff\n\ttextconv = {touch}textconv\n")
        self.env = {**child_env(), "PYTHONPATH": os.pathsep.join(sys.path)}
        self.allowed = _git_programs() | {os.path.realpath(sys.executable)}
        self.world = World(self.marker, self.outside, self.victim, self.canary.port)
        self.cases = 0
        self.sync_exits: dict[int, int] = {}
        self.peak = (0, 0.0)  # the largest resident memory and the longest run seen

    def reset(self) -> None:
        served = self.tmp / "served" / "remote.git"
        git(served, "update-ref", "refs/heads/main", self.base)
        git(self.victim, "update-ref", "refs/remotes/origin/main", self.base)
        git(self.victim, "reset", "-q", "--hard", self.base)
        git(self.victim, "clean", "-qffdx", "-e", ".atlas-cache")
        git(self.mallory, "fetch", "-q", "origin")
        git(self.mallory, "reset", "-q", "--hard", self.base)
        for p in self.marker.iterdir():
            p.unlink()
        shutil.rmtree(self.tmp / "site", ignore_errors=True)

    def push(self, pieces: list[list[Entry]]) -> None:
        entries = [e for piece in pieces for e in piece]
        tree = build_tree(self.mallory, self.attacker_env, self.base, entries)
        commit = _plumb(self.mallory, self.attacker_env,
                        ["commit-tree", tree, "-p", self.base, "-m", "an ordinary commit"], b"")
        _plumb(self.mallory, self.attacker_env,
               ["push", "-q", "origin", f"{commit}:refs/heads/main"], b"")

    def case(self, pieces: list[list[Entry]], commands: list[list[str]]) -> list[Run]:
        self.cases += 1
        self.reset()
        self.push(pieces)
        skip = {self.victim, self.tmp / "served", self.mallory, self.tmp / "home",
                self.marker, self.tmp / "site", self.tmp / "logs"}
        before = fingerprint(self.tmp, skip)
        own_git = snapshot_git(self.victim)
        runs = []
        logs = self.tmp / "logs"
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir()
        for i, argv in enumerate(commands):
            argv = [str(self.body) if a == "BODY" else str(self.tmp / "site")
                    if a == "SITE" else a for a in argv]
            runs.append(watched(["--as", "victim", *argv], self.victim, self.env,
                                logs / f"run{i}"))
        self.sync_exits[runs[0].code] = self.sync_exits.get(runs[0].code, 0) + 1
        self.peak = (max([self.peak[0], *(r.maxrss for r in runs)]),
                     max([self.peak[1], *(r.seconds for r in runs)]))
        for run in runs:
            note(f"{run.argv[2:4]}: exit {run.code}, {run.maxrss >> 20} MiB, "
                 f"{run.seconds:.1f} s: {run.stderr[-300:]}")
            assert run.code in (0, 1, 2, 3, 4), run.stderr
            assert "Traceback" not in run.stderr, run.stderr
            assert run.maxrss < run.bound, (run.argv, run.maxrss, run.bound)
            assert run.seconds < TIME_BOUND_S, (run.argv, run.seconds)
            assert unnamed(run, self.allowed) == [], run.argv
            assert run.connects == [], run.argv
        assert sorted(p.name for p in self.marker.iterdir()) == []
        assert self.canary.connections == 0
        assert fingerprint(self.tmp, skip) == before
        assert (self.outside / "secret.txt").read_text() == "the victim's own file\n"
        assert snapshot_git(self.victim) == own_git
        return runs


@pytest.fixture
def arena(team: tuple[Team, Path], tmp_path: Path) -> Iterator[Arena]:
    made = Arena(team[0], team[1], tmp_path)
    yield made
    made.canary.close()
    # The bounds of this run, for the report: how many cases, how long each command took.
    print(f"\nadversarial sync: {made.cases} cases; the first sync's exit codes: "
          f"{dict(sorted(made.sync_exits.items()))}; peak {made.peak[0] >> 20} MiB, longest "
          f"command {made.peak[1]:.1f} s")


SLOW = settings(deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])


def test_hostile_remote_content_runs_nothing_reaches_nothing_and_stays_bounded(
        arena: Arena) -> None:
    @settings(SLOW, max_examples=CASES)
    @given(st.data())
    def one(data: st.DataObject) -> None:
        pieces = data.draw(plants(arena.world))
        runs = arena.case(pieces, COMMANDS)
        event(f"sync exit {runs[0].code}")

    one()
    assert arena.cases >= CASES


def test_hostile_remote_content_and_the_site_build(arena: Arena) -> None:
    @settings(SLOW, max_examples=SITE_CASES)
    @given(st.data())
    def one(data: st.DataObject) -> None:
        arena.case(data.draw(plants(arena.world)), SITE_COMMANDS)

    one()
    assert arena.cases >= SITE_CASES


def test_the_watch_sees_what_it_must(arena: Arena, tmp_path: Path) -> None:
    """The checks above can fail: a program started, a connection made and a file written
    outside are each seen."""
    script = tmp_path / "naughty.py"
    script.write_text(
        "import socket, subprocess\n"
        f"s = socket.socket(); s.connect(('127.0.0.1', {arena.canary.port})); s.close()\n"
        f"subprocess.run(['touch', '{arena.outside}/new.txt'])\n")
    skip = {arena.victim, tmp_path / "served", arena.mallory, tmp_path / "home",
            arena.marker, tmp_path / "logs"}
    before = fingerprint(tmp_path, skip)
    subprocess.run(strace(tmp_path / "logs" / "naughty", [sys.executable, str(script)]),
                   check=True)
    programs, connects = traced(tmp_path / "logs" / "naughty")
    naughty = Run([], 0, "", 0, 0.0, programs, connects, MEMORY_BOUND)
    assert any("touch" in p for p in unnamed(naughty, arena.allowed))
    assert connects and arena.canary.connections >= 1
    assert fingerprint(tmp_path, skip) != before
    # ... while atlas itself, watched the same way, starts and reaches nothing.
    run = watched(["--version"], tmp_path, arena.env, tmp_path / "logs" / "version")
    assert run.code == 0 and unnamed(run, arena.allowed) == [] and run.connects == []
    assert 0 < run.maxrss < run.bound
