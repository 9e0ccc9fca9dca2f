"""A real distributed file system for the suite: MooseFS, mounted twice on this machine.

The master and the chunkserver run inside a private network namespace made for them
(``unshare -n``): a chunkserver refuses to register from a loopback address, so the
namespace gets a veth pair with addresses of its own, and nothing it listens on can be
reached from outside. Each ``mfsmount`` is started inside the namespace too (it has to
reach the master), but the mount itself lands in this machine's mount table, so two
mounts of one volume stand for two machines sharing it: each client has its own cache
and its own session with the master.

Every process started here is ended by its pid; mounts are unmounted; the namespace goes
with its last process (``stop`` checks that none is left in it). ``unavailable()`` says
why the fixture cannot run here (not root, no /dev/fuse, packages missing), so tests
skip with that reason; with ATLAS_REQUIRE_MOOSEFS set (CI), they fail instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REQUIRE_ENV = "ATLAS_REQUIRE_MOOSEFS"
BINARIES = ("mfsmaster", "mfschunkserver", "mfsmount", "unshare", "nsenter", "ip", "umount")
EMPTY_METADATA = Path("/var/lib/mfs/metadata.mfs.empty")
MASTER_IP = "10.77.0.1"
CHUNKSERVER_IP = "10.77.0.2"
START_TIMEOUT_S = 60.0

# The namespace: loopback up, a veth pair with both ends (and both addresses) inside it.
# "ready" tells the fixture the network is up; then the shell becomes `sleep`, whose pid
# holds the namespace open until it is killed.
NETNS_SCRIPT = f"""
set -e
ip link set lo up
ip link add v0 type veth peer name v1
ip addr add {MASTER_IP}/24 dev v0
ip addr add {CHUNKSERVER_IP}/24 dev v1
ip link set v0 up
ip link set v1 up
echo ready
exec sleep 86400
"""

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Run in each child before exec: the kernel kills it if the test process dies, so a
    crashed suite leaves no daemon behind."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def unavailable() -> str | None:
    """Why MooseFS cannot be started here, or None when it can."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "the MooseFS fixture needs root (network namespace, FUSE mounts)"
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return (f"{', '.join(missing)} not installed (apt-get install moosefs-master "
                "moosefs-chunkserver moosefs-client)")
    if not EMPTY_METADATA.is_file():
        return f"{EMPTY_METADATA} is missing (moosefs-master's package installs it)"
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError as exc:
        return f"/dev/fuse cannot be opened ({exc.strerror}): FUSE mounts are not possible"
    probe = subprocess.run(["unshare", "-n", "ip", "link", "add", "v0", "type", "veth",
                            "peer", "name", "v1"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"a network namespace with a veth pair cannot be made: {probe.stderr.strip()}"
    return None


def netns_of(pid: int) -> int | None:
    """The inode of ``pid``'s network namespace (None: the process is gone)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def processes_in(netns: int) -> list[int]:
    """Every live process whose network namespace is ``netns``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and netns_of(int(entry)) == netns:
            with contextlib.suppress(OSError):
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry))
    return found


class MooseFS:
    """One MooseFS volume (a master and a chunkserver) and ``mounts`` mounts of it."""

    def __init__(self, base: Path, mounts: int = 2) -> None:
        self.base = base
        self.wanted = mounts
        self.mounts: list[Path] = []
        self.netns: int | None = None
        self._holder: subprocess.Popen[bytes] | None = None
        self._daemons: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._mounters: list[tuple[Path, subprocess.Popen[bytes]]] = []

    # -- starting ---------------------------------------------------------------------------

    def start(self) -> MooseFS:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        master, chunks, hdd = (self.base / n for n in ("master", "chunkserver", "hdd"))
        for folder in (master, chunks, hdd):
            folder.mkdir(parents=True)
        shutil.copyfile(EMPTY_METADATA, master / "metadata.mfs")
        (master / "mfsexports.cfg").write_text("*\t/\trw,alldirs,maproot=0:0\n")
        (master / "mfstopology.cfg").write_text("")
        common = "WORKING_USER = root\nWORKING_GROUP = root\nNICE_LEVEL = 0\n"
        (master / "mfsmaster.cfg").write_text(
            f"{common}DATA_PATH = {master}\n"
            f"EXPORTS_FILENAME = {master / 'mfsexports.cfg'}\n"
            f"TOPOLOGY_FILENAME = {master / 'mfstopology.cfg'}\n"
            # Changelogs written by the master itself, not by a helper process it forks.
            "CHANGELOG_SAVE_MODE = 1\n"
            f"MATOML_LISTEN_HOST = {MASTER_IP}\nMATOCS_LISTEN_HOST = {MASTER_IP}\n"
            f"MATOCL_LISTEN_HOST = {MASTER_IP}\n")
        (chunks / "mfshdd.cfg").write_text(f"{hdd}\n")
        (chunks / "mfschunkserver.cfg").write_text(
            f"{common}DATA_PATH = {chunks}\nHDD_CONF_FILENAME = {chunks / 'mfshdd.cfg'}\n"
            f"MASTER_HOST = {MASTER_IP}\nBIND_HOST = {CHUNKSERVER_IP}\n"
            f"CSSERV_LISTEN_HOST = {CHUNKSERVER_IP}\nHDD_LEAVE_SPACE_DEFAULT = 64MiB\n")

        self._holder = subprocess.Popen(["unshare", "-n", "sh", "-c", NETNS_SCRIPT],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        assert self._holder.stdout is not None
        line = self._holder.stdout.readline()
        if line.strip() != b"ready":
            err = self._holder.stderr.read() if self._holder.stderr else b""
            raise RuntimeError(f"the network namespace was not made: {err.decode()!r}")
        self.netns = netns_of(self._holder.pid)

        self._daemon("master", ["mfsmaster", "-f", "-c", str(master / "mfsmaster.cfg")])
        self._wait_log("master", "mfsmaster daemon initialized properly")
        self._daemon("chunkserver",
                     ["mfschunkserver", "-f", "-c", str(chunks / "mfschunkserver.cfg")])
        self._wait_log("master", "chunkserver register end")
        for i in range(self.wanted):
            where = self.base / f"mount{i}"
            where.mkdir()
            log = open(self.base / f"mount{i}.log", "wb")  # noqa: SIM115 - kept by the child
            proc = subprocess.Popen(
                self._in_netns(["mfsmount", "-f", "-H", MASTER_IP, str(where)]),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent)
            log.close()
            self._mounters.append((where, proc))
        for where, proc in self._mounters:
            self._until(functools.partial(os.path.ismount, where), f"{where} to be mounted", proc)
        self.mounts = [where for where, _ in self._mounters]
        self._until(self._writable, "the chunkserver to take a write")

    def _in_netns(self, argv: list[str]) -> list[str]:
        assert self._holder is not None
        return ["nsenter", "-t", str(self._holder.pid), "-n", *argv]

    def _daemon(self, name: str, argv: list[str]) -> None:
        log = open(self.base / f"{name}.log", "wb")  # noqa: SIM115 - kept by the child
        proc = subprocess.Popen(self._in_netns(argv), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        log.close()
        self._daemons.append((name, proc))

    def log(self, name: str) -> str:
        with contextlib.suppress(OSError):
            return (self.base / f"{name}.log").read_text(errors="replace")
        return ""

    def _wait_log(self, name: str, line: str) -> None:
        proc = dict(self._daemons)[name]
        self._until(lambda: line in self.log(name), f"{name} to log {line!r}", proc)

    def _writable(self) -> bool:
        """A file written on the first mount reads back whole on the last."""
        probe = self.mounts[0] / ".fixture-probe"
        try:
            probe.write_bytes(b"x" * 70000)
            ok = (self.mounts[-1] / probe.name).read_bytes() == b"x" * 70000
            probe.unlink()
            return ok
        except OSError:
            return False

    def _until(self, done: Callable[[], bool], what: str,
               proc: subprocess.Popen[bytes] | None = None) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not done():
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"waiting for {what}, the process exited "
                                   f"({proc.returncode}); logs: {self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}; logs: {self.logs()}")
            time.sleep(0.05)

    def logs(self) -> str:
        names = [n for n, _ in self._daemons] + [f"mount{i}" for i in range(self.wanted)]
        return " | ".join(f"{n}: {self.log(n)[-600:]!r}" for n in names)

    # -- stopping ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Unmount, then end every process by its pid: the clients first (each talks to the
        master), then the chunkserver and the master, then the namespace's holder. Each
        group is signalled at once and then waited for (each takes a second or two)."""
        for where, _ in self._mounters:
            if os.path.ismount(where):
                if subprocess.run(["umount", str(where)], capture_output=True).returncode:
                    # Something still has a file open there: detach it now, and the
                    # client's exit below ends the mount for good.
                    subprocess.run(["umount", "-l", str(where)], capture_output=True)
        _end_all([proc for _, proc in self._mounters])
        _end_all([proc for _, proc in self._daemons])
        if self._holder is not None:
            _end_all([self._holder], signal.SIGKILL)
            for stream in (self._holder.stdout, self._holder.stderr):
                if stream is not None:
                    stream.close()
        self._mounters, self._daemons, self._holder = [], [], None

    def left_behind(self) -> list[str]:
        """What `stop` failed to clean: mounts still there, processes in the namespace."""
        out = [f"mount {m}" for m in self.mounts if os.path.ismount(m)]
        if self.netns is not None:
            out += [f"process {pid} in the namespace" for pid in processes_in(self.netns)]
        return out


def _end_all(procs: list[subprocess.Popen[bytes]], sig: int = signal.SIGTERM) -> None:
    """Signal each process that still runs, then reap each; SIGKILL past 20 seconds."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, sig)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


@contextlib.contextmanager
def moosefs(base: Path, mounts: int = 2) -> Iterator[MooseFS]:
    volume = MooseFS(base, mounts).start()
    try:
        yield volume
    finally:
        volume.stop()
