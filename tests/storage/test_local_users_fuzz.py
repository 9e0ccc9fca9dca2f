"""The local-user boundary, tried as a hostile neighbour would: hypothesis draws what a
second local user (tests/support/local_user.py) plants before the user's command runs, and the
command is one of those that touch the per-user state another user could reach.

The threat: someone else on the machine who can write the shared temp folder (sticky,
as /tmp) and, in some draws, a folder above one of the user's own (writable by all, not
sticky). They may make folders there first, plant links (to the user's files, to their
own folders, to their own listening sockets), named pipes, files (huge ones included),
and listen on sockets of their own that answer as a server would, answer garbage, or
never answer. The user may also have left folders of their own there, with modes good
or bad, and a server of their own may be running.

The commands: any command with ATLAS_SERVER on (the default socket, or a path given),
`atlas server start|status|stop`, and any command reading atlas.yaml (the kept parses in
the cache folder) or probing (the approvals in the config folder).

What must hold for every draw: not a byte or descriptor reaches the other user's
sockets; nothing the user does creates, changes or removes a file where another user
could reach it (nor a file of the other user's, nor one of the user's own behind a
link); the command says what it says without them (or exits 2 with one line, for the
server's own commands), never a traceback; each run ends within its time and its memory
stays bounded; no server is left listening anywhere but a folder of the user's own; and
no probe runs on another user's approval.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings, target
from hypothesis import strategies as st
from support.local_user import Intruder, end_servers_under, servers_started_with
from support.memory import bound_kb, own_peak_kb
from support.runner import atlas_command

import atlas_files
from atlas_files.protocol.telemetry import trust
from atlas_files.server import wire
from atlas_files.storage import ownfiles, yamlcache
from atlas_files.storage.record import Record

pytestmark = pytest.mark.skipif(not wire.supported(), reason="the server needs Linux")

SECRET = "s3cret-token-for-nobody-else"
TIME_LIMIT_S = 30  # any one command, on a loaded machine; most take well under a second
MEMORY_LIMIT_KB = 512 * 1024  # peak resident memory of one command (and what it waited on)
HUGE = 8 << 30  # a sparse file: reading it whole would take 8 GiB

# Where a plant goes, named by what it is to the user's state.
PLACES = ("folder", "socket", "log", "lock", "own-folder", "own-socket", "own-log",
          "cache", "cache/atlas-files", "cache/yaml", "cache-entry", "config/atlas",
          "approvals")
KINDS = ("their-folder", "their-open-folder", "link-to-user-file", "link-to-user-folder",
         "link-to-their-folder", "link-to-their-listener", "fifo", "file", "huge-file",
         "listener-fake", "listener-garbage", "listener-hang", "listener-deaf", "entry",
         "swap-for-their-folder")
COMMANDS = ("run-default", "run-path", "server-start", "server-status", "server-stop",
            "probe")
USER_STATES = ("nothing", "own-folder-700", "own-folder-755", "own-folder-777",
               "own-explicit-folder", "own-huge-log", "server-running")


@dataclass
class Scene:
    shared: Path  # like /tmp: sticky, everyone may write
    open: Path  # everyone may write, not sticky
    vault: Path  # the user's own, private: the targets of links to the user's files
    theirs: Path  # the other user's own folder, with its listener and a hostile cache
    root: Path  # the record
    env: dict[str, str]
    places: dict[str, str]

    def user_file(self) -> Path:
        return self.vault / "notes.txt"


def _scene(top: Path, cache_open: bool, config_open: bool, explicit_open: bool) -> Scene:
    os.chmod(top, 0o755)  # the other user may come in, and write only where told below
    shared, opened, vault = top / "shared", top / "open", top / "vault"
    shared.mkdir(mode=0o700)
    os.chmod(shared, 0o1777)
    opened.mkdir()
    os.chmod(opened, 0o777)
    vault.mkdir(mode=0o700)
    (vault / "notes.txt").write_text("the user's own notes\n")
    root = vault / "rec"
    Record.init(root, ["web"])
    config = root / "atlas.yaml"
    pwned = vault / "pwned"
    config.write_text(config.read_text().replace(
        "machines: {}", f"machines:\n  box:\n    probe: touch {pwned}\n"))
    os.chmod(vault, 0o755)  # the record is shared: the other user may read it
    cache = (opened if cache_open else shared) / "cache"
    conf = (opened if config_open else shared) / "config"
    explicit = (opened if explicit_open else shared) / "mine" / "s.sock"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ATLAS_") and k != "XDG_RUNTIME_DIR"}
    env.update(TMPDIR=str(shared), XDG_CACHE_HOME=str(cache), XDG_CONFIG_HOME=str(conf),
               DEPLOY_TOKEN=SECRET, HOME=str(vault))
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        sock = wire.socket_path("1")
        cache_folder = yamlcache.folder()
        entry = yamlcache._entry(str(cache_folder), config.read_text())
        approvals = ownfiles.config_dir()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert sock is not None and cache_folder is not None and approvals is not None
    places = {
        "folder": os.path.dirname(sock), "socket": sock, "log": sock + ".log",
        "lock": sock + ".lock", "own-folder": str(explicit.parent),
        "own-socket": str(explicit), "own-log": str(explicit) + ".log",
        "cache": str(cache), "cache/atlas-files": str(cache / "atlas-files"),
        "cache/yaml": cache_folder, "cache-entry": entry,
        "config/atlas": str(approvals), "approvals": str(approvals / trust.APPROVALS_NAME),
    }
    return Scene(shared, opened, vault, shared / "theirs", root, env, places)


def _hostile_entry(scene: Scene) -> bytes:
    text = (scene.root / "atlas.yaml").read_text()
    data = {"schema_version": 1, "projects": ["web", "ml"], "default_project": "ml"}
    return json.dumps({"atlas": atlas_files.__version__, "text": text, "data": data}).encode()


def _hostile_approvals(scene: Scene) -> bytes:
    probe = f"touch {scene.vault / 'pwned'}"
    real = os.path.realpath(scene.root)
    entry = {"sha256": trust.approval_key(real, "box", probe), "record": real,
             "machine": "box", "probe": probe, "approved_at": "2026-01-01T00:00:00Z"}
    return json.dumps({"approved": [entry]}).encode()


def _their_tree(intruder: Intruder, scene: Scene) -> None:
    """The other user's own folder: a listener that answers as a server, a cache tree
    and a config tree with hostile contents, ready to be linked to or moved."""
    theirs = str(scene.theirs)
    intruder.do("mkdir", path=theirs, mode=0o777)
    for name in ("l.sock", "s.sock", os.path.basename(scene.places["socket"])):
        intruder.do("listen", path=f"{theirs}/{name}", mode="fake")
    for sub in ("atlas-files", "atlas-files/yaml", "atlas"):
        intruder.do("mkdir", path=f"{theirs}/{sub}", mode=0o700)
    entry = os.path.basename(scene.places["cache-entry"])
    intruder.do("write", path=f"{theirs}/atlas-files/yaml/{entry}",
                data=base64.b64encode(_hostile_entry(scene)).decode())
    intruder.do("write", path=f"{theirs}/atlas/{trust.APPROVALS_NAME}",
                data=base64.b64encode(_hostile_approvals(scene)).decode())


def _plant(intruder: Intruder, scene: Scene, place: str, kind: str) -> bool:
    """What the other user does at ``place``; what it may not do simply fails there.
    Whether the plant itself was made."""
    path = scene.places[place]
    theirs = str(scene.theirs)
    # What is missing on the way they make first, as folders of their own.
    missing = []
    folder = os.path.dirname(path)
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for folder in reversed(missing):
        intruder.do("mkdir", path=folder, mode=0o777)
    if kind in ("their-folder", "their-open-folder"):
        done = intruder.do("mkdir", path=path,
                           mode=0o777 if kind == "their-open-folder" else 0o700)
        if done is True and place.startswith("cache") and place != "cache-entry":
            below = {"cache": "atlas-files/yaml", "cache/atlas-files": "yaml",
                     "cache/yaml": ""}[place]
            deeper = path
            for part in filter(None, below.split("/")):
                deeper += "/" + part
                intruder.do("mkdir", path=deeper, mode=0o755)
            intruder.do("write", path=scene.places["cache-entry"],
                        data=base64.b64encode(_hostile_entry(scene)).decode())
        if done is True and place == "config/atlas":
            intruder.do("write", path=scene.places["approvals"],
                        data=base64.b64encode(_hostile_approvals(scene)).decode())
    elif kind == "link-to-user-file":
        done = intruder.do("symlink", target=str(scene.user_file()), path=path)
    elif kind == "link-to-user-folder":
        done = intruder.do("symlink", target=str(scene.vault), path=path)
    elif kind in ("link-to-their-folder", "swap-for-their-folder"):
        if kind == "swap-for-their-folder":  # only where they may rename what is not theirs
            intruder.do("rename", src=path, dst=path + ".gone")
        target = {"cache": theirs, "cache/atlas-files": theirs + "/atlas-files",
                  "cache/yaml": theirs + "/atlas-files/yaml",
                  "config/atlas": theirs + "/atlas"}.get(place, theirs)
        done = intruder.do("symlink", target=target, path=path)
    elif kind == "link-to-their-listener":
        done = intruder.do("symlink", target=theirs + "/l.sock", path=path)
    elif kind == "fifo":
        done = intruder.do("mkfifo", path=path)
    elif kind == "file":
        done = intruder.do("write", path=path,
                           data=base64.b64encode(b"\xff\x00garbage\n").decode())
    elif kind == "huge-file":
        done = intruder.do("write", path=path, size=HUGE)
    elif kind.startswith("listener-"):
        done = intruder.do("listen", path=path, mode=kind.removeprefix("listener-"))
    else:
        data = _hostile_approvals(scene) if place == "approvals" else _hostile_entry(scene)
        done = intruder.do("write", path=path, data=base64.b64encode(data).decode())
    return done is True


def _user_state(scene: Scene, state: str) -> None:
    folder = Path(scene.places["folder"])
    if state.startswith("own-folder-"):
        folder.mkdir()
        os.chmod(folder, int(state.removeprefix("own-folder-"), 8))
    elif state == "own-huge-log":  # a log of the user's own that grew and grew
        folder.mkdir(mode=0o700)
        with open(scene.places["log"], "wb") as log:
            log.truncate(HUGE)
    elif state == "own-explicit-folder":
        Path(scene.places["own-folder"]).mkdir(mode=0o700)
    elif state == "server-running":
        started = _atlas(scene, ["server", "start", "--json"], {"ATLAS_SERVER": "1"})
        assert started.code == 0, started.err


@dataclass
class Ran:
    code: int
    out: str
    err: str
    seconds: float
    max_rss_kb: int
    inherited_kb: int  # this test process's peak resident memory when it started the child


def _atlas(scene: Scene, args: list[str], extra: dict[str, str]) -> Ran:
    """One `atlas` process, timed, with its peak memory (wait4's, which covers what it
    waited for too); killed past TIME_LIMIT_S."""
    start = time.monotonic()
    inherited = own_peak_kb()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(atlas_command(*args),
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 env={**scene.env, **extra}, cwd=scene.vault)
        deadline = start + TIME_LIMIT_S
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                child.kill()
                os.wait4(child.pid, 0)
                raise AssertionError(f"atlas {' '.join(args)} ran past {TIME_LIMIT_S} s")
            time.sleep(0.01)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Ran(child.returncode, out.read().decode(errors="replace"),
                   err.read().decode(errors="replace"), time.monotonic() - start,
                   usage.ru_maxrss, inherited)


def _run(scene: Scene, command: str) -> Ran:
    status = ["--record", str(scene.root), "status", "show", "--json"]
    if command == "run-default":
        return _atlas(scene, status, {"ATLAS_SERVER": "1"})
    if command == "run-path":
        return _atlas(scene, status, {"ATLAS_SERVER": scene.places["own-socket"]})
    if command == "probe":
        return _atlas(scene, ["--record", str(scene.root), "--as", "prober", "telemetry",
                              "probe", "box"], {"ATLAS_SERVER": "1"})
    verb = command.removeprefix("server-")
    return _atlas(scene, ["server", verb, "--json"], {"ATLAS_SERVER": "1"})


Snapshot = dict[str, tuple[int, int, int, int, bytes]]


def _snapshot(*tops: Path) -> Snapshot:
    """Every name under ``tops``: owner, type and mode, size, mtime, and the first bytes
    of a small regular file (never read from a pipe or a huge file)."""
    found: Snapshot = {}
    for top in tops:
        for folder, dirs, files in os.walk(top):
            for name in [*dirs, *files]:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except FileNotFoundError:
                    continue
                head = b""
                if stat.S_ISREG(info.st_mode) and info.st_size <= 1 << 16:
                    with open(path, "rb") as fh:
                        head = fh.read()
                found[path] = (info.st_uid, info.st_mode, info.st_size, info.st_mtime_ns,
                               head)
    return found


def _users_own_private(scene: Scene, path: str) -> bool:
    """Whether ``path`` lies in folders of the user's alone, below the sticky shared
    folder: the only places the user's command may write in what another user can
    reach (below the open folder, anything could be swapped away)."""
    if not path.startswith(str(scene.shared) + os.sep):
        return False
    folder = os.path.dirname(path)
    while folder != str(scene.shared):
        info = os.lstat(folder)
        if info.st_uid != os.geteuid() or info.st_mode & 0o022 \
                or stat.S_ISLNK(info.st_mode):
            return False
        folder = os.path.dirname(folder)
    return True


def _check(scene: Scene, intruder: Intruder, heard_before: int, command: str, ran: Ran,
           before: Snapshot, after: Snapshot) -> None:
    heard = intruder.heard()[heard_before:]
    data = [base64.b64decode(h["data"]) for h in heard]
    assert not any(SECRET.encode() in d for d in data), "the secret reached the other user"
    assert all(d == b"" for d in data) and all(h["fds"] == 0 for h in heard), heard

    assert ran.seconds < TIME_LIMIT_S
    # A long run grows this test's worker, whose peak memory each child's reading starts
    # from: a reading within it (plus the interpreter's own) is that, not the command's.
    bound = bound_kb(MEMORY_LIMIT_KB, ran.inherited_kb)
    assert ran.max_rss_kb < bound, f"{ran.max_rss_kb} KB (this process: {ran.inherited_kb} KB)"
    assert "Traceback" not in ran.err, ran.err
    assert all(line.startswith("atlas") for line in ran.err.splitlines()), ran.err
    if command.startswith("run-"):
        assert ran.code == 0, ran.err
        assert json.loads(ran.out)["project"] == "web"  # atlas.yaml's, not a planted parse
    elif command == "probe":
        assert ran.code in (0, 2), ran.err
    else:
        assert ran.code in (0, 2), ran.err
        if ran.code == 2:
            assert len(ran.err.splitlines()) <= 2
            assert "error" in json.loads(ran.out)
    assert not (scene.vault / "pwned").exists(), "a probe ran on another user's approval"
    assert scene.user_file().read_text() == "the user's own notes\n"

    me = os.geteuid()
    for path, was in before.items():
        now = after.get(path)
        if was[0] != me and now != was:
            raise AssertionError(f"the other user's {path} was changed or removed")
        if was[0] == me and now != was:
            assert _users_own_private(scene, path), f"{path} changed where others reach"
    for path, now in after.items():
        if path not in before:
            assert now[0] == me or path.startswith(str(scene.theirs)), path
            assert now[0] != me or _users_own_private(scene, path), \
                f"{path} made where others could reach"


def _servers_left_are_private(scene: Scene) -> None:
    """Every server the draw started listens in a folder of the user's alone; then all
    are ended."""
    try:
        for pid in servers_started_with(scene.shared):
            sock = _socket_of(pid)
            if sock is None:
                continue  # it ended meanwhile
            folder = os.lstat(os.path.dirname(sock))
            assert folder.st_uid == os.geteuid() and folder.st_mode & 0o077 == 0, sock
    finally:
        end_servers_under(scene.shared)


def _socket_of(pid: int) -> str | None:
    """The --socket of server ``pid``; None once it has ended. A process caught between
    its fork and its exec still shows its parent's command line (`atlas server start`,
    without --socket): it is looked at again, for at most a few seconds."""
    deadline = time.monotonic() + 5
    while True:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return None
        if b"--socket" in argv:
            return os.fsdecode(argv[argv.index(b"--socket") + 1])
        if argv == [b""]:  # a zombie: ended, not yet reaped
            return None
        assert time.monotonic() < deadline, f"a server without --socket: {argv}"
        time.sleep(0.02)


plants = st.lists(st.tuples(st.sampled_from(PLACES), st.sampled_from(KINDS)), min_size=1,
                  max_size=4)


@settings(max_examples=int(os.environ.get("ATLAS_LOCAL_USER_EXAMPLES", "45")),
          deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                HealthCheck.too_slow])
@given(planted=plants, command=st.sampled_from(COMMANDS),
       state=st.sampled_from(USER_STATES), cache_open=st.booleans(),
       config_open=st.booleans(), explicit_open=st.booleans())
def test_nothing_another_local_user_plants_leaks_runs_or_gets_written(
        intruder: Intruder, planted: list[tuple[str, str]], command: str, state: str,
        cache_open: bool, config_open: bool, explicit_open: bool) -> None:
    top = Path(tempfile.mkdtemp(prefix="atlas-luf-"))
    scene = _scene(top, cache_open, config_open, explicit_open)
    try:
        _user_state(scene, state)
        _their_tree(intruder, scene)
        for place, kind in planted:
            made = _plant(intruder, scene, place, kind)
            event(f"{kind} at {place}: {'made' if made else 'not allowed'}")
        heard_before = len(intruder.heard())
        before = _snapshot(scene.shared, scene.open)
        vault = sorted(os.listdir(scene.vault))
        ran = _run(scene, command)
        # Steered towards the slowest and the largest: the bounds are what is tried.
        target(ran.seconds, label="seconds")
        target(float(ran.max_rss_kb), label="peak KB")
        after = _snapshot(scene.shared, scene.open)
        assert sorted(os.listdir(scene.vault)) == vault
        _check(scene, intruder, heard_before, command, ran, before, after)
        _servers_left_are_private(scene)
    finally:
        end_servers_under(scene.shared)
        shutil.rmtree(top, ignore_errors=True)
