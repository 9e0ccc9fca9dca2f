"""The record on a real distributed file system: MooseFS, mounted twice on this machine.

Two mounts of one volume stand for two machines sharing it (each mfsmount is a client of
its own, with its own cache and session). Writers are real OS processes on both mounts:
versions raced, a lease raced, writers killed with SIGKILL mid-publish and read from the
other mount, receipts and telemetry rows written from both; then `atlas check`, the site
build and `atlas doctor` run on the other mount. tests/support/moosefs.py starts the volume in a
private network namespace; without root, FUSE or the packages these tests skip, and with
ATLAS_REQUIRE_MOOSEFS set (CI) they fail instead.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import moosefs
from support.runner import atlas_command, child_env
from support.writers import KILLED_WRITER  # writes big versions until it is killed

from atlas_files.facts import layout
from atlas_files.protocol import artifacts, tasks
from atlas_files.storage import frontmatter, receipts
from atlas_files.storage.record import Record

RESOURCE = "gpubox.gpu0"
FAKETIME = shutil.which("faketime")


@pytest.fixture(scope="module")
def volume(tmp_path_factory: pytest.TempPathFactory) -> Iterator[moosefs.MooseFS]:
    reason = moosefs.unavailable()
    if reason is not None:
        if os.environ.get(moosefs.REQUIRE_ENV):
            pytest.fail(f"{moosefs.REQUIRE_ENV} is set, but {reason}")
        pytest.skip(reason)
    fs = moosefs.MooseFS(tmp_path_factory.mktemp("moosefs")).start()
    try:
        yield fs
    finally:
        fs.stop()
    assert fs.left_behind() == [], "the fixture left mounts or processes behind"


@pytest.fixture
def two(volume: moosefs.MooseFS, request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """A fresh record on the volume, as each of the two mounts sees it."""
    name = request.node.name.replace("[", "-").replace("]", "")[:60]
    a, b = (m / name for m in volume.mounts)
    Record.init(a, ["web"])
    return a, b


def atlas(*args: str, record: Path, identity: str | None = None, input: str | None = None,
          clock: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`atlas` as a separate process (python -m atlas_files), run from outside the volume;
    ``clock``: an offset for faketime (``-8s``) that this process's clock runs at."""
    argv = atlas_command("--record", str(record))
    if clock is not None:
        assert FAKETIME is not None
        argv = [FAKETIME, "-f", clock, *argv]
    if identity:
        argv += ["--as", identity]
    return subprocess.run([*argv, *args], input=input, capture_output=True, text=True,
                          env=child_env(), timeout=timeout, cwd=Path(__file__).parents[1],
                          stdin=None if input is not None else subprocess.DEVNULL)


def spawn(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=child_env(), cwd=Path(__file__).parents[1])


def finish(procs: list[subprocess.Popen[str]], timeout: float = 180) -> list[str]:
    """Each child's stdout once it exits 0; a child still running is killed by its pid."""
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=timeout)
            assert p.returncode == 0, f"a child failed with {p.returncode}"
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
    return outs


def test_the_two_mounts_are_two_clients_of_one_volume(volume: moosefs.MooseFS) -> None:
    a, b = volume.mounts
    assert os.path.ismount(a) and os.path.ismount(b) and a != b
    (a / "hello").write_text("from a\n")
    assert (b / "hello").read_text() == "from a\n"
    os.unlink(b / "hello")
    assert not (a / "hello").exists()
    # One client process per mount, each inside the volume's own network namespace.
    assert volume.netns is not None
    clients = [pid for pid in moosefs.processes_in(volume.netns)
               if "mfsmount" in Path(f"/proc/{pid}/cmdline").read_text()]
    assert len(clients) == 2
    assert moosefs.netns_of(os.getpid()) != volume.netns
    # A flock taken through one client excludes the other: MooseFS keeps it at its master
    # (docs/index.md says so; receipts of one identity rely on it here).
    held = os.open(a / "lock", os.O_RDWR | os.O_CREAT)
    other = os.open(b / "lock", os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(held)
        os.close(other)
    os.unlink(a / "lock")


# Reads the latest version (recording its receipt), writes the next one; on the stop sign
# reads again. Prints every attempt with its outcome, so each body can be accounted for.
WRITER = r"""
import json, sys
from atlas_files.protocol import artifacts
from atlas_files.facts.errors import NotFound, VersionConflict
from atlas_files.storage.record import Record
root, who, wanted = sys.argv[1], sys.argv[2], int(sys.argv[3])
record = Record(root)
sys.stdin.readline()  # everyone starts together
log, n = [], 0
while sum(ok for _, ok in log) < wanted:
    try:
        artifacts.get(record, "plan", reader=who)
    except NotFound:
        pass
    body = f"{who} attempt {n}\n"
    n += 1
    try:
        artifacts.put(record, "plan", body, author=who)
        log.append((body, True))
    except VersionConflict:
        log.append((body, False))
print(json.dumps(log))
"""


def _versions(topic: Path) -> list[frontmatter.Parsed]:
    names = sorted(p.name for p in topic.iterdir() if not p.name.startswith("."))
    numbers = [int(n.split(".v")[1].split(".")[0]) for n in names]
    assert numbers == list(range(1, len(numbers) + 1)), "versions must be 1..N, no gap"
    parsed = [frontmatter.parse((topic / name).read_bytes()) for name in names]
    for number, doc in zip(numbers, parsed, strict=True):
        assert doc.meta["version"] == number and doc.meta["based_on"] == number - 1
        assert doc.digest_ok is True, f"version {number} is torn"
    return parsed


def test_writers_on_both_mounts_race_for_versions(two: tuple[Path, Path]) -> None:
    a, b = two
    writers = [spawn(WRITER, root, f"{side}{i}", 8)
               for i in range(3) for side, root in (("a", a), ("b", b))]
    for w in writers:
        assert w.stdin is not None
        w.stdin.write("go\n")
        w.stdin.flush()
    logs = [json.loads(out) for out in finish(writers)]
    written = [body for log in logs for body, ok in log if ok]
    refused = [body for log in logs for body, ok in log if not ok]
    assert len(written) == 6 * 8
    # Read back through the other mount: every version once, gap-free, each based on the
    # one before; every written body on disk exactly once, no refused body at all.
    on_disk = [doc.body.decode() for doc in _versions(b / "projects/web/artifacts/plan")]
    assert len(on_disk) == len(written)
    assert collections.Counter(on_disk) == collections.Counter(written)
    assert not set(refused) & set(on_disk)
    assert refused, "six writers on two mounts must have met the stop sign"

    # The CLI, four writers (two per mount) for the same next version: one exit 0, three
    # exit 3 and nothing written by them.
    latest = len(on_disk)
    procs = [subprocess.Popen(
        atlas_command("--record", str(root), "--as", f"cli{i}", "put", "plan", "--expect",
                      str(latest), "-f", "-"), stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env())
        for i, root in enumerate((a, b, a, b))]
    for i, p in enumerate(procs):
        assert p.stdin is not None
        p.stdin.write(f"cli {i}\n".encode())
        p.stdin.close()
    codes = sorted(p.wait(timeout=120) for p in procs)
    for p in procs:
        assert p.stderr is not None
        p.stderr.close()
    assert codes == [0, 3, 3, 3]
    after = _versions(a / "projects/web/artifacts/plan")
    assert len(after) == latest + 1 and after[-1].body.decode().startswith("cli ")


# A contender for the lease: on "claim" it claims, on "release" it gives the lease back.
CONTENDER = r"""
import sys
from atlas_files.protocol import leases
from atlas_files.facts.errors import LeaseHeld
from atlas_files.storage.record import Record
root, who = sys.argv[1], sys.argv[2]
record = Record(root)
for line in sys.stdin:
    if line.strip() == "claim":
        try:
            lease = leases.claim(record, "gpubox.gpu0", holder=who, duration_s=300,
                                 why="race")
            print(f"won {lease.generation}", flush=True)
        except LeaseHeld:
            print("held", flush=True)
    else:
        leases.release(record, "gpubox.gpu0", holder=who)
        print("released", flush=True)
"""


def test_a_lease_raced_from_both_mounts_has_one_winner_a_round(two: tuple[Path, Path]) -> None:
    a, b = two
    who = [f"{side}{i}" for i in range(3) for side in "ab"]
    procs = [spawn(CONTENDER, a if name[0] == "a" else b, name) for name in who]
    winners = []
    try:
        for _ in range(8):
            for p in procs:
                assert p.stdin is not None
                p.stdin.write("claim\n")
                p.stdin.flush()
            answers = []
            for p in procs:
                assert p.stdout is not None
                answers.append(p.stdout.readline().strip())
            won = [i for i, text in enumerate(answers) if text.startswith("won")]
            assert len(won) == 1, f"one winner a round, got {answers}"
            assert all(t == "held" for i, t in enumerate(answers) if i != won[0])
            winners.append(who[won[0]])
            winner = procs[won[0]]
            assert winner.stdin is not None and winner.stdout is not None
            winner.stdin.write("release\n")
            winner.stdin.flush()
            assert winner.stdout.readline().strip() == "released"
    finally:
        finish(procs, timeout=60)  # closes their stdin: each contender then exits
    gens = sorted((b / "leases" / RESOURCE).iterdir())
    data = [json.loads(g.read_text()) for g in gens]
    assert [d["generation"] for d in data] == list(range(1, 17))
    assert [d["holder"] for d in data[0::2]] == winners  # claim, release, claim, ...
    assert all(d["action"] == "release" for d in data[1::2])
    # Both mounts measured their clocks against the same master: no skew between them.
    clocks = [d["writer_clock"]["ahead_of_volume_s"] for d in data]
    assert max(clocks) - min(clocks) < 2.5


def test_writers_killed_mid_publish_on_one_mount_leave_nothing_torn_on_the_other(
        two: tuple[Path, Path]) -> None:
    a, b = two
    rng = random.Random(29)
    kills = 0
    for _ in range(4):
        batch = [spawn(KILLED_WRITER, a, f"k{j}") for j in range(4)]
        time.sleep(1.0 + rng.random() * 0.3)  # long enough to be writing
        for p in batch:
            time.sleep(rng.random() * 0.05)
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            kills += 1
        for p in batch:
            for stream in (p.stdin, p.stdout):
                if stream is not None:
                    stream.close()
    topic_b = b / "projects/web/artifacts/plan"
    count = len(_versions(topic_b))
    assert count > 0
    # What readers on the other mount show: every version whole, no temp file anywhere.
    history = atlas("history", "plan", "--json", record=b)
    assert history.returncode == 0, history.stderr
    shown = json.loads(history.stdout)
    text = json.dumps(shown)
    assert layout.TEMP_PREFIX not in text
    listed = atlas("ls", "--json", record=b)
    assert listed.returncode == 0 and json.loads(listed.stdout)["topics"][0]["version"] == count
    got = atlas("get", "plan", "--json", record=b, identity="survivor")
    assert got.returncode == 0
    assert json.loads(got.stdout)["body"] == _versions(topic_b)[-1].body.decode()
    check = atlas("check", "--json", record=b)
    assert check.returncode == 0, check.stdout
    # A write from the other mount goes on from there.
    put = atlas("put", "plan", "-f", "-", record=b, identity="survivor", input="calm\n")
    assert put.returncode == 0, put.stderr
    assert len(_versions(topic_b)) == count + 1


# Reads its topics as one identity (each read updates that identity's receipts row).
READER = r"""
import sys
from atlas_files.protocol import artifacts
from atlas_files.storage.record import Record
root, topics = sys.argv[1], sys.argv[2].split(",")
record = Record(root)
sys.stdin.readline()
for _ in range(3):
    for topic in topics:
        artifacts.get(record, topic, reader="reader")
"""

# Replaces one telemetry row again and again, each write self-describing.
ROW_WRITER = r"""
import sys
from atlas_files.storage.record import Record
from atlas_files.protocol.telemetry import rows
record, me = Record(sys.argv[1]), sys.argv[2]
sys.stdin.readline()
for n in range(60):
    tag = f"{me}-{n}"
    rows.write_row(record, {
        "machine": "box", "observed_at": "2026-01-01T00:00:00Z", "observer": me,
        "reachable": True, "error": None, "host": tag,
        "nvml": {"available": True, "reason": None},
        "gpus": [{"index": k, "uuid": f"{tag}-{k}", "name": "x" * n, "memory_used_mib": n,
                  "memory_total_mib": 100, "processes": []} for k in range(n % 5)]})
"""

ROW_READER = r"""
import json, sys
path = sys.argv[1]
sys.stdin.readline()
reads = bad = 0
while reads < 400:
    try:
        with open(path, "rb") as fh:
            row = json.loads(fh.read())
        me, _, n = row["host"].rpartition("-")
        ok = (len(row["gpus"]) == int(n) % 5 and row["observer"] == me
              and all(g["uuid"] == f"{row['host']}-{g['index']}" for g in row["gpus"]))
    except FileNotFoundError:
        ok = True  # not written yet
    except Exception:
        ok = False
    reads += 1
    bad += not ok
print(json.dumps({"reads": reads, "bad": bad}))
"""


def test_receipts_and_telemetry_written_from_both_mounts(two: tuple[Path, Path]) -> None:
    a, b = two
    record = Record(a)
    topics = [f"t{i:02d}" for i in range(12)]
    for topic in topics:
        artifacts.put(record, topic, f"{topic}\n", author="writer")
    groups = [topics[i::4] for i in range(4)]
    readers = [spawn(READER, a if i % 2 else b, ",".join(group))
               for i, group in enumerate(groups)]
    writers = [spawn(ROW_WRITER, root, f"w{side}") for side, root in (("a", a), ("b", b))]
    row_readers = [spawn(ROW_READER, root / "telemetry" / "box.json") for root in (b, a)]
    everyone = readers + writers + row_readers
    for p in everyone:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = finish(everyone)
    # No lost update of one identity's receipts, though its readers ran on two mounts.
    marks = receipts.read(Record(b), "reader")
    assert {receipts.artifact_key("web", t) for t in topics} <= set(marks)
    for out in outs[-2:]:
        seen = json.loads(out)
        assert seen == {"reads": 400, "bad": 0}
    row = json.loads((b / "telemetry" / "box.json").read_text())
    assert row["host"].endswith("-59")


def test_check_site_and_doctor_on_the_other_mount(two: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    a, b = two
    assert atlas("put", "plan", "-f", "-", record=a, identity="ann",
                 input="# Plan\n\nfrom mount a\n").returncode == 0
    assert atlas("lease", "claim", RESOURCE, "--for", "10m", "--why", "training",
                 record=a, identity="ann").returncode == 0
    assert atlas("decide", "--topic", "where", "--recommended", "a", "--chosen", "a",
                 "--relation", "agreed", "--why", "both mounts", record=a,
                 identity="ann").returncode == 0
    check = atlas("check", "--json", record=b)
    assert check.returncode == 0 and json.loads(check.stdout)["ok"] is True, check.stdout
    out = tmp_path / "site"
    built = atlas("site", "build", "--out", str(out), "--json", record=b)
    assert built.returncode == 0, built.stderr
    board = next(out.rglob("leases*.html")).read_text()
    assert RESOURCE in board and "training" in board
    assert "from mount a" in next(out.rglob("plan*.html")).read_text()

    doctor = atlas("doctor", "--json", record=b)
    report = json.loads(doctor.stdout)
    verdicts = {c["name"]: c["verdict"] for c in report["checks"]}
    for name in ("hard_links", "exclusive_create", "atomic_rename", "folder_fsync", "locks",
                 "case_sensitivity", "clock"):
        assert verdicts[name] == "ok", report
    assert report["volume"]["type"] == "fuse"
    assert report["volume"]["source"].startswith("mfs#")
    assert report["volume"]["clock"]["resolution_s"] == 1.0  # MooseFS keeps whole seconds
    assert doctor.returncode == 0
    assert not [p for p in (b / layout.CACHE).iterdir() if p.name.startswith("doctor-")]


@pytest.mark.skipif(FAKETIME is None and not os.environ.get("ATLAS_REQUIRE_FAKETIME"),
                    reason="faketime is not installed (apt-get install faketime)")
def test_a_writer_whose_clock_runs_behind_is_flagged_across_mounts(
        two: tuple[Path, Path]) -> None:
    a, b = two
    claimed = atlas("lease", "claim", RESOURCE, "--for", "10m", "--why", "slow clock",
                    "--json", record=a, identity="slow", clock="-8s")
    assert claimed.returncode == 0, claimed.stderr
    ls = atlas("lease", "ls", "--json", record=b)
    (row,) = json.loads(ls.stdout)["leases"]
    # Measured through the master's clock, which both mounts share: about 8 s, give or
    # take the second MooseFS stamps in.
    assert -10.5 < row["clock_skew_s"] < -5.5
    assert "behind this machine's" in row["clock_warning"]
    doctor = atlas("doctor", "--json", record=b, clock="-8s")
    clock = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "clock")
    assert clock["verdict"] == "degraded" and "behind the volume's" in clock["detail"]
    assert doctor.returncode == 0  # degraded, not unsafe: within clock_tolerance


def test_the_volume_is_torn_down_even_when_a_test_fails(tmp_path: Path) -> None:
    reason = moosefs.unavailable()
    if reason is not None:
        if os.environ.get(moosefs.REQUIRE_ENV):
            pytest.fail(f"{moosefs.REQUIRE_ENV} is set, but {reason}")
        pytest.skip(reason)
    seen: list[moosefs.MooseFS] = []
    with pytest.raises(RuntimeError, match="a test failed here"):
        with moosefs.moosefs(tmp_path / "fs", mounts=1) as fs:
            seen.append(fs)
            (fs.mounts[0] / "open").write_text("held open")
            holder = open(fs.mounts[0] / "open")  # noqa: SIM115 - still open at teardown
            raise RuntimeError("a test failed here")
    with contextlib.suppress(OSError):  # its mount is gone: closing says so
        holder.close()
    (fs,) = seen
    assert fs.left_behind() == []
    assert fs.netns is not None and moosefs.processes_in(fs.netns) == []
    assert not os.path.ismount(fs.mounts[0])


def test_tasks_raced_from_both_mounts(two: tuple[Path, Path]) -> None:
    """Eight processes on each mount: one claim of one task has one winner and fifteen
    exits 4; then `task next` on sixteen ready tasks takes sixteen different ones."""
    a, b = two
    one = tasks.add(Record(a), "web", title="the one job", author="alice").id
    mounts = [a if i % 2 else b for i in range(16)]

    def race(*args: str) -> list[subprocess.CompletedProcess[str]]:
        procs = [subprocess.Popen(
            [*atlas_command("--record", str(m), "--as", f"w{i:02d}"), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
            cwd=Path(__file__).parents[1], stdin=subprocess.DEVNULL)
            for i, m in enumerate(mounts)]
        out = []
        for p in procs:
            stdout, stderr = p.communicate(timeout=180)
            out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
        return out

    codes = sorted(r.returncode for r in race("task", "claim", one, "--for", "1h"))
    assert codes == [0] + [4] * 15, codes
    claims = [json.loads(g.read_text())
              for g in sorted((b / "leases" / f"task.{one}").iterdir())]
    assert [c["action"] for c in claims] == ["claim"]  # 0 double claims
    ids = {tasks.add(Record(a), "web", title=f"job {n}", author="alice").id for n in range(16)}
    results = race("task", "next", "--for", "1h", "--json")
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    taken = [json.loads(r.stdout)["task"]["id"] for r in results]
    assert sorted(taken) == sorted(ids)


def test_the_command_server_keeps_nothing_read_from_the_shared_volume(
        two: tuple[Path, Path], server: Path) -> None:
    """Another machine's write to a shared volume never reaches this kernel's queue, so
    the command server keeps no copy of a folder on it (server/watching.py): what the
    other mount writes shows in the next served listing."""
    a, b = two
    tasks.add(Record(a), "web", title="first job", author="alice")
    assert atlas("put", "plan", "--summary", "v1", record=a, identity="alice",
                 input="one\n").returncode == 0
    env = {**child_env(), "ATLAS_SERVER": str(server)}

    def served(*args: str) -> str:
        out = subprocess.run([*atlas_command("--record", str(a), "--as", "bob"), *args],
                             capture_output=True, text=True, env=env, timeout=120,
                             stdin=subprocess.DEVNULL, cwd=Path(__file__).parents[1])
        assert out.returncode == 0, out.stderr
        return out.stdout

    for _ in range(2):
        served("task", "ls")
        served("ls")
    status = json.loads(subprocess.run(
        [*atlas_command("server", "status", "--json", "--socket", str(server))],
        capture_output=True, text=True, env=child_env(), timeout=60).stdout)
    assert status["served"] >= 4
    assert not [k for k in status["kept"] if k.startswith(str(a.parent))], status["kept"]
    tasks.add(Record(b), "web", title="added on the other mount", author="carol")
    assert atlas("get", "plan", record=b, identity="carol").returncode == 0
    assert atlas("put", "plan", "--summary", "from the other mount", record=b,
                 identity="carol", input="two\n").returncode == 0
    assert "added on the other mount" in served("task", "ls")
    assert "from the other mount" in served("ls")
