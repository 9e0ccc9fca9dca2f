"""What the volume under a record gives the protocol, measured there rather than assumed.

Each property the record's correctness or durability rests on is tried in a scratch
folder on the volume itself, by real processes where the property is about two of them:
two forked processes race to create one name (link and O_EXCL), a forked reader reads a
row while it is replaced, a forked process tries a lock another holds. Every check gives
a verdict (ok, degraded, unsafe), what it found, and what the verdict means for which
guarantee. `atlas doctor` shows them all; `atlas init` runs them and warns.

What one machine cannot see: whether a second machine's client of the same volume
excludes this one (run the doctor there too), and whether durability survives a power cut
(an fsync that returns is all that can be seen).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import select
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files.storage import volclock

OK, DEGRADED, UNSAFE = "ok", "degraded", "unsafe"
VERDICTS = (OK, DEGRADED, UNSAFE)
# How long a forked probe may take before it is killed and its check reads as hung (a
# lock over NFS can wait on a lock server that never answers).
CHILD_DEADLINE_S = 10.0
SCRATCH_PREFIX = "doctor-"

PUBLISH = ("every version, decision, correction and lease generation: each is published "
           "with link(2), which must refuse an existing name")
LIVE_ROWS = "telemetry rows, read receipts, session rows and atlas.yaml rewrites"
LOCAL_LOCKS = ("one identity's read receipts and session row, atlas.yaml rewrites, the "
               "search index and sync's lock, among processes of this machine (nothing "
               "across machines rests on a lock)")
DURABILITY = "durability of a new file's name across a power cut (not a process crash)"
LEASE_CLOCKS = ("lease expiry as other machines sharing this volume judge the leases this "
                "machine writes, and as this machine judges theirs")


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report."""

    name: str
    verdict: str  # ok | degraded | unsafe
    detail: str
    affects: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "verdict": self.verdict, "detail": self.detail,
                "affects": self.affects}


@dataclass(frozen=True)
class Mount:
    """The mount a folder lies on, from /proc/self/mountinfo (None fields: not known)."""

    point: str | None
    fs_type: str | None
    source: str | None
    options: str | None

    def to_json(self) -> dict[str, Any]:
        return {"mount_point": self.point, "type": self.fs_type, "source": self.source}


@dataclass(frozen=True)
class VolumeReport:
    folder: Path
    mount: Mount
    clock: volclock.ClockOffset | None
    checks: tuple[Check, ...]

    def to_json(self) -> dict[str, Any]:
        clock = None
        if self.clock is not None:
            clock = {"ahead_of_volume_s": round(self.clock.offset_s, 3),
                     "error_s": round(self.clock.error_s, 3),
                     "resolution_s": self.clock.resolution_s}
        return {"path": str(self.folder), **self.mount.to_json(), "clock": clock}


# -- the mount ---------------------------------------------------------------------------


_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """mountinfo writes a space, a tab, a '#' or a backslash in a field as an octal escape."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def mount_of(folder: Path) -> Mount:
    """The longest mount point that holds ``folder`` (Linux; elsewhere nothing known)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return Mount(None, None, None, None)
    real = os.path.realpath(folder)
    best: Mount = Mount(None, None, None, None)
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2:
            continue
        point = _unescape(fields[4])
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best.point or ""):
            best = Mount(point, tail[0], _unescape(tail[1]),
                         tail[2] if len(tail) > 2 else None)
    return best


def _nfs_version(mount: Mount) -> str | None:
    for option in (mount.options or "").split(","):
        if option.startswith("vers="):
            return option[5:]
    return None


def volume_check(mount: Mount) -> Check:
    if mount.fs_type is None:
        return Check("volume", OK, "the volume's type cannot be read on this system; the "
                     "checks below measured it", "nothing by itself")
    what = f"{mount.fs_type} ({mount.source}) mounted at {mount.point}"
    if mount.fs_type in ("nfs", "nfs4"):
        version = _nfs_version(mount) or ("4" if mount.fs_type == "nfs4" else None)
        if version is not None and version.split(".")[0] == "2":
            return Check("volume", UNSAFE, f"{what}, NFS version 2: it has no exclusive "
                         "create, so two writers can both believe they made one version",
                         PUBLISH)
        return Check("volume", OK, f"{what}, NFS version {version or 'unknown'}: LINK and "
                     "exclusive create are decided by the server, renames are atomic, and "
                     "clients see each other's files close-to-open (a listing may lag by "
                     "the attribute cache's time, which the stop sign absorbs)",
                     "nothing by itself; the checks below measured it")
    return Check("volume", OK, what, "nothing by itself; the checks below measured it")


# -- forked probes ------------------------------------------------------------------------


def _fork(child: Callable[[], int], close: tuple[int, ...] = ()) -> int:
    """Run ``child`` in a forked process that exits with its return value (70 if it
    raised); it calls only os functions, so a fork of a threaded parent is safe. The
    child first closes ``close``: the parent's ends of its pipes, or it would never see
    the parent close them."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        code = 70
        try:
            for fd in close:
                os.close(fd)
            code = child()
        except BaseException:  # noqa: B036, BLE001 - nothing may escape a forked child
            code = 70
        finally:
            os._exit(code)
    return pid


def _reap(pids: list[int], deadline_s: float = CHILD_DEADLINE_S) -> list[int | None]:
    """Each child's exit code, or None for one killed for running past the deadline."""
    end = time.monotonic() + deadline_s
    codes: list[int | None] = []
    for pid in pids:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                codes.append(os.waitstatus_to_exitcode(status))
                break
            if time.monotonic() > end:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                codes.append(None)
                break
            time.sleep(0.002)
    return codes


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    return exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))


# -- the checks ---------------------------------------------------------------------------


def hard_links(scratch: Path) -> Check:
    first, second = scratch / "link-a", scratch / "link-b"
    _write(first, b"a")
    try:
        os.link(first, second)
    except OSError as exc:
        return Check("hard_links", UNSAFE, f"link(2) is refused here ({_why(exc)}): atlas "
                     "cannot publish anything on this volume", PUBLISH)
    a, b = os.stat(first), os.stat(second)
    if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino) or a.st_nlink < 2:
        return Check("hard_links", DEGRADED, "link(2) made a second file rather than a "
                     "second name for the first: exclusive publish still holds if the race "
                     "below does, but a lost reply cannot be told from another's write",
                     PUBLISH)
    return Check("hard_links", OK, "link(2) gives a file a second name", PUBLISH)


# Exit bits of a racing child: which of its two creates lost (EEXIST) or failed otherwise.
_LINK_LOST, _EXCL_LOST, _LINK_FAILED, _EXCL_FAILED = 1, 2, 4, 8


def _contender(tmp: Path, target: Path, excl: Path, who: int, gate: int) -> Callable[[], int]:
    def run() -> int:
        os.read(gate, 1)  # both start when the parent opens the gate
        code = 0
        try:
            os.link(tmp, target)
        except FileExistsError:
            code |= _LINK_LOST
        except OSError:
            code |= _LINK_FAILED
        try:
            _write(excl, b"%d" % who)
        except FileExistsError:
            code |= _EXCL_LOST
        except OSError:
            code |= _EXCL_FAILED
        return code
    return run


def exclusive_create(scratch: Path, rounds: int, links: bool) -> Check:
    """``rounds`` races of two forked processes for one name, by link(2) and by O_EXCL."""
    if not hasattr(os, "fork"):
        return Check("exclusive_create", DEGRADED, "not measured: this system cannot fork",
                     PUBLISH)
    bad: list[str] = []
    for i in range(rounds):
        target, excl = scratch / f"race-{i}", scratch / f"excl-{i}"
        temps = [scratch / f"race-{i}-{who}.tmp" for who in (0, 1)]
        for who, tmp in enumerate(temps):
            _write(tmp, b"%d" % who)
        gate, opener = os.pipe()
        try:
            pids = [_fork(_contender(tmp, target, excl, who, gate), (opener,))
                    for who, tmp in enumerate(temps)]
        finally:
            os.close(gate)
        os.write(opener, b"gg")
        os.close(opener)
        codes = _reap(pids)
        if None in codes:
            bad.append(f"round {i + 1}: a racer hung")
            continue
        done = [c for c in codes if c is not None]
        if links:
            won = [who for who, c in enumerate(done) if not c & (_LINK_LOST | _LINK_FAILED)]
            if any(c & _LINK_FAILED for c in done):
                bad.append(f"round {i + 1}: link failed otherwise than 'exists'")
            elif len(won) != 1 or target.read_bytes() != b"%d" % won[0]:
                bad.append(f"round {i + 1}: {len(won)} of two links to one name succeeded")
        won = [who for who, c in enumerate(done) if not c & (_EXCL_LOST | _EXCL_FAILED)]
        if any(c & _EXCL_FAILED for c in done):
            bad.append(f"round {i + 1}: O_EXCL create failed otherwise than 'exists'")
        elif len(won) != 1 or excl.read_bytes() != b"%d" % won[0]:
            bad.append(f"round {i + 1}: {len(won)} of two O_EXCL creates of one name "
                       "succeeded")
    how = "link(2) and O_EXCL" if links else "O_EXCL (link(2) is refused, see hard_links)"
    if bad:
        return Check("exclusive_create", UNSAFE, f"two processes raced {rounds} times to "
                     f"create one name by {how}: {'; '.join(bad[:3])}", PUBLISH)
    if not links:
        return Check("exclusive_create", UNSAFE, f"two processes raced {rounds} times by "
                     f"{how}, and exactly one won each time; but atlas publishes with link(2)",
                     PUBLISH)
    return Check("exclusive_create", OK, f"two processes raced {rounds} times to create "
                 "one name by link(2) and by O_EXCL: exactly one won each race (between two "
                 "processes of this machine; run the doctor on each machine that shares "
                 "the volume)", PUBLISH)


def _row(n: int) -> bytes:
    """A row that says its own length, so a reader can tell a torn one from a whole."""
    payload = b"%d" % n * (200 + 97 * (n % 50))
    return b"%d %d\n" % (n, len(payload)) + payload


def _row_reader(target: Path, stop: int) -> Callable[[], int]:
    def run() -> int:
        missing = torn = 0
        os.set_blocking(stop, False)
        while True:
            try:
                with open(target, "rb") as fh:
                    data = fh.read()
                head, _, payload = data.partition(b"\n")
                n, size = (int(x) for x in head.split())
                if len(payload) != size or payload != b"%d" % n * (size // len(b"%d" % n)):
                    torn += 1
            except FileNotFoundError:
                missing += 1
            except (ValueError, OSError):
                torn += 1
            try:
                if os.read(stop, 1) == b"":
                    break
            except BlockingIOError:
                pass
        return (1 if missing else 0) | (2 if torn else 0)
    return run


def atomic_rename(scratch: Path, replaces: int) -> Check:
    """A forked reader reads a row while this process replaces it ``replaces`` times."""
    target = scratch / "row"
    _write(target, _row(0))
    stop, closer = os.pipe()
    try:
        pid = _fork(_row_reader(target, stop), (closer,))
    finally:
        os.close(stop)
    failure = None
    try:
        for n in range(1, replaces + 1):
            tmp = scratch / f"row-{n}.tmp"
            _write(tmp, _row(n))
            try:
                os.replace(tmp, target)
            except OSError as exc:
                failure = exc
                break
    finally:
        os.close(closer)
        (code,) = _reap([pid])
    if failure is not None:
        return Check("atomic_rename", UNSAFE, f"rename over an existing file is refused "
                     f"({_why(failure)})", LIVE_ROWS)
    if code is None or code >= 4:
        return Check("atomic_rename", DEGRADED, "not measured: the reader process hung or "
                     "failed", LIVE_ROWS)
    if code & 2:
        return Check("atomic_rename", UNSAFE, f"while a file was renamed over another "
                     f"{replaces} times, a reader in another process read a partial or "
                     "mixed file", LIVE_ROWS)
    if code & 1:
        return Check("atomic_rename", DEGRADED, f"while a file was renamed over another "
                     f"{replaces} times, a reader in another process found no file at all "
                     "for a moment (a reader then takes the row for missing)", LIVE_ROWS)
    return Check("atomic_rename", OK, f"a reader in another process saw the old file or "
                 f"the new one across {replaces} renames over it, never a missing or "
                 "partial one", LIVE_ROWS)


def folder_fsync(scratch: Path) -> Check:
    try:
        fd = os.open(scratch, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        return Check("folder_fsync", DEGRADED, f"a folder cannot be opened to fsync it "
                     f"({_why(exc)})", DURABILITY)
    try:
        os.fsync(fd)
    except OSError as exc:
        return Check("folder_fsync", DEGRADED, f"fsync of a folder is refused "
                     f"({_why(exc)}): a new file's name may be lost in a power cut",
                     DURABILITY)
    finally:
        os.close(fd)
    return Check("folder_fsync", OK, "fsync of a folder is accepted", DURABILITY)


def _lock_holder(path: Path, told: int, release: int) -> Callable[[], int]:
    def run() -> int:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.write(told, b"e%d" % (exc.errno or 0))
            return 1
        os.write(told, b"h")
        os.read(release, 1)  # hold the lock until the parent closes its end
        return 0
    return run


def _lock_contender(path: Path) -> Callable[[], int]:
    def run() -> int:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # excluded, as it should be
        except OSError:
            return 2
        return 1
    return run


def locks(scratch: Path) -> Check:
    """A forked process holds a lock; a second one must be refused it."""
    if not hasattr(os, "fork"):
        return Check("locks", DEGRADED, "not measured: this system cannot fork", LOCAL_LOCKS)
    path = scratch / "lock"
    told_r, told_w = os.pipe()
    release_r, release_w = os.pipe()
    holder = _fork(_lock_holder(path, told_w, release_r), (told_r, release_w))
    os.close(told_w)
    os.close(release_r)
    try:
        ready, _, _ = select.select([told_r], [], [], CHILD_DEADLINE_S)
        said = os.read(told_r, 16) if ready else b""
        contender_code: int | None = None
        if said == b"h":
            contender_code = _reap([_fork(_lock_contender(path), (told_r, release_w))])[0]
    finally:
        os.close(told_r)
        os.close(release_w)
        _reap([holder])
    if said.startswith(b"e"):
        code = int(said[1:] or 0)
        return Check("locks", DEGRADED, f"flock is refused here ({os.strerror(code)})",
                     LOCAL_LOCKS)
    if said != b"h" or contender_code is None:
        return Check("locks", DEGRADED, "a lock call hung (over NFS, flock can wait on a "
                     "lock server that never answers)", LOCAL_LOCKS)
    if contender_code == 1:
        return Check("locks", DEGRADED, "two processes of this machine both got one "
                     "exclusive lock: locks do not exclude here", LOCAL_LOCKS)
    if contender_code != 0:
        return Check("locks", DEGRADED, "a second process's lock attempt failed "
                     "otherwise than 'held'", LOCAL_LOCKS)
    return Check("locks", OK, "a second process of this machine is refused a lock another "
                 "holds", LOCAL_LOCKS)


def case_sensitivity(scratch: Path) -> Check:
    _write(scratch / "Case-Probe", b"")
    affects = ("files whose names differ only in case (atlas's own names are lower case; "
               "hand-written files and git checkouts from a case-sensitive machine may "
               "collide)")
    if os.path.lexists(scratch / "case-probe"):
        return Check("case_sensitivity", DEGRADED, "names that differ only in case are one "
                     "file here", affects)
    return Check("case_sensitivity", OK, "names that differ only in case are different "
                 "files", affects)


def clock(scratch: Path, allowance_s: float, tolerance_s: float,
          best: bool = True) -> tuple[Check, volclock.ClockOffset | None]:
    try:
        offset = volclock.measure_best(scratch) if best else volclock.measure(scratch)
    except OSError as exc:
        return Check("clock", DEGRADED, f"not measured: a file cannot be created here "
                     f"({_why(exc)})", LEASE_CLOCKS), None
    way = "ahead of" if offset.offset_s >= 0 else "behind"
    fine = ("; the volume stamps whole seconds" if offset.resolution_s >= 1 else "")
    detail = (f"this machine's clock is {abs(offset.offset_s):.3f} s {way} the volume's "
              f"(+/- {offset.error_s:.3f} s{fine}), from a new file's mtime as the volume "
              "stamped it")
    if offset.beyond(tolerance_s):
        return Check("clock", UNSAFE, f"{detail}: more than clock_tolerance "
                     f"({tolerance_s:g} s); leases this machine writes read as claimed in "
                     "the future elsewhere, or as long expired; fix the clock (NTP) on this "
                     "machine or the volume's server", LEASE_CLOCKS), offset
    if offset.beyond(allowance_s):
        return Check("clock", DEGRADED, f"{detail}: more than clock_skew_allowance "
                     f"({allowance_s:g} s); a machine whose clock agrees with the volume "
                     f"sees this machine's leases end up to {abs(offset.offset_s):.1f} s "
                     f"{'late' if offset.offset_s > 0 else 'early'}", LEASE_CLOCKS), offset
    return Check("clock", OK, detail, LEASE_CLOCKS), offset


# -- all of it ----------------------------------------------------------------------------


@contextlib.contextmanager
def scratch_folder(parent: Path) -> Iterator[Path]:
    """A fresh folder under ``parent`` for the probes, removed afterwards."""
    parent.mkdir(parents=True, exist_ok=True)
    folder = parent / f"{SCRATCH_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    folder.mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def probe(folder: Path, scratch_parent: Path | None = None, *, allowance_s: float = 2.0,
          tolerance_s: float = 120.0, rounds: int = 8, replaces: int = 60,
          best_clock: bool = True) -> VolumeReport:
    """Every check of the volume under ``folder``, in a scratch folder made in
    ``scratch_parent`` (default ``folder``) and removed afterwards."""
    mount = mount_of(folder)
    checks = [volume_check(mount)]
    offset = None
    try:
        with scratch_folder(scratch_parent or folder) as scratch:
            links = _measured("hard_links", PUBLISH, lambda: hard_links(scratch))
            checks += [
                links,
                _measured("exclusive_create", PUBLISH, lambda: exclusive_create(
                    scratch, rounds, links.verdict != UNSAFE)),
                _measured("atomic_rename", LIVE_ROWS, lambda: atomic_rename(scratch, replaces)),
                _measured("folder_fsync", DURABILITY, lambda: folder_fsync(scratch)),
                _measured("locks", LOCAL_LOCKS, lambda: locks(scratch)),
                _measured("case_sensitivity", "files whose names differ only in case",
                          lambda: case_sensitivity(scratch)),
            ]
            line, offset = clock(scratch, allowance_s, tolerance_s, best_clock)
            checks.append(line)
    except OSError as exc:
        # Not even a folder can be made: a record here can be read, never written.
        checks.append(Check("writable", UNSAFE, f"nothing can be created in {folder} "
                            f"({_why(exc)}), so nothing else was measured; this machine "
                            "can read a record here but write nothing", "every write"))
    return VolumeReport(folder, mount, offset, tuple(checks))


def _measured(name: str, affects: str, run: Callable[[], Check]) -> Check:
    """``run``'s check; one whose own file operations fail (a full disk, a volume that
    went away) reads as not measured, naming the error, rather than ending the report."""
    try:
        return run()
    except OSError as exc:
        return Check(name, DEGRADED, f"not measured: {_why(exc)}", affects)
