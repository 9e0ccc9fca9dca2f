"""The record-writer boundary: whatever another writer of the record put in it, a reader
loses no file, starts no process, opens no connection, does not hang or fill its memory,
and never shows a traceback.

A hypothesis generator mutates a valid record the way a confused or hostile writer could:
symlinks out of the record and into it, named pipes and devices where files belong, hard
links to a person's files, files turned into folders and back, truncated, huge, deeply
nested, YAML aliases and tags (``!!python/object/apply``, ``!!binary``, ``!ENV``), front
matter tricks (two blocks, no closing line, duplicate keys, CRLF, NUL bytes), version
numbers negative, huge or of the wrong type, version files numbered past any range, names
that collide (``plan.v0003.md`` beside ``plan.v00003.md``, an entry copied under another
id, ``PLAN`` beside ``plan``), bytes that are not UTF-8, a byte-order mark, control
characters, damaged JSON live rows (receipts, sessions, telemetry, lease generations, the
latest-version hints: NaN, 1e999, a number of 5,000 digits, nesting 100,000 deep), a
planted search index or cache folder, no permissions. Each of these kinds starts a case of
its own, and up to two more mutations of any kind join it.

Then one child process, its address space capped, runs every command that reads the
record (the CLI: status show/log/diff, get, ls, history, diff, feed, begin, end, lease
ls/show, decisions, search, check, activity, telemetry ls, and in some cases site build)
and every read tool of the MCP server (through the SDK's client, in-process). An audit
hook in the child records every process started, every connection or name lookup, and
every file opened for writing (or made, renamed, removed) outside the record, the site's
output folder and the child's own temp and cache folders. Each command must exit 0, 1, 2,
3 or 4 (an MCP tool: a result, never a "bug"), within its time bound, with no traceback;
nothing may be started, connected or written outside; and every file of the person's
folder beside the record (including those hard-linked into it) must be as it was.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.git import git
from support.runner import child_env

from atlas_files.api import Worker, ritual
from atlas_files.protocol import artifacts, corrections, decisions, leases, status
from atlas_files.search import search
from atlas_files.storage.record import Record

# Hostile records of each kind of mutation (22 kinds); each runs every read command and
# MCP read tool. ATLAS_HOSTILE_CASES runs more on a developer's machine.
CASES_PER_KIND = int(os.environ.get("ATLAS_HOSTILE_CASES", "1"))
SITE_EVERY = 4       # about one in four also builds the site
TIME_BOUND_S = 240   # for the whole child of one case, on a loaded machine
COMMAND_BOUND_S = 60  # for any one command in it
MEMORY_BOUND = 2 << 30  # address space of the child, bytes

READS = [
    ["status", "show"], ["status", "log"], ["status", "diff"], ["get", "plan"],
    ["get", "plan", "--version", "1"], ["ls"], ["ls", "--accepted"], ["history", "plan"],
    ["diff", "plan"], ["feed"], ["begin", "--json"], ["end", "--json"], ["lease", "ls"],
    ["lease", "show", "gpubox.gpu0"], ["decisions"], ["telemetry", "ls"],
    ["search", "plan"], ["search", "kestrel", "--all-versions", "--all-projects"],
    ["check"], ["activity"],
]
MCP_READS = [
    ("begin", {}), ("status_read", {}), ("get", {"name": "plan"}), ("feed", {}),
    ("topics", {"action": "list"}), ("topics", {"action": "list", "accepted": True}),
    ("topics", {"action": "history", "name": "plan"}),
    ("topics", {"action": "diff", "name": "plan"}), ("lease", {"action": "list"}),
    ("lease", {"action": "show", "resource": "gpubox.gpu0"}),
    ("lease", {"action": "machines"}), ("decisions", {}), ("search", {"query": "kestrel"}),
    ("check", {}),
]
# Processes a read may start: git, which `activity` and `check` ask about the repository
# holding the record, and the site engine the user's `site build` runs.
ALLOWED_PROGRAMS = ("git", "zensical")

CHILD = r"""
import contextlib, io, json, os, resource, sys, time
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.dont_write_bytecode = True
record, commands, spec = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[4])
writable = [os.path.realpath(p) for p in spec["writable"]]
events = []
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def outside(path, dir_fd=None, follows=True):
    # Whether an operation on path would touch a file outside the writable folders;
    # follows: whether it follows a symlink in the path's last part (an open without
    # O_NOFOLLOW does; a rename, a removal, a link or an O_NOFOLLOW open never does).
    if (isinstance(dir_fd, int) and dir_fd >= 0) \
            or not isinstance(path, (str, bytes, os.PathLike)):
        return False  # relative to a folder atlas walked to: inside by construction
    path = os.fsdecode(path)
    if path in ("/dev/null", "/dev/tty"):
        return False
    if follows:
        real = os.path.realpath(path)
    else:
        head, tail = os.path.split(os.path.abspath(path))
        real = os.path.join(os.path.realpath(head), tail)
    return not any(real == w or real.startswith(w + os.sep) for w in writable)


def program(event, args):
    if event == "subprocess.Popen":
        argv = list(args[1]) if isinstance(args[1], (list, tuple)) else [args[1]]
        name = os.path.basename(os.fsdecode(args[0] or argv[0]))
        if name.startswith("python") and len(argv) > 2 and argv[1] == "-m":
            name = str(argv[2])
        return name
    return event


# (where the path is, where its folder descriptor is) in each event's arguments
_PATH_AT = {"os.mkdir": (0, 2), "os.remove": (0, 1), "os.rmdir": (0, 1), "os.chmod": (0, 2),
            "os.utime": (0, 3), "os.mkfifo": (0, 2), "os.mknod": (0, 3), "os.truncate": (0, None),
            "os.link": (1, 3), "os.symlink": (1, 2), "shutil.rmtree": (0, 1),
            "shutil.copyfile": (1, None), "shutil.copytree": (1, None), "shutil.move": (1, None)}


def audit(event, args):
    if event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                 "os.fork", "os.forkpty", "pty.spawn"):
        events.append(["process", program(event, args), repr(args)[:400]])
    elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
        if len(args) > 1 and not isinstance(args[1], (str, bytes)):
            events.append(["network", event, repr(args[1])[:200]])
    elif event in ("socket.getaddrinfo", "socket.gethostbyname", "urllib.Request"):
        events.append(["network", event, repr(args)[:200]])
    elif event == "open":
        path, mode, flags = args
        writing = (mode is not None and any(c in mode for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS)
        nofollow = isinstance(flags, int) and flags & os.O_NOFOLLOW
        if writing and outside(path, follows=not nofollow):
            events.append(["write", event, repr(path)[:300]])
    elif event in _PATH_AT:
        at, fd_at = _PATH_AT[event]
        fd = args[fd_at] if fd_at is not None else None
        follows = event in ("os.chmod", "os.utime", "os.truncate", "shutil.copyfile")
        if outside(args[at], fd if isinstance(fd, int) else None, follows):
            events.append(["write", event, repr(args[at])[:300]])
    elif event == "os.rename":
        src, dst, src_fd, dst_fd = args
        if outside(dst, dst_fd, False) or outside(src, src_fd, False):
            events.append(["write", event, repr(dst)[:300]])


sys.addaudithook(audit)
from atlas_files.cli import main
out = []
for argv in commands:
    err = io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            main(["--record", record, "--as", "alice", "-p", "web", *argv])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # a bug: report it, do not stop the other commands
            import traceback
            code = "traceback"
            err.write("Traceback\n" + "".join(traceback.format_exception(exc)))
    out.append({"argv": argv, "code": code, "stderr": err.getvalue()[-2000:],
                "seconds": time.monotonic() - start})

import anyio
from mcp import Client
from atlas_files.mcp.app import Served, build


async def tools():
    async with Client(build(Served(record, "web", "alice", True))) as client:
        for name, arguments in spec["mcp"]:
            start = time.monotonic()
            try:
                result = await client.call_tool(name, arguments)
                text = "\n".join(getattr(c, "text", "") for c in result.content)
                code = 2 if result.is_error else 0
                if "bug in atlas" in text:
                    code = "bug"
            except BaseException as exc:
                import traceback
                code, text = "traceback", "Traceback\n" + "".join(
                    traceback.format_exception(exc))
            out.append({"argv": ["mcp", name, arguments], "code": code,
                        "stderr": text[-2000:], "seconds": time.monotonic() - start})

anyio.run(tools)
print(json.dumps({"runs": out, "events": events}))
"""


def _base(root: Path) -> Record:
    """A record with something of every kind a reader meets."""
    record = Record.init(root, ["web"])
    status.write(record, "Where things stand: the kestrel plan.\n", author="ann",
                 project="web")
    for n in range(3):
        artifacts.put(record, "plan", f"# Plan\n\nstep {n} of the kestrel\n", author="ann",
                      project="web")
    artifacts.put(record, "notes", "See [the plan](../plan/plan.v0002.md).\n", author="bob",
                  project="web")
    artifacts.put(record, "idea", "a proposal\n", author="bob", project="web",
                  proposal=True)
    decisions.decide(record, topic="the loader", recommended="rewrite", chosen="patch",
                     relation="disagreed", why="timing", author="ann", project="web")
    corrections.correct(record, "plan@v1", what="step 0 was wrong", author="bob",
                        project="web")
    corrections.retract(record, "notes@v1", why="the link moved", author="bob",
                        project="web")
    leases.claim(record, "gpubox.gpu0", holder="ann", duration_s=3600, why="a run")
    leases.claim(record, "repo.src", holder="bob", duration_s=3600, why="a refactor",
                 paths=["src/**"])
    (record.root / "telemetry" / "gpubox.json").write_text(json.dumps(
        {"machine": "gpubox", "reachable": True, "observed_at": "2026-11-30T10:00:00Z",
         "observer": "prober", "gpus": []}), encoding="utf-8")
    artifacts.get(record, "plan", reader="alice", project="web")
    ritual.begin(Worker(record, "alice", "web"))
    artifacts.ls(record, "web")  # leaves the latest-version hints
    search(record, "kestrel")    # and the search index
    return record


def _root(dirs: list[Path]) -> Path:
    """The record's folder: the parent of its shallowest folder."""
    return min(dirs, key=lambda d: len(d.parts)).parent


def _writable(path: Path) -> None:
    if path.exists() and not path.is_symlink():
        path.chmod(0o755 if path.is_dir() else 0o644)


def _remove(path: Path) -> None:
    _writable(path.parent)
    _writable(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _replace_file(path: Path, data: bytes) -> None:
    _remove(path)
    path.write_bytes(data)


# Each mutation takes (rng, the record's files, its folders, the person's folder outside)
# and says what it did.
Mutation = Callable[[random.Random, list[Path], list[Path], Path], str]


def symlink_out(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    target = rng.choice([victim, victim / "precious.txt", victim / "notes.md"])
    where = rng.choice(files + dirs)
    _remove(where)
    where.symlink_to(target)
    return f"symlink {where.name} -> outside"


def symlink_in(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    if len(dirs) < 2:
        return "no folders"
    where, target = rng.sample(dirs, 2)
    if target in where.parents or where in target.parents:
        return "nested folders"
    _remove(where)
    where.symlink_to(target)
    return f"symlink {where.name} -> {target.name} inside"


def special_file(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    """A named pipe (a reader that opens it waits for a writer forever) or a device
    (/dev/zero: a reader that reads it whole fills its memory) where a file belongs."""
    where = rng.choice(files)
    _remove(where)
    if rng.random() < 0.5:
        os.mkfifo(where)
        return f"{where.name} became a named pipe"
    try:
        os.mknod(where, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # what /dev/zero is
        return f"{where.name} became /dev/zero"
    except (PermissionError, OSError):  # no CAP_MKNOD: a link to the device instead
        where.symlink_to("/dev/zero")
        return f"{where.name} became a symlink to /dev/zero"


def hard_link_out(rng: random.Random, files: list[Path], dirs: list[Path],
                  victim: Path) -> str:
    """A hard link is a plain file: a reader reads it, and a writer must replace the name,
    never write through it into the person's file."""
    where = rng.choice(files)
    target = rng.choice([victim / "precious.txt", victim / "notes.md"])
    _remove(where)
    os.link(target, where)
    return f"{where.name} hard-linked to {target.name} outside"


def file_to_folder(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files)
    _remove(where)
    where.mkdir()
    (where / "inner.md").write_text("---\nname: x\n---\n", encoding="utf-8")
    return f"{where.name} became a folder"


def folder_to_file(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(dirs)
    _remove(where)
    where.write_text("not a folder\n", encoding="utf-8")
    return f"{where.name} became a file"


def truncate(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files)
    data = where.read_bytes()
    _replace_file(where, data[: rng.randrange(0, max(1, len(data)))])
    return f"{where.name} truncated"


def huge(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files)
    head = where.read_bytes()[:400]
    if rng.random() < 0.5:
        _replace_file(where, head + b"x" * (3 << 20) + b"\n")  # three times body_limit
        return f"{where.name} made 3 MB"
    _remove(where)
    with open(where, "wb") as fh:
        fh.write(head)
        fh.truncate(16 << 30)  # sparse: costs no disk, and no reader may read it whole
    return f"{where.name} made a sparse 16 GiB"


def nested(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files)
    depth = 100_000
    if where.suffix == ".json":
        _replace_file(where, b"[" * depth + b"]" * depth)
    else:
        _replace_file(where, b"---\nname: x\nlinks: " + b"[" * depth + b"\n---\nbody\n")
    return f"{where.name} nested"


def aliased(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    bomb = b'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    for i, prev in zip("bcdefghij", "abcdefghi", strict=True):
        bomb += f"{i}: &{i} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n".encode()
    where = rng.choice([f for f in files if f.suffix in (".md", ".yaml")] or files)
    _replace_file(where, (b"---\n" + bomb + b"---\nbody\n") if where.suffix == ".md" else bomb)
    return f"{where.name} aliased"


YAML_TAGS = [
    'version: !!python/object/apply:os.system ["touch {victim}/pwned"]',
    "author: !!python/name:os.system",
    'summary: !!python/object/new:subprocess.Popen [["touch", "{victim}/pwned"]]',
    "summary: !!binary aGVsbG8=",
    "links: !!set {{a, b}}",
    "written_at: !!timestamp 2026-01-01",
    "author: !ENV HOME",
    "version: !!float .nan",
    'version: !!int "0x10"',
    "author: !relative $config_dir",
]


def yaml_tags(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice([f for f in files if f.suffix in (".md", ".yaml")] or files)
    line = rng.choice(YAML_TAGS).format(victim=victim).encode()
    data = where.read_bytes()
    if where.suffix == ".md" and data.startswith(b"---\n"):
        _replace_file(where, b"---\n" + line + b"\n" + data[4:])
    else:
        _replace_file(where, line + b"\n" + data)
    return f"{where.name} with {line[:30]!r}"


def odd_version(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    """Front matter numbers that are negative, huge, fractional, of the wrong type."""
    versions = [f for f in files if ".v" in f.name and f.suffix == ".md"]
    if not versions:
        return "no versions"
    where = rng.choice(versions)
    key = rng.choice(["version", "based_on"])
    value = rng.choice(["-1", "0", "99999999999999999999999999999", "1.5", "1e308", '"12"',
                        "true", "[]", "{a: 1}", "null", "0x10", "~"])
    data = where.read_bytes()
    lines = [(f"{key}: {value}".encode() if line.startswith(key.encode() + b":") else line)
             for line in data.split(b"\n")]
    _replace_file(where, b"\n".join(lines))
    return f"{where.name} {key}: {value}"


def version_past_range(rng: random.Random, files: list[Path], dirs: list[Path],
                       victim: Path) -> str:
    """A version file numbered past any range a reader could count through, and one more
    odd number beside it (no leading zeros, too many, none at all)."""
    versions = [f for f in files if ".v" in f.name and f.suffix == ".md"]
    if not versions:
        return "no versions"
    where = rng.choice(versions)
    stem = where.name.rpartition(".v")[0]
    _writable(where.parent)
    made = []
    for number in ("99999999999999999999", rng.choice(["0000", "00007", "10000", "-1", "1e3"])):
        target = where.with_name(f"{stem}.v{number}.md")
        shutil.copyfile(where, target)
        made.append(target.name)
    return f"{', '.join(made)} beside {where.name}"


def front_matter_trick(rng: random.Random, files: list[Path], dirs: list[Path],
                       victim: Path) -> str:
    where = rng.choice([f for f in files if f.suffix == ".md"] or files)
    data = where.read_bytes()
    trick = rng.choice(["two", "unclosed", "duplicate", "crlf", "nul", "dots", "long-key",
                        "empty", "only-dashes"])
    new = {
        "two": data + b"\n---\nname: other\nversion: 99\n---\nsecond\n",
        "unclosed": data.replace(b"\n---\n", b"\n", 1),
        "duplicate": data.replace(b"---\n", b"---\nauthor: eve\nauthor: mallory\n", 1),
        "crlf": data.replace(b"\n", b"\r\n"),
        "nul": data.replace(b"\n", b"\n\x00", 2),
        "dots": data.replace(b"\n---\n", b"\n...\n", 1),
        "long-key": data.replace(b"---\n", b"---\n" + b"k" * 100_000 + b": v\n", 1),
        "empty": b"",
        "only-dashes": b"---\n---\n---\n",
    }[trick]
    _replace_file(where, new)
    return f"{where.name}: front matter {trick}"


def colliding_names(rng: random.Random, files: list[Path], dirs: list[Path],
                    victim: Path) -> str:
    root = _root(dirs)
    artifacts_dir = root / "projects" / "web" / "artifacts"
    choice = rng.choice(["padded", "upper", "status-topic", "entry-copy", "generation",
                         "temp-name"])
    if choice == "padded":
        src = artifacts_dir / "plan" / "plan.v0003.md"
        if src.exists():
            shutil.copyfile(src, src.with_name("plan.v00003.md"))
    elif choice == "upper" and (artifacts_dir / "plan").is_dir():
        shutil.copytree(artifacts_dir / "plan", artifacts_dir / "PLAN")
    elif choice == "status-topic" and artifacts_dir.is_dir():
        (artifacts_dir / "status").mkdir(exist_ok=True)
        (artifacts_dir / "status" / "status.v0001.md").write_text(
            "---\nname: status\nversion: 1\n---\nnot a topic\n")
    elif choice == "entry-copy":
        entries = sorted((root / "projects" / "web" / "decisions").glob("dec-*.md"))
        if entries:
            shutil.copyfile(entries[0], entries[0].with_name(
                "dec-20200101t000000000000z-00000000.md"))
    elif choice == "generation":
        gens = sorted((root / "leases" / "gpubox.gpu0").glob("g*.json"))
        if gens:
            shutil.copyfile(gens[0], gens[0].with_name("g0000001.json"))
            shutil.copyfile(gens[0], gens[0].with_name("g99999999999999999999.json"))
    else:
        (artifacts_dir / "plan" / ".atlas-tmp-x-1-deadbeef").write_text("half a write")
    return f"colliding names: {choice}"


JSON_DAMAGE = [b"NaN", b"Infinity", b"1e999", b"-0", b"9" * 5000, b'{"read": {"web/plan": 1e100}}',
               b'{"read": {"web/artifacts/plan": 99999999999999999999999}}',
               b'{"read": [1, 2]}', b'{"a": 1, "a": 2}', b"\xef\xbb\xbf{}", b'{"x": 1} trailing',
               b'"\\ud800"', b'{"generation": 1e400}', b'{"holder": ["a"], "action": "claim"}',
               b"{" * 50_000, b'{"plan": 99999999999999999999, "notes": -5, "idea": "x"}']


def damaged_row(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    root = _root(dirs)
    rows = [f for f in files if f.suffix == ".json"] + sorted(
        root.glob("projects/*/*/.atlas-latest.json")) + sorted(
        root.glob("projects/*/.atlas-latest.json"))
    if not rows:
        return "no rows"
    where = rng.choice(rows)
    data = rng.choice(JSON_DAMAGE)
    _replace_file(where, data)
    return f"{where.name} = {data[:30]!r}"


def planted_cache(rng: random.Random, files: list[Path], dirs: list[Path],
                  victim: Path) -> str:
    root = _root(dirs)
    cache = root / ".atlas-cache"
    choice = rng.choice(["cache-link", "index-link", "index-garbage", "index-fifo",
                         "lock-fifo", "journal"])
    if choice == "cache-link":
        _remove(cache)
        cache.symlink_to(victim)
    else:
        cache.mkdir(exist_ok=True)
        name = {"index-link": "search.sqlite", "index-garbage": "search.sqlite",
                "index-fifo": "search.sqlite", "lock-fifo": "search.lock",
                "journal": "search.sqlite-journal"}[choice]
        where = cache / name
        _remove(where)
        if choice == "index-link":
            where.symlink_to(victim / "precious.txt")
        elif choice in ("index-fifo", "lock-fifo"):
            os.mkfifo(where)
        else:
            where.write_bytes(os.urandom(rng.randrange(1, 20000)))
    return f"planted cache: {choice}"


def not_utf8(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files)
    data = bytearray(where.read_bytes() or b" ")
    data[rng.randrange(0, len(data))] = 0xFF
    _replace_file(where, bytes(data))
    return f"{where.name} not UTF-8"


def bom(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files)
    _replace_file(where, b"\xef\xbb\xbf" + where.read_bytes())
    return f"{where.name} with a BOM"


def controls(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files)
    text = where.read_bytes().replace(b"\n", b"\x1b]52;c;cGF5bG9hZA==\x07\x1b[2J\n", 3)
    _replace_file(where, text)
    return f"{where.name} with control characters"


def uppercase(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files + dirs)
    _writable(where.parent)
    where.rename(where.with_name(where.name.upper()))
    return f"{where.name} renamed in uppercase"


def no_permission(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files + dirs)
    where.chmod(0)
    return f"{where.name} chmod 000"


MUTATIONS: list[Mutation] = [
    symlink_out, symlink_in, special_file, hard_link_out, file_to_folder, folder_to_file,
    truncate, huge, nested, aliased, yaml_tags, odd_version, version_past_range,
    front_matter_trick,
    colliding_names, damaged_row, planted_cache, not_utf8, bom, controls, uppercase,
    no_permission,
]


def _tree(root: Path) -> tuple[list[Path], list[Path]]:
    files, dirs = [], []
    for folder, subdirs, names in os.walk(root):
        base = Path(folder)
        dirs += [base / d for d in subdirs if not d.startswith(".")]
        files += [base / n for n in names if not n.startswith(".")]
    return sorted(files), sorted(dirs)


def _snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            p = Path(folder) / name
            out[str(p.relative_to(root))] = (p.lstat().st_mode, p.read_bytes())
    return out


def _let_go(top: Path) -> None:
    """Undo what makes a folder hard to clean up (modes of 000, named pipes)."""
    for folder, subdirs, names in os.walk(top):
        for name in subdirs + names:
            p = Path(folder) / name
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() else 0o644)


MORE = st.lists(st.tuples(st.sampled_from(MUTATIONS), st.randoms(use_true_random=False)),
                max_size=2)


# Every kind of mutation is the first of its own case(s), so each is met on every run;
# up to two more of any kind join it. Each example is a child process of seconds: no
# shrinking (a failure names what was done to the record, which is what one needs to
# reproduce it), and the same examples every run.
@pytest.mark.parametrize("first", MUTATIONS, ids=[m.__name__ for m in MUTATIONS])
@settings(max_examples=CASES_PER_KIND, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(rng=st.randoms(use_true_random=False), more=MORE, config=st.floats(0, 1),
       site=st.integers(0, SITE_EVERY - 1), out_link=st.booleans())
def test_a_hostile_record_costs_no_file_process_connection_hang_or_traceback(
        first: Mutation, rng: random.Random, more: list[tuple[Mutation, random.Random]],
        config: float, site: int, out_link: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="atlas-hostile-") as name:
        top = Path(name)
        try:
            _run_case(top, [(first, rng), *more], config, site == 0, out_link)
        finally:
            _let_go(top)


def _run_case(top: Path, steps: list[tuple[Mutation, random.Random]], config: float,
              build_site: bool, out_link: bool) -> None:
    victim = top / "home"
    victim.mkdir()
    (victim / "precious.txt").write_text("a person's file\n", encoding="utf-8")
    (victim / "notes.md").write_text("---\ntitle: notes\nversion: 4\nauthor: me\n---\n"
                                     "the kestrel password is hunter2\n", encoding="utf-8")
    (victim / "authorized_keys").write_text("ssh-ed25519 AAAA person\n", encoding="utf-8")
    record = _base(top / "rec")
    done = []
    for mutate, rng in steps:
        files, dirs = _tree(record.root)
        # atlas.yaml is mutated in only a few cases: most commands stop early without it.
        files = [f for f in files if f.name != "atlas.yaml" or config < 0.1]
        if files and dirs:
            done.append(mutate(rng, files, dirs, victim))
    before = _snapshot(victim)
    out = top / "site"
    commands = list(READS)
    if build_site:
        if out_link:
            # Planted in the output folder too: the build must not write through it.
            out.mkdir()
            (out / "docs").symlink_to(victim)
        commands.append(["site", "build", "--out", str(out)])
    (top / "tmp").mkdir()
    (top / "cache").mkdir(mode=0o700)
    spec = {"mcp": MCP_READS, "writable": [str(record.root), str(out), str(top / "tmp"),
                                           str(top / "cache")]}
    env = child_env()
    env |= {"TMPDIR": str(top / "tmp"), "XDG_CACHE_HOME": str(top / "cache"),
            "HOME": str(victim)}
    try:
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(record.root), json.dumps(commands),
             str(MEMORY_BOUND), json.dumps(spec)],
            capture_output=True, text=True, timeout=TIME_BOUND_S, cwd=record.root, env=env)
    finally:
        _let_go(top)
    assert child.returncode == 0, (done, child.stderr[-3000:])
    report = json.loads(child.stdout)
    for run in report["runs"]:
        assert run["code"] in (0, 1, 2, 3, 4), (done, run)
        assert "Traceback" not in run["stderr"], (done, run)
        assert run["seconds"] < COMMAND_BOUND_S, (done, run)
    started = [e for e in report["events"]
               if e[0] == "process" and e[1] not in ALLOWED_PROGRAMS]
    assert started == [], (done, started)
    assert [e for e in report["events"] if e[0] == "network"] == [], done
    assert [e for e in report["events"] if e[0] == "write"] == [], done
    assert _snapshot(victim) == before, done
    assert not (victim / "pwned").exists(), done


# -- what the generator found, kept as plain tests ----------------------------------------


def _capped_atlas(root: Path, *args: str, input: bytes = b"") -> subprocess.CompletedProcess[str]:
    env = child_env()
    script = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30));"
              "from atlas_files.cli import main; main(sys.argv[1:])")
    return subprocess.run([sys.executable, "-c", script, "--record", str(root), "--as", "ann",
                           *args], input=input.decode(), capture_output=True, text=True,
                          timeout=60, env=env)


def test_a_version_numbered_past_any_range_costs_one_version(tmp_path: Path) -> None:
    """`plan.v99999999999999999999.md` made `ls --accepted` count down from it for ever,
    the stop sign list every number since the writer's read, and `search` fail on a
    number SQLite cannot hold: each visits only versions that exist (search leaves out
    one numbered past 18 digits), and says what is wrong. The listing says the topic's
    latest version cannot be read, rather than show v1 as if it were the latest."""
    record = Record.init(tmp_path / "rec")
    v1 = artifacts.put(record, "plan", "# Plan\n", author="ann")
    shutil.copyfile(v1.path, v1.path.with_name("plan.v99999999999999999999.md"))
    listed = _capped_atlas(record.root, "ls", "--accepted")
    assert listed.returncode == 0, listed.stderr
    assert "plan" in listed.stdout and "damaged" in listed.stdout
    assert "v99999999999999999999" in listed.stderr
    assert listed.stderr.count("\n") <= 2, listed.stderr  # one warning, not one per number
    stopped = _capped_atlas(record.root, "put", "plan", "--expect", "1", "-f", "-",
                            input=b"next\n")
    assert stopped.returncode == 3, stopped.stderr
    assert "99999999999999999993 earlier" in stopped.stderr
    found = _capped_atlas(record.root, "search", "plan", "--json")  # SQLite holds 18 digits
    assert found.returncode == 0, found.stderr
    assert [r["id"] for r in json.loads(found.stdout)["results"]] == ["plan@v1"]
    assert "Traceback" not in listed.stderr + stopped.stderr + found.stderr


@pytest.mark.parametrize("planted", ["fifo", "device", "symlink", "huge"])
def test_atlas_yaml_that_is_no_plain_file_is_refused_not_read(tmp_path: Path,
                                                              planted: str) -> None:
    """A symlink as atlas.yaml was followed wherever it led and a huge one read whole; a
    named pipe or a device was taken for no record at all. Each is refused, exit 2,
    saying what lies where atlas.yaml should be."""
    record = Record.init(tmp_path / "rec")
    config = record.root / "atlas.yaml"
    text = config.read_bytes()
    config.unlink()
    if planted == "fifo":
        os.mkfifo(config)
    elif planted == "device":
        try:
            os.mknod(config, stat.S_IFCHR | 0o666, os.makedev(1, 5))
        except PermissionError:
            pytest.skip("making a device needs CAP_MKNOD")
    elif planted == "symlink":
        (tmp_path / "elsewhere.yaml").write_bytes(text)
        config.symlink_to(tmp_path / "elsewhere.yaml")
    else:  # sparse: no disk, but a reader that reads it whole needs 16 GiB
        config.write_bytes(text)
        with open(config, "r+b") as fh:
            fh.truncate(16 << 30)
    for command in (["status", "show"], ["ls"], ["check"]):
        done = _capped_atlas(record.root, *command)
        assert done.returncode in (1, 2), (command, done.stderr)
        assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
        if command != ["check"]:
            assert "atlas.yaml" in done.stderr and "no record" not in done.stderr, \
                done.stderr


def test_the_childs_audit_hook_sees_a_write_outside_and_a_process_started(
        tmp_path: Path) -> None:
    """The suite's own eyes: a site built into the person's folder is a write outside,
    and `activity` in a git repository starts git; both are recorded as such."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    victim = tmp_path / "home"
    victim.mkdir()
    record = _base(tmp_path / "rec")
    git(record.root, "init", "-q")
    commands = [["activity"], ["site", "build", "--out", str(victim / "site")]]
    spec = {"mcp": [], "writable": [str(record.root)]}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(record.root), json.dumps(commands),
         str(MEMORY_BOUND), json.dumps(spec)], capture_output=True, text=True,
        timeout=TIME_BOUND_S, cwd=record.root,
        env=child_env())
    assert child.returncode == 0, child.stderr[-3000:]
    events = json.loads(child.stdout)["events"]
    assert any(e[0] == "process" and e[1] == "git" for e in events), events
    assert any(e[0] == "write" and str(victim) in e[2] for e in events), events
