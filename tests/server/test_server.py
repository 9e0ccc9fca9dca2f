"""The command server (atlas_files/server/): real `atlas` processes, a real server.

Its promise is that a command run through it is the command run without it: the same
output, exit status, effects, environment, folder and umask; that killing `atlas` kills
the command; and that whenever the server cannot serve, `atlas` runs the command itself.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support.cmdserver import served, server_status, through, wait_for
from support.runner import Result, atlas_command, child_env, run_atlas, snapshot

from atlas_files.server import serve, watching, wire
from atlas_files.storage.record import Record

pytestmark = pytest.mark.skipif(not wire.supported(), reason="the server needs Linux")


def env_with(**extra: str) -> dict[str, str]:
    """The test's environment less every ATLAS_* variable, plus ``extra``."""
    return {**child_env(), **extra}


def test_commands_through_the_server_say_and_do_what_they_do_without_it(
        server: Path, tmp_path: Path) -> None:
    lines: list[tuple[tuple[str, ...], str | None]] = [
        (("--as", "ann", "put", "plan", "--json"), "the plan\n"),
        (("--as", "bob", "put", "plan"), "a rival plan\n"),  # never read it: 3
        (("--as", "ann", "lease", "claim", "gpu-1", "--for", "1h", "--why", "x"), None),
        (("--as", "bob", "lease", "claim", "gpu-1", "--for", "1h", "--why", "y"), None),  # held: 4
        (("put", "plan"), "no identity\n"),  # 2, with the hint
        (("get", "plan", "--json"), None),
        (("history", "plan"), None),
        (("status", "show", "--json"), None),
        (("nosuch",), None),
    ]
    results: dict[tuple[str, ...], list[Result]] = {}
    for mode in ("plain", "served"):
        root = tmp_path / mode / "rec"
        Record.init(root, ["web"])
        for args, body in lines:
            argv = ("--record", str(root), *args)
            result = (through(server, *argv, input=body) if mode == "served"
                      else run_atlas(*argv, input=body, process=True))
            results.setdefault(args, []).append(result)
    codes = [r[0].returncode for r in results.values()]
    assert codes == [0, 3, 0, 4, 2, 0, 0, 0, 2]
    def same(text: str) -> str:
        # The two records' paths and clock times differ, nothing else (and so what is
        # said of them: "1h more" in one run can be "59m more" in the other, and "12
        # seconds ago" "14 seconds ago", on a busy machine).
        text = text.replace(str(tmp_path / "plain"), "ROOT").replace(
            str(tmp_path / "served"), "ROOT")
        text = re.sub(r"for [\dhms]+ more", "for LEFT more", text)
        text = re.sub(r"\b\d+ (second|minute|hour|day)s? ago", "AGO", text)
        return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "TIME", text)

    for args, (plain, via) in results.items():
        assert via.returncode == plain.returncode, args
        assert same(via.stdout) == same(plain.stdout), args
        assert same(via.stderr) == same(plain.stderr), args
    assert served(server) == len(lines)
    assert (tmp_path / "served" / "rec" / "projects" / "web" / "artifacts" / "plan" /
            "plan.v0001.md").read_text().endswith("the plan\n")


def test_a_command_handed_to_the_server_starts_only_what_forwarding_needs(
        server: Path, tmp_path: Path) -> None:
    """The client is most of a served command's cost: it imports neither click, YAML, json
    nor typing (and the modules typing brings), only the socket and the wire's frames."""
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    env = {**child_env(), "ATLAS_SERVER": str(server)}
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "atlas_files",
                          "--record", str(root), "status", "show"], capture_output=True,
                         text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    names = [line.rpartition("|")[2] for line in out.stderr.splitlines()
             if line.startswith("import time:")]
    # What Python's own start imported (an editable install's finder among it) is not
    # the command's: the part after the site module.
    imported = {n.strip() for n in names[names.index(" site") + 1:]}
    assert "atlas_files.server.client" in imported  # it was handed over, not run here
    assert imported.isdisjoint({"click", "yaml", "json", "typing", "enum"}), sorted(imported)
    assert served(server) == 1


def test_the_worker_has_the_callers_environment_folder_and_umask(
        server: Path, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    folder = root / "projects"
    out = subprocess.run(
        ["sh", "-c", f"umask 077; exec {sys.executable} -m atlas_files put plan"],
        input=b"body\n", cwd=folder, capture_output=True,
        env=env_with(ATLAS_SERVER=str(server), ATLAS_AS="carol", ATLAS_PROJECT="web"))
    assert out.returncode == 0, out.stderr
    version = root / "projects" / "web" / "artifacts" / "plan" / "plan.v0001.md"
    assert 'author: "carol"' in version.read_text()  # the identity from its environment
    assert version.parent.stat().st_mode & 0o077 == 0  # a new folder, made with its umask
    assert served(server) == 1  # found the record upward from its own folder


def test_killing_atlas_kills_the_command_it_handed_over(server: Path, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    before = snapshot(root)
    for how in (signal.SIGKILL, signal.SIGTERM):
        client = subprocess.Popen(
            atlas_command("--record", str(root), "--as", "ann", "put", "plan"),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env_with(ATLAS_SERVER=str(server)))
        assert client.stdin is not None
        client.stdin.write(b"half a body")
        client.stdin.flush()
        wait_for(lambda: server_status(server)["in_progress"] == 1)  # the worker reads stdin
        client.send_signal(how)
        client.wait(10)
        # Were the worker alive, the end of its input would make it write the version.
        client.stdin.close()
        wait_for(lambda: server_status(server)["in_progress"] == 0)
        assert client.returncode == -how
        assert snapshot(root) == before, how


def test_a_worker_whose_atlas_is_killed_before_it_runs_does_nothing(
        server: Path, tmp_path: Path) -> None:
    """The race behind an old flake of the test above: the client killed while its worker
    is still starting (here: the spare stopped until after the kill). The worker learned
    of its client's death from a thread of its own, which the command could outrun by a
    few milliseconds: long enough to print, or to make a folder."""
    for round in range(6):
        spare = int(server_status(server)["spare"])  # type: ignore[call-overload]
        time.sleep(0.3)  # past its settling: it waits on its channel alone
        os.kill(spare, signal.SIGSTOP)
        made = tmp_path / f"rec{round}"
        args = ["--version"] if round % 2 else ["init", str(made)]
        reader, writer = os.pipe()
        client = subprocess.Popen(atlas_command(*args),
                                  stdin=subprocess.DEVNULL, stdout=writer,
                                  stderr=subprocess.DEVNULL, env=env_with(ATLAS_SERVER=str(server)))
        os.close(writer)
        try:
            wait_for(lambda: server_status(server)["in_progress"] == 1)
            client.kill()
            client.wait(10)
        finally:
            os.kill(spare, signal.SIGCONT)
        wait_for(lambda: server_status(server)["in_progress"] == 0)
        printed = os.read(reader, 4096)
        os.close(reader)
        assert printed == b"" and not made.exists(), (round, args)
        wait_for(lambda: server_status(server)["spare"] is not None)


def test_the_first_command_runs_itself_and_starts_a_server_for_the_next(
        sock: Path, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    first = through(sock, "--record", str(root), "status", "show")
    assert first.returncode == 0, first.stderr
    wait_for(lambda: server_status(sock)["running"])
    assert through(sock, "--record", str(root), "status", "show").stdout == first.stdout
    assert served(sock) == 1
    stopped = run_atlas("server", "stop", "--socket", str(sock), "--json", process=True)
    assert stopped.json()["stopped"] is True
    wait_for(lambda: not sock.exists())


def test_a_folder_others_can_write_is_never_used(sock: Path, tmp_path: Path) -> None:
    os.chmod(sock.parent, 0o777)
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    result = through(sock, "--record", str(root), "status", "show")
    assert result.returncode == 0
    assert "command server not used" in result.stderr and "chmod 700" in result.stderr
    start = run_atlas("server", "start", "--socket", str(sock), process=True)
    assert start.returncode == 2 and "others may write to" in start.stderr
    assert not sock.exists()


def test_another_python_setup_runs_the_command_itself(server: Path, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    result = through(server, "--record", str(root), "status", "show",
                     env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 0 and "web" in result.stdout
    assert served(server) == 0


def test_an_idle_server_exits_and_takes_its_socket_along(sock: Path) -> None:
    started = run_atlas("server", "start", "--socket", str(sock), "--idle", "1",
                        process=True)
    assert started.returncode == 0, started.stderr
    assert sock.exists()
    wait_for(lambda: not sock.exists())
    assert not server_status(sock)["running"]


@pytest.mark.parametrize("watched", [True, False], ids=["kernel queue", "file by file"])
def test_a_changed_module_file_makes_the_server_stale(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watched: bool) -> None:
    """Seen through the kernel's queue where the folder is local, else by its files'
    stamps (a folder the queue cannot watch)."""
    if not watched:
        monkeypatch.setattr(watching, "local", lambda path: False)
    module = tmp_path / "atlas_probe_module.py"
    module.write_text("X = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        __import__("atlas_probe_module")
        stamp = serve.CodeStamp()
        assert (str(tmp_path) in stamp.watched) == watched
        assert not stamp.changed()
        module.write_text("X = 22\n")  # what an upgrade does to a loaded module
        assert stamp.changed()
        stamp = serve.CodeStamp()
        module.unlink()  # an uninstall, or a module moved away
        assert stamp.changed()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("atlas_probe_module", None)


def test_atlas_server_value_is_checked() -> None:
    assert wire.socket_path("0") is None and wire.socket_path("") is None
    default = wire.socket_path("1")
    assert default is not None and default == wire.socket_path("auto")
    with pytest.raises(wire.Unusable, match="neither on"):
        wire.socket_path("please")
    with pytest.raises(wire.Unusable, match="longer than a Unix socket allows"):
        wire.prepare("/tmp/" + "x" * 120 + "/s.sock")


def test_a_folder_the_worker_cannot_enter_is_said_plainly(server: Path) -> None:
    # The client's folder vanishes between its start and the worker's: the client is
    # made to report a folder that does not exist.
    script = ("import os, sys; os.getcwd = lambda: '/nonexistent-atlas-folder'; "
              "from atlas_files.server import client; "
              "sys.exit(client.forward(['--version']))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env_with(ATLAS_SERVER=str(server)))
    assert out.returncode == 2, out.stderr
    assert "cannot be entered" in out.stderr and "Traceback" not in out.stderr
    assert served(server) == 1


def _put_waiting_on_its_body_after_its_server_is_killed(
        server: Path, root: Path) -> subprocess.Popen[bytes]:
    Record.init(root, ["web"])
    client = subprocess.Popen(
        atlas_command("--record", str(root), "--as", "ann", "put", "plan"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env_with(ATLAS_SERVER=str(server)))
    wait_for(lambda: server_status(server)["in_progress"] == 1)
    os.kill(int(server_status(server)["pid"]), signal.SIGKILL)  # type: ignore[call-overload]
    return client


def test_a_killed_server_lets_its_commands_finish_and_report_their_status(
        server: Path, tmp_path: Path) -> None:
    """The worker sends its client the exit status itself, before it is torn down: a
    server killed meanwhile loses nothing of a command that ran to its end."""
    root = tmp_path / "rec"
    client = _put_waiting_on_its_body_after_its_server_is_killed(server, root)
    assert client.stdin is not None
    client.stdin.write(b"the whole body\n")
    client.stdin.close()
    assert client.wait(15) == 0
    assert "the command server ended" not in \
        client.stderr.read().decode()  # type: ignore[union-attr]
    version = root / "projects" / "web" / "artifacts" / "plan" / "plan.v0001.md"
    assert version.read_text().endswith("the whole body\n")  # the worker ran to its end


def test_a_command_dying_after_its_server_says_its_status_is_lost(
        server: Path, tmp_path: Path) -> None:
    """With the server gone, a worker killed by a signal has no one to report it: its
    `atlas` says so rather than guess."""
    worker_pid = int(server_status(server)["spare"])  # type: ignore[call-overload]
    client = _put_waiting_on_its_body_after_its_server_is_killed(server, tmp_path / "rec")
    os.kill(worker_pid, signal.SIGKILL)
    assert client.wait(15) == 1
    assert "the command server ended while running this command" in \
        client.stderr.read().decode()  # type: ignore[union-attr]
    assert client.stdin is not None
    client.stdin.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_command_runs_in_the_worker_forked_ahead_of_it(server: Path, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    spare = int(server_status(server)["spare"])  # type: ignore[call-overload]
    client = subprocess.Popen(
        atlas_command("--record", str(root), "--as", "ann", "put", "plan"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=tmp_path, env=env_with(ATLAS_SERVER=str(server)))
    assert client.stdin is not None
    wait_for(lambda: server_status(server)["in_progress"] == 1)
    # The spare is the worker now: it has taken the caller's folder, and another spare
    # waits for the next command.
    assert os.readlink(f"/proc/{spare}/cwd") == os.path.realpath(tmp_path)
    assert server_status(server)["spare"] not in (None, spare)
    client.stdin.write(b"the body\n")
    client.stdin.close()
    assert client.wait(15) == 0, client.stderr.read()  # type: ignore[union-attr]
    wait_for(lambda: not _alive(spare))
    assert (root / "projects/web/artifacts/plan/plan.v0001.md").read_text().endswith(
        "the body\n")


def _dirty_kb(pid: int) -> tuple[int, int]:
    """The pages ``pid`` has written to: (its own, those it still shares), in kB."""
    found = {}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
        for row in fh:
            key, _, value = row.partition(":")
            if key in ("Private_Dirty", "Shared_Dirty"):
                found[key] = int(value.split()[0])
    return found["Private_Dirty"], found["Shared_Dirty"]


def test_a_waiting_spare_makes_the_servers_pages_its_own(server: Path) -> None:
    """A spare with no command writes to every object the server listed, so the pages
    it shared with the server are copies of its own before a command touches them
    (spare.py); one that did not would still share nearly all of them."""
    spare = int(server_status(server)["spare"])  # type: ignore[call-overload]

    def owned() -> bool:
        own, shared = _dirty_kb(spare)
        return own >= 0.4 * (own + shared)

    wait_for(owned, 20)


def test_a_spare_that_dies_is_replaced_and_a_stopped_server_leaves_none(sock: Path) -> None:
    assert run_atlas("server", "start", "--socket", str(sock), process=True).returncode == 0
    first = int(server_status(sock)["spare"])  # type: ignore[call-overload]
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: server_status(sock)["spare"] not in (None, first))
    second = int(server_status(sock)["spare"])  # type: ignore[call-overload]
    assert through(sock, "--version").returncode == 0
    assert served(sock) == 1
    third = int(server_status(sock)["spare"])  # type: ignore[call-overload]
    assert run_atlas("server", "stop", "--socket", str(sock), process=True).returncode == 0
    wait_for(lambda: not any(map(_alive, (first, second, third))))


def _servers_on(sock: Path) -> list[int]:
    """The pids of the servers started for ``sock`` (by its path on their command line),
    each ended: a test that finds one leaves none behind."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if entry.name.isdigit() and b"server" in argv and os.fsencode(sock) in argv:
            found.append(int(entry.name))
    for pid in found:
        os.kill(pid, signal.SIGKILL)
    return found


def test_a_socket_in_a_folder_that_does_not_exist_makes_no_folder_and_no_server(
        tmp_path: Path) -> None:
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    sock = tmp_path / "nonexistent" / "dir" / "s.sock"
    plain = run_atlas("--record", str(root), "status", "show", process=True)
    result = through(sock, "--record", str(root), "status", "show")
    assert result.returncode == 0 and result.stdout == plain.stdout
    warning = result.stderr.splitlines()
    assert len(warning) == 1 and warning[0].startswith("atlas: warning: command server not used")
    assert f"the socket's folder {sock.parent} does not exist" in warning[0]
    assert "mkdir -m 700" in warning[0]
    started = run_atlas("server", "start", "--socket", str(sock), process=True)
    assert started.returncode == 2 and "does not exist" in started.stderr
    time.sleep(0.5)  # a server the client started in the background would be up by now
    assert not (tmp_path / "nonexistent").exists()
    assert _servers_on(sock) == []


@pytest.mark.parametrize("mode", [0o755, 0o700])
def test_atlas_server_naming_a_regular_file_says_so_and_leaves_the_file_alone(
        mode: int, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    os.chmod(folder, mode)
    notes = folder / "notes.txt"
    notes.write_text("my notes\n")
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    result = through(notes, "--record", str(root), "status", "show")
    assert result.returncode == 0 and "web" in result.stdout
    assert f"the socket path {notes} is a regular file, not a command server's socket" in \
        result.stderr
    assert "another user" not in result.stderr and "others may write" not in result.stderr
    started = run_atlas("server", "start", "--socket", str(notes), process=True)
    assert started.returncode == 2 and "a regular file, not a command server's socket" in \
        started.stderr
    assert notes.read_text() == "my notes\n"  # never taken for a dead server's socket
    assert _servers_on(notes) == []


@pytest.mark.parametrize("planted", ["link", "fifo"])
def test_the_servers_log_is_never_written_through_a_link_nor_waited_on_as_a_pipe(
        planted: str, sock: Path, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    log = Path(str(sock) + ".log")
    if planted == "link":
        log.symlink_to(notes)
    else:
        os.mkfifo(log)
    start = time.monotonic()
    result = through(sock, "--record", str(root), "status", "show", timeout=30)
    assert time.monotonic() - start < 20  # a pipe with no reader is not waited on
    assert result.returncode == 0 and "web" in result.stdout
    assert "command server not started" in result.stderr and str(log) in result.stderr
    assert notes.read_text() == "mine\n"
    assert _servers_on(sock) == []


def test_another_environment_gets_a_server_of_its_own(tmp_path: Path) -> None:
    """The default socket is keyed on what could make a warm process behave otherwise
    (locale, timezone, PYTHON*, most ATLAS_*), as Mercurial's chg keys its server."""
    runtime = Path(tempfile.mkdtemp(prefix="atlas-rt-"))
    os.chmod(runtime, 0o700)
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    base = env_with(XDG_RUNTIME_DIR=str(runtime), ATLAS_SERVER="1")

    def status_show(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(atlas_command("--record", str(root), "status",
                                            "show"), env={**base, **extra},
                              capture_output=True, text=True, timeout=60)

    def server(**extra: str) -> dict[str, object]:
        answer = subprocess.run(atlas_command("server", "status",
                                              "--json"), env={**base, **extra}, capture_output=True,
                                text=True, timeout=60)
        data: dict[str, object] = json.loads(answer.stdout)
        return data

    zones = ({"TZ": "UTC"}, {"TZ": "Pacific/Chatham"}, {"TZ": "UTC", "PYTHONHASHSEED": "7"})
    try:
        outputs = []
        for zone in zones:
            first = status_show(**zone)  # runs itself, and starts this zone's server
            assert first.returncode == 0, first.stderr
            wait_for(lambda zone=zone: server(**zone)["running"])
            outputs.append(status_show(**zone).stdout)
            assert server(**zone)["served"] == 1, zone
        assert outputs == [first.stdout] * len(zones)
        found = [server(**zone) for zone in zones]
        assert len({f["socket"] for f in found}) == len({f["pid"] for f in found}) == 3
        # What atlas reads only as a command runs keys nothing: the same server serves it.
        assert status_show(TZ="UTC", ATLAS_AS="bob", ATLAS_PROJECT="web").returncode == 0
        assert server(TZ="UTC")["served"] == 2
    finally:
        for zone in zones:
            subprocess.run(atlas_command("server", "stop"),
                           env={**base, **zone}, capture_output=True, timeout=60)
        shutil.rmtree(runtime, ignore_errors=True)


def test_a_server_on_a_chosen_socket_runs_no_command_of_another_environment(
        server: Path, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    Record.init(root, ["web"])
    plain = run_atlas("--record", str(root), "status", "show", process=True)
    for other in ({"TZ": "Pacific/Chatham"}, {"PYTHONHASHSEED": "7"},
                  {"ATLAS_FUTURE_SWITCH": "on"}, {"LC_MESSAGES": "C.UTF-8"}):
        result = through(server, "--record", str(root), "status", "show", env=other)
        assert result.returncode == 0 and result.stdout == plain.stdout, other
        assert result.stderr == ""
    assert served(server) == 0
    assert through(server, "--record", str(root), "--as", "ann", "status", "show",
                   env={"ATLAS_PROJECT": "web"}).stdout == plain.stdout
    assert served(server) == 1
