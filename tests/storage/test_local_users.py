"""Another local user next to atlas's per-user state: the command server's socket folder,
the server's log, the kept parses of atlas.yaml and the probe approvals.

Each test has a real second user (tests/support/local_user.py: a process under a uid of its own)
try what such a user can: win a race by renaming a folder into place or by making it
first with links in it, listen on a socket of its own, or swap a folder above one of
yours. strace holds atlas's system call back at the moment that matters, so the race is
won every time where it can be won at all. What must hold: nothing is sent to the other
user, nothing is written through what it planted, and the command still runs (itself,
with one line saying why) and says what it would have said.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from support.local_user import Delayed, Intruder, chown_tree, servers_started_with
from support.runner import atlas_command

import atlas_files
from atlas_files.server import wire
from atlas_files.storage import yamlcache
from atlas_files.storage.record import Record

pytestmark = pytest.mark.skipif(not wire.supported(), reason="the server needs Linux")

SECRET = "s3cret-token-for-nobody-else"
T = TypeVar("T")


def victim_env(temp: Path, **extra: str) -> dict[str, str]:
    """The user's environment: no runtime folder (so the socket folder is in the shared
    temp folder, ``temp``), a secret among the variables, and ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ATLAS_") and k != "XDG_RUNTIME_DIR"}
    return {**env, "TMPDIR": str(temp), "ATLAS_SERVER": "1", "DEPLOY_TOKEN": SECRET,
            **extra}


def under(env: dict[str, str], what: Callable[..., T], *args: Any) -> T:
    """``what(*args)`` with ``env`` as the environment (where atlas would look)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return what(*args)
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    Record.init(tmp_path / "rec", ["web"])
    return tmp_path / "rec"


def _said_nothing_to(intruder: Intruder) -> None:
    """Not a byte, nor a descriptor, reached the other user's sockets (connecting is how
    atlas learns who listens, so a connection made and dropped is allowed)."""
    heard = intruder.heard()
    leaked = [base64.b64decode(h["data"]) for h in heard]
    assert not any(SECRET.encode() in data for data in leaked), "the secret reached them"
    assert all(data == b"" for data in leaked), f"the other user was sent {leaked}"
    assert all(h["fds"] == 0 for h in heard), "the terminal's descriptors reached them"


def _shows_the_status(code: int, out: str, err: str) -> None:
    assert code == 0, err
    assert json.loads(out)["project"] == "web"
    assert "Traceback" not in err


# -- the socket folder in the shared temp folder ------------------------------------------


def test_a_user_who_renames_a_folder_into_place_as_atlas_connects_is_sent_nothing(
        intruder: Intruder, shared_tmp: Path, root: Path, tmp_path: Path) -> None:
    env = victim_env(shared_tmp)
    target = under(env, wire.folder)
    sock = under(env, wire.socket_path, "1")
    assert sock is not None
    ready = shared_tmp / "ready"  # the other user's folder, with a listener of its own
    intruder.must("mkdir", path=str(ready), mode=0o777)
    intruder.must("listen", path=str(ready / os.path.basename(sock)), mode="fake")

    run = Delayed(atlas_command("--record", str(root), "status", "show", "--json"), "connect",
                  tmp_path / "trace", env=env)
    moved = intruder.do("rename", src=str(ready), dst=target) if run.reached() else None
    code, out, err = run.result()

    _said_nothing_to(intruder)
    _shows_the_status(code, out, err)
    assert moved is not True  # the folder was atlas's own before it connected
    assert os.lstat(target).st_uid == os.geteuid()
    assert os.lstat(target).st_mode & 0o777 == 0o700


@pytest.mark.parametrize("plant", ["socket", "log"])
def test_a_user_who_makes_the_folder_first_with_links_in_it_is_sent_nothing(
        plant: str, intruder: Intruder, shared_tmp: Path, root: Path,
        tmp_path: Path) -> None:
    env = victim_env(shared_tmp)
    target = under(env, wire.folder)
    sock = under(env, wire.socket_path, "1")
    assert sock is not None
    ears = shared_tmp / "ears"
    intruder.must("mkdir", path=str(ears), mode=0o777)
    intruder.must("listen", path=str(ears / "l.sock"), mode="fake")
    notes = tmp_path / "notes.txt"  # a file of the user's own that the other cannot write
    notes.write_text("mine\n")

    run = Delayed(atlas_command("--record", str(root), "status", "show", "--json"), "connect",
                  tmp_path / "trace", env=env)
    if run.reached():
        intruder.do("mkdir", path=target, mode=0o777)
        if plant == "socket":
            intruder.do("symlink", target=str(ears / "l.sock"), path=sock)
        else:
            intruder.do("symlink", target=str(notes), path=sock + ".log")
    code, out, err = run.result()
    settle(sock, shared_tmp)  # the server the command started in the background, if any

    _said_nothing_to(intruder)
    _shows_the_status(code, out, err)
    assert notes.read_text() == "mine\n"  # no server's output written through the link
    assert os.lstat(target).st_uid == os.geteuid()


@pytest.mark.parametrize("answer", ["fake", "hang"])
def test_a_socket_that_looks_like_yours_but_another_user_listens_on_is_sent_nothing(
        answer: str, intruder: Intruder, shared_tmp: Path, root: Path) -> None:
    """The folders and the socket file all pass as the user's own (root moved the other
    user's socket there and made it root's): the kernel still says who listens."""
    ears = shared_tmp / "ears"
    intruder.must("mkdir", path=str(ears), mode=0o777)
    intruder.must("listen", path=str(ears / "l.sock"), mode=answer)
    private = Path(tempfile.mkdtemp(dir=shared_tmp))
    sock = private / "s.sock"
    os.rename(ears / "l.sock", sock)
    os.lchown(sock, os.geteuid(), os.getegid())
    env = victim_env(shared_tmp, ATLAS_SERVER=str(sock))

    done = subprocess.run(atlas_command("--record", str(root), "status", "show", "--json"),
                          capture_output=True, text=True, env=env, timeout=60)
    _shows_the_status(done.returncode, done.stdout, done.stderr)
    assert "another user's process" in done.stderr and f"uid {intruder.uid}" in done.stderr
    for command in ("status", "stop"):
        asked = subprocess.run(atlas_command("server", command, "--socket", str(sock), "--json"),
                               capture_output=True, text=True, env=env, timeout=60)
        assert asked.returncode == 2, asked.stdout
        error = json.loads(asked.stdout)["error"]
        assert "another user's process" in error["message"]
    _said_nothing_to(intruder)


def test_a_folder_above_yours_that_others_may_write_is_refused_before_connecting(
        intruder: Intruder, open_tmp: Path, root: Path, tmp_path: Path) -> None:
    """ATLAS_SERVER in a folder of yours (mode 700), inside one everyone may write: the
    other user swaps yours for one of theirs just as atlas connects."""
    mine = open_tmp / "mine"
    mine.mkdir(mode=0o700)
    theirs = open_tmp / "theirs"
    intruder.must("mkdir", path=str(theirs), mode=0o777)
    intruder.must("listen", path=str(theirs / "s.sock"), mode="fake")
    env = victim_env(open_tmp, ATLAS_SERVER=str(mine / "s.sock"))

    run = Delayed(atlas_command("--record", str(root), "status", "show", "--json"), "connect",
                  tmp_path / "trace", env=env)
    if run.reached():
        intruder.do("rename", src=str(mine), dst=str(open_tmp / "gone"))
        intruder.do("rename", src=str(theirs), dst=str(mine))
    code, out, err = run.result()

    _said_nothing_to(intruder)
    _shows_the_status(code, out, err)
    assert f"others may write to {open_tmp} (mode 777)" in err
    assert err.count("\n") == 1  # one line, with what to do
    assert "ATLAS_SERVER" in err


# -- the kept parses of atlas.yaml ----------------------------------------------------------


def test_no_parse_is_kept_or_read_below_a_folder_others_may_write(
        intruder: Intruder, open_tmp: Path, root: Path, tmp_path: Path) -> None:
    """The cache folder is the user's own, but the folder above it anyone may write: the
    other user swaps it, between atlas's look at the cache and its read, for one whose
    entry for this very atlas.yaml says the default project is another."""
    cache = open_tmp / "cache"
    env = {**victim_env(open_tmp, XDG_CACHE_HOME=str(cache)), "ATLAS_SERVER": "0"}
    status = atlas_command("--record", str(root), "status", "show", "--json")
    first = subprocess.run(status, capture_output=True, text=True, env=env, timeout=60)
    _shows_the_status(first.returncode, first.stdout, first.stderr)
    kept = sorted(cache.rglob("*.json")) if cache.exists() else []

    # Whatever the first run kept, the other user now offers an entry of its own.
    text = (root / "atlas.yaml").read_text()
    folder = under(env, yamlcache.folder)
    assert folder is not None
    where = Path(folder)
    entry = Path(yamlcache._entry(str(where), text))
    fake = tmp_path / "fake-cache"
    (fake / entry.parent.relative_to(cache)).mkdir(parents=True)
    data = {"schema_version": 1, "projects": ["web", "ml"], "default_project": "ml"}
    (fake / entry.relative_to(cache)).write_text(json.dumps(
        {"atlas": atlas_files.__version__, "text": text, "data": data}))
    os.chmod(fake / entry.parent.relative_to(cache), 0o700)
    chown_tree(fake, intruder.uid)
    staged = open_tmp / "staged"
    os.rename(fake, staged)  # root moves it; from here on it is the other user's to move

    run = Delayed(status, "openat", tmp_path / "trace", path=str(entry), env=env)
    if run.reached():
        if cache.exists():
            intruder.do("rename", src=str(cache), dst=str(open_tmp / "gone"))
        intruder.do("rename", src=str(staged), dst=str(cache))
    code, out, err = run.result()
    _shows_the_status(code, out, err)
    assert kept == []  # nothing was kept where another user could take it over


# -- the probe approvals ---------------------------------------------------------------------


def test_probe_approvals_below_a_folder_others_may_write_are_refused(
        open_tmp: Path, root: Path, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    config = root / "atlas.yaml"
    config.write_text(config.read_text().replace(
        "machines: {}", f"machines:\n  box:\n    probe: touch {pwned}\n"))
    env = {**victim_env(open_tmp, XDG_CONFIG_HOME=str(open_tmp / "config")),
           "ATLAS_SERVER": "0"}
    approve = subprocess.run(atlas_command("--record", str(root), "telemetry", "approve", "box",
                                           "--yes"), capture_output=True, text=True, env=env,
                             timeout=60)
    assert approve.returncode == 2, approve.stderr
    assert f"others may write to {open_tmp}" in approve.stderr
    assert not (open_tmp / "config").exists()
    probe = subprocess.run(atlas_command("--record", str(root), "--as", "prober", "telemetry",
                                         "probe", "box"), capture_output=True, text=True, env=env,
                           timeout=60)
    assert not pwned.exists(), probe.stderr


def settle(sock: str, temp: Path, seconds: float = 15) -> None:
    """Wait until the servers a client started in the background (with ``TMPDIR=temp``)
    listen on ``sock``, or have all ended (one that refused to start says so in its log
    first)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(sock) and stat.S_ISSOCK(os.lstat(sock).st_mode) or \
                not servers_started_with(temp):
            return
        time.sleep(0.05)
