"""A hostile record never costs a person a file, a hang or a traceback.

A seeded generator mutates a valid record the way a confused or hostile writer could
(symlinks out of the record and into it, files turned into folders and back, truncated,
huge, deeply nested, YAML aliases, bytes that are not UTF-8, a byte-order mark, control
characters, uppercase names, no permissions), then every read command, `atlas check` and
(in some cases) `atlas site build` run on it in a child process with its address space
capped. Each run must exit 0, 1, 2, 3 or 4 within the time bound, print no traceback, and
leave every file outside the record and the site's output folder as it was.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from atlas_files import artifacts, corrections, decisions, leases, status
from atlas_files.record import Record

CASES = 48           # mutated records; each runs every read command and check
SITE_EVERY = 4       # every fourth one also builds the site
TIME_BOUND_S = 120   # for the whole child of one case
MEMORY_BOUND = 2 << 30  # address space of the child, bytes

READS = [
    ["status", "show"], ["status", "log"], ["get", "plan"], ["ls"], ["ls", "--accepted"],
    ["history", "plan"], ["diff", "plan"], ["feed"], ["lease", "ls"],
    ["lease", "show", "gpubox.gpu0"], ["decisions"], ["telemetry", "ls"],
    ["search", "plan"], ["check"],
]

CHILD = r"""
import contextlib, io, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[3]), int(sys.argv[3])))
from atlas_files.cli import main
record, commands = sys.argv[1], json.loads(sys.argv[2])
out = []
for argv in commands:
    err = io.StringIO()
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
    out.append({"argv": argv, "code": code, "stderr": err.getvalue()[-2000:]})
print(json.dumps(out))
"""


def _base(root: Path) -> Record:
    record = Record.init(root, ["web"])
    status.write(record, "Where things stand.\n", author="ann", project="web")
    for n in range(3):
        artifacts.put(record, "plan", f"# Plan\n\nstep {n}\n", author="ann", project="web")
    artifacts.put(record, "notes", "See [the plan](../plan/plan.v0002.md).\n", author="bob",
                  project="web")
    decisions.decide(record, topic="the loader", recommended="rewrite", chosen="patch",
                     relation="disagreed", why="timing", author="ann", project="web")
    corrections.correct(record, "plan@v1", what="step 0 was wrong", author="bob",
                        project="web")
    leases.claim(record, "gpubox.gpu0", holder="ann", duration_s=3600, why="a run")
    (record.root / "telemetry" / "gpubox.json").write_text(json.dumps(
        {"machine": "gpubox", "reachable": True, "observed_at": "2026-11-30T10:00:00Z",
         "observer": "prober", "gpus": []}), encoding="utf-8")
    artifacts.get(record, "plan", reader="alice", project="web")
    return record


def _writable(path: Path) -> None:
    if path.exists() and not path.is_symlink():
        path.chmod(0o755 if path.is_dir() else 0o644)


def _replace_file(path: Path, data: bytes) -> None:
    _writable(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.write_bytes(data)


# Each mutation takes (rng, the record's files, its folders, the victim folder outside).
Mutation = Callable[[random.Random, list[Path], list[Path], Path], str]


def symlink_out(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    target = rng.choice([victim, victim / "precious.txt"])
    where = rng.choice(files + dirs)
    _writable(where.parent)
    if where.is_dir():
        shutil.rmtree(where)
    else:
        where.unlink()
    where.symlink_to(target)
    return f"symlink {where.name} -> outside"


def symlink_in(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    if len(dirs) < 2:
        return "no folders"
    where, target = rng.sample(dirs, 2)
    if target in where.parents or where in target.parents:
        return "nested folders"
    shutil.rmtree(where)
    where.symlink_to(target)
    return f"symlink {where.name} -> {target.name} inside"


def file_to_folder(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files)
    _writable(where)
    where.unlink()
    where.mkdir()
    (where / "inner.md").write_text("---\nname: x\n---\n", encoding="utf-8")
    return f"{where.name} became a folder"


def folder_to_file(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(dirs)
    shutil.rmtree(where)
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
    _replace_file(where, head + b"x" * (3 << 20) + b"\n")  # three times body_limit
    return f"{where.name} made 3 MB"


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


def not_utf8(rng: random.Random, files: list[Path], dirs: list[Path], victim: Path) -> str:
    where = rng.choice(files)
    data = bytearray(where.read_bytes())
    data[rng.randrange(0, max(1, len(data)))] = 0xFF
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


MUTATIONS: list[Mutation] = [symlink_out, symlink_in, file_to_folder, folder_to_file,
                             truncate, huge, nested, aliased, not_utf8, bom, controls,
                             uppercase, no_permission]


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


@pytest.mark.parametrize("seed", range(CASES))
def test_a_hostile_record_costs_no_file_no_hang_no_traceback(tmp_path: Path,
                                                             seed: int) -> None:
    rng = random.Random(seed)
    victim = tmp_path / "home"
    victim.mkdir()
    (victim / "precious.txt").write_text("a person's file\n", encoding="utf-8")
    (victim / "authorized_keys").write_text("ssh-ed25519 AAAA person\n", encoding="utf-8")
    record = _base(tmp_path / "rec")
    done = []
    for mutate in rng.sample(MUTATIONS, rng.randint(1, 3)):
        files, dirs = _tree(record.root)
        # atlas.yaml is mutated in only a few cases: most commands stop early without it.
        files = [f for f in files if f.name != "atlas.yaml" or rng.random() < 0.1]
        done.append(mutate(rng, files, dirs, victim))
    before = _snapshot(victim)
    out = tmp_path / "site"
    commands = list(READS)
    if seed % SITE_EVERY == 0:
        if seed % (2 * SITE_EVERY) == 0:
            # Planted in the output folder too: the build must not write through it.
            out.mkdir()
            (out / "docs").symlink_to(victim)
        commands.append(["site", "build", "--out", str(out)])
    try:
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(record.root), json.dumps(commands),
             str(MEMORY_BOUND)],
            capture_output=True, text=True, timeout=TIME_BOUND_S, cwd=tmp_path,
            env={k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")})
    finally:
        for folder, subdirs, names in os.walk(tmp_path):  # let pytest clean up
            for name in subdirs + names:
                p = Path(folder) / name
                if not p.is_symlink():
                    p.chmod(0o755 if p.is_dir() else 0o644)
    assert child.returncode == 0, (done, child.stderr[-3000:])
    runs = json.loads(child.stdout)
    for run in runs:
        assert run["code"] in (0, 1, 2, 3, 4), (done, run)
        assert "Traceback" not in run["stderr"], (done, run)
    assert _snapshot(victim) == before, done
