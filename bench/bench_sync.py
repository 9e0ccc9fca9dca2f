"""The record over a git remote. Run: python bench/bench_sync.py [--clones 50] [--seconds 60]

1. A sync with nothing to do on a record of FILES files (`atlas sync`, the whole command)
   against `git fetch` + `git status` on the same clone. Target: <= 3x.
2. `atlas put` with auto sync to a local bare remote (the whole command: interpreter,
   fetch, write, commit, push) against the floor of the same exchange done with git alone
   for one new file: `git fetch` + `git add` + `git commit` + `git push`, in a clone that
   has fetched what the round pushed (so that its timed fetch, like atlas's, finds nothing
   new), with the file at the root and where a put writes it. Target: <= 1.5x.
   The library call (what an MCP server, a long-lived caller, pays) is shown beside it.
   Then the start-up floors of a whole command, with no record and no git: the
   interpreter alone, with click, with click and yaml, `atlas --version`, and the imports
   of the two commands measured (what a Python CLI pays before any git work).
3. CLONES clones writing to one remote for SECONDS s, each a new version of its own topic
   (with --one-topic, all of them the same topic) as fast as it can (a synced write:
   fetch, write, commit, push; retry after a lost race): writes landed per second,
   retries per write (p50, p99), and whether every write a clone was told landed is on
   the remote. Then the drafts the lost races left: how many wait in the clones, and how
   many of those a later version by the same writer superseded (target: 0).

Medians of interleaved runs; a ratio is two figures from the same run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import atlas_argv, clean_env, command_server, interleaved

from atlas_files.api import Worker, core, syncing
from atlas_files.facts import layout, timeutil
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record
from atlas_files.sync.engine import Engine

GITCONFIG = "[user]\n\tname = bench\n\temail = bench@example.invalid\n[gc]\n\tauto = 0\n"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL).stdout.strip()


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, env=env,
                   stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def make_team(root: Path, files: int, auto: bool) -> tuple[Path, Path]:
    """A bare remote holding a record of ``files`` version files; returns (remote, clone)."""
    root.mkdir(parents=True, exist_ok=True)
    remote = root / "remote.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = root / "seed"
    git(root, "clone", "-q", str(remote), str(seed))
    record = Record.init(seed, ["main"])
    record.update_config(lambda d: {**d, "sync": {"auto": auto, "fetch_every": "30s"}})
    per_topic = 10
    for t in range(files // per_topic):
        folder = seed / "projects" / "main" / "artifacts" / f"topic-{t:05d}"
        folder.mkdir(parents=True)
        for v in range(1, per_topic + 1):
            body = f"topic {t} version {v}\n".encode() * 20
            meta = {"name": f"topic-{t:05d}", "version": v, "based_on": v - 1,
                    "author": "seed", "written_at": "2026-01-01T00:00:00Z",
                    "summary": f"v{v}", "digest": frontmatter.digest_of(body)}
            (folder / f"topic-{t:05d}.v{v:04d}.md").write_bytes(frontmatter.render(meta, body))
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "seed")
    git(seed, "push", "-q", "origin", "main")
    clone = root / "clone"
    git(root, "clone", "-q", str(remote), str(clone))
    accept(clone)
    return remote, clone


def accept(clone: Path) -> None:
    """What the person on each clone does once (`atlas sync accept`); a tree from before
    there was anything to accept has no such step."""
    try:
        from atlas_files.sync import accepted
    except ImportError:
        return
    accepted.accept(Record(clone))


def noop_sync(root: Path, files: int, rounds: int, env: dict[str, str],
              served: dict[str, str]) -> None:
    _, clone = make_team(root / "noop", files, auto=False)
    atlas = atlas_argv()
    subprocess.run([*atlas, "--record", str(clone), "sync"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    tracked = int(git(clone, "ls-files").count("\n")) + 1
    sync_t, fetch_t, status_t, lib_t, served_t = [], [], [], [], []
    worker = Worker.open(clone, "bench")
    for _ in range(rounds):
        sync_t.append(timed([*atlas, "--record", str(clone), "sync"], clone, env))
        served_t.append(timed([*atlas, "--record", str(clone), "sync"], clone, served))
        start = time.perf_counter()
        syncing.sync(worker)  # the library alone: what a long-lived caller pays
        lib_t.append(time.perf_counter() - start)
        fetch_t.append(timed(["git", "fetch", "-q", "origin"], clone, env))
        status_t.append(timed(["git", "status", "--porcelain"], clone, env))
    s, f, st, lib, sv = (statistics.median(x)
                         for x in (sync_t, fetch_t, status_t, lib_t, served_t))
    print(f"no-op sync on a record of {tracked:,} tracked files: `atlas sync` {s * 1000:.0f} "
          f"ms; `git fetch` {f * 1000:.0f} ms + `git status` {st * 1000:.0f} ms = "
          f"{(f + st) * 1000:.0f} ms; ratio {s / (f + st):.2f} (target <= 3); through the "
          f"command server (ATLAS_SERVER) {sv * 1000:.0f} ms, ratio {sv / (f + st):.2f}; the "
          f"library's sync alone {lib * 1000:.0f} ms, ratio {lib / (f + st):.2f} (median of "
          f"{rounds})")


def put_auto(root: Path, rounds: int, env: dict[str, str], served: dict[str, str]) -> None:
    remote, clone = make_team(root / "put", 0, auto=True)
    plain = root / "put" / "plain"
    git(root, "clone", "-q", str(remote), str(plain))
    atlas = atlas_argv()
    body = root / "body.txt"
    body.write_text("the next version\n")
    put_t, floor_t, deep_t, lib_t, served_t = [], [], [], [], []
    worker = Worker.open(clone, "bench")
    # The same one-file commit where a put makes it: four folders down, so git writes
    # (and the remote unpacks) the four trees above the file as well as the root's.
    deep = plain / "projects" / "main" / "artifacts" / "floor"
    deep.mkdir(parents=True)
    for i in range(rounds):
        put_t.append(timed([*atlas, "--record", str(clone), "--as", "bench", "put", "plan",
                            "-f", str(body), "--expect", str(3 * i)], clone, env))
        served_t.append(timed([*atlas, "--record", str(clone), "--as", "bench", "put", "plan",
                               "-f", str(body), "--expect", str(3 * i + 1)], clone, served))
        start = time.perf_counter()
        # What the library pays: the same synced write (the API syncs it), minus the
        # interpreter's start.
        core.put(worker, "plan", "library version\n", expect=3 * i + 2)
        lib_t.append(time.perf_counter() - start)
        # Untimed: what the three writes above pushed, so that the timed fetch finds
        # what atlas's own fetches find (nothing new) rather than three writes to bring in.
        git(plain, "fetch", "-q", "origin")
        start = time.perf_counter()
        git(plain, "fetch", "-q", "origin")
        (plain / f"file-{i}.md").write_text("one new file\n")
        git(plain, "add", f"file-{i}.md")
        git(plain, "commit", "-qm", f"file {i}")
        git(plain, "push", "-q", "origin", "HEAD:refs/heads/floor")
        floor_t.append(time.perf_counter() - start)
        start = time.perf_counter()
        git(plain, "fetch", "-q", "origin")
        name = f"projects/main/artifacts/floor/floor.v{i + 1:04d}.md"
        (plain / name).write_text("one new file\n")
        git(plain, "add", name)
        git(plain, "commit", "-qm", f"deep file {i}")
        git(plain, "push", "-q", "origin", "HEAD:refs/heads/floor")
        deep_t.append(time.perf_counter() - start)
    p, fl, dp, lib, sv = (statistics.median(x)
                          for x in (put_t, floor_t, deep_t, lib_t, served_t))
    print(f"`atlas put` with auto sync to a local bare remote: {p * 1000:.0f} ms; floor "
          f"(git fetch + add + commit + push of one file) {fl * 1000:.0f} ms at the root, "
          f"{dp * 1000:.0f} ms where a put writes it; ratio {p / fl:.2f} / {p / dp:.2f} "
          f"(target <= 1.5); through the command server (ATLAS_SERVER) {sv * 1000:.0f} ms, "
          f"ratio {sv / fl:.2f} / {sv / dp:.2f}; the library's synced write alone "
          f"{lib * 1000:.0f} ms, ratio {lib / fl:.2f} / {lib / dp:.2f}; `atlas --version` "
          f"{version_ms(env):.0f} ms (median of {rounds})")


def startup_floors(rounds: int, env: dict[str, str]) -> None:
    py = sys.executable
    commands = {
        "python -c pass": [py, "-c", "pass"],
        "+ import click": [py, "-c", "import click"],
        "+ import click, yaml": [py, "-c", "import click, yaml"],
        "`atlas --version`": [*atlas_argv(), "--version"],
        "imports of `atlas sync`": [py, "-c", "import atlas_files.launch, atlas_files.cli, "
                                    "atlas_files.cli.sync, atlas_files.storage.record"],
        "imports of `atlas put`": [py, "-c", "import atlas_files.launch, atlas_files.cli, "
                                   "atlas_files.cli.core, atlas_files.sync.run, "
                                   "atlas_files.storage.record"],
    }
    medians = interleaved(commands, rounds, env)
    print("start-up floors of a whole command (no record, no git): " + "; ".join(
        f"{name} {ms * 1000:.0f} ms" for name, ms in medians.items())
        + f" (median of {rounds})")


def version_ms(env: dict[str, str]) -> float:
    return statistics.median(timed([*atlas_argv(), "--version"], Path.cwd(), env)
                             for _ in range(5)) * 1000


def _writer(clone: str, who: str, seconds: float, start: Any, out: str, topic: str) -> None:
    # sync=False: the engine's steps are run here, around a put that must not sync again.
    worker = Worker.open(clone, who, sync=False)
    cfg = worker.record.config.sync
    assert cfg is not None
    retries: list[int] = []
    landed: list[int] = []
    lost = 0
    removed = 0
    failures: list[str] = []
    start.wait()
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        # synced_write's own steps, kept open here to read how many pushes lost the race.
        engine = Engine(worker.record, cfg, who)
        try:
            with engine.local.session(60) as died_at:
                engine.start(died_at)
                engine.commit_and_pull("sync")
                engine.exchange()
                n = worker.record.artifact_stream(topic, worker.project).latest()
                written = core.put(worker, topic, f"write {len(landed)} of {who}\n",
                                   expect=n)
                engine.commit_local(f"put {topic} v{written.version}")
                engine.exchange()
        except Exception as exc:  # noqa: BLE001 - counted and reported, never hidden
            failures.append(f"{type(exc).__name__}: {exc}")
            if len(failures) > 20:
                break
            continue
        finally:
            removed += len(engine.tally.drafts_removed)
        if engine.tally.collisions:
            lost += 1
            continue  # told it lost: its version is a draft, not a landed write
        retries.append(engine.tally.retries)
        landed.append(written.version)
    Path(out).write_text(json.dumps({"retries": retries, "landed": landed, "lost": lost,
                                     "removed": removed, "failures": failures[:3]}))


def _versions(folder: Path) -> dict[int, tuple[str, float]]:
    """Each version of a topic's folder: its author and when it was written (epoch s)."""
    out = {}
    for f in folder.glob("*.v*.md"):
        meta = frontmatter.parse(f.read_bytes()).meta
        out[meta["version"]] = (meta["author"], timeutil.parse_time(
            str(meta["written_at"])).timestamp())
    return out


def _stale_drafts(clone: Path, on_remote: dict[int, tuple[str, float]]) -> tuple[int, int]:
    """(drafts waiting in ``clone``, those a later version by the same writer, written
    after the draft was kept, superseded: one on the remote, or another draft)."""
    kept = {}
    for draft in (clone / layout.DRAFTS).rglob("*.md"):
        meta = frontmatter.parse(draft.read_bytes()).meta
        kept[draft] = (meta["version"], meta["author"], timeutil.parse_time(
            str(meta["written_at"])).timestamp())
    later = [*on_remote.items(), *((n, (who, at)) for n, who, at in kept.values())]
    stale = sum(any(m > n and who == author and at > draft.stat().st_mtime
                    for m, (who, at) in later)
                for draft, (n, author, _) in kept.items())
    return len(kept), stale


def simulation(root: Path, clones: int, seconds: float, one_topic: bool) -> None:
    remote, first = make_team(root / "sim", 0, auto=True)
    paths = []
    for i in range(clones):
        path = root / "sim" / f"c{i:02d}"
        git(root, "clone", "-q", str(remote), str(path))
        accept(path)
        paths.append(path)
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    outs = [root / "sim" / f"out{i}.json" for i in range(clones)]
    procs = [ctx.Process(target=_writer, args=(str(p), f"w{i:02d}", seconds, start,
                                               str(o), "shared" if one_topic else f"t-w{i:02d}"))
             for i, (p, o) in enumerate(zip(paths, outs, strict=True))]
    for p in procs:
        p.start()
    time.sleep(1.0)
    t0 = time.monotonic()
    start.set()
    for p in procs:
        p.join()
    elapsed = time.monotonic() - t0
    results = [json.loads(o.read_text()) for o in outs]
    retries = sorted(r for res in results for r in res["retries"])
    landed = sum(len(res["landed"]) for res in results)
    failures = [f for res in results for f in res["failures"]]
    check = root / "sim" / "check"
    git(root, "clone", "-q", str(remote), str(check))
    missing = left = stale = 0
    for i, res in enumerate(results):
        topic = check / "projects" / "main" / "artifacts" / (
            "shared" if one_topic else f"t-w{i:02d}")
        on_remote = _versions(topic)
        who = f"w{i:02d}"
        missing += sum(on_remote.get(n, ("",))[0] != who for n in res["landed"])
        waiting, superseded = _stale_drafts(paths[i], on_remote)
        left += waiting
        stale += superseded
    merges = git(check, "rev-list", "--min-parents=2", "--count", "HEAD")
    p50 = retries[len(retries) // 2] if retries else 0
    p99 = retries[min(len(retries) - 1, int(len(retries) * 0.99))] if retries else 0
    print(f"{clones} clones writing to one remote for {seconds:.0f} s ({elapsed:.0f} s with "
          f"the stragglers' last write): {landed / elapsed:.1f} writes landed/s ({landed:,} "
          f"in all); retries per write p50 {p50}, p99 {p99}, max {retries[-1] if retries else 0}; "
          f"{missing} landed writes missing from the remote, {merges} merge commits, "
          f"{sum(r['lost'] for r in results)} writes lost a race (each kept as a draft, "
          f"exit 3); {len(failures)} writes failed"
          + (f" (e.g. {failures[0]})" if failures else "") + f"; {os.cpu_count()} CPUs")
    print(f"drafts: {left} wait in the clones, {stale} of them superseded by a later version "
          f"of the same writer, landed or a draft itself (target 0); the syncs removed "
          f"{sum(r['removed'] for r in results)} so superseded")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--clones", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--one-topic", action="store_true",
                        help="every clone writes the same topic (the race drafts come of)")
    parser.add_argument("--skip", default="", help="comma-separated: noop,put,floors,sim")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        (home / "gitconfig").write_text(GITCONFIG)
        # The bench's own config folder: its clones' sync acceptances stay out of yours.
        os.environ.update({"GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
                           "GIT_CONFIG_NOSYSTEM": "1",
                           "XDG_CONFIG_HOME": str(home / "config")})
        env = clean_env()
        print(f"git {git(root, 'version')}; {os.cpu_count()} CPUs; under {root}")
        with command_server(env) as served:
            if "noop" not in skip:
                noop_sync(root, args.files, args.rounds, env, served)
            if "put" not in skip:
                put_auto(root, args.rounds, env, served)
        if "floors" not in skip:
            startup_floors(args.rounds, env)
        if "sim" not in skip:
            simulation(root, args.clones, args.seconds, args.one_topic)


if __name__ == "__main__":
    main()
