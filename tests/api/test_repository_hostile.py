"""The adversarial suite of the checked-repository boundary (issue 25): generated hostile
repositories (tests/support/hostile_repo.py says what a teammate controls), each checked by every
command that reads a checked repository, under watch. Whatever the repository holds, a
check writes no file outside the user's own cache folder, starts no process but git,
opens no file outside the repository, connects nowhere, runs no code of the repository,
quotes no byte of a file outside it, stays within its memory cap and its time, and ends
with exit 0 or 1 and one JSON document.

``HOSTILE_EXAMPLES`` (default 12) sets how many repositories are generated; each costs
one run of every command in hostile_repo.COMMANDS. The pre-commit hooks run on some of
the same repositories in test_precommit_hooks.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from support.hostile_repo import (
    COMMANDS,
    Listener,
    Spec,
    audit_folder,
    build,
    problems,
    run_watched,
    specs,
)

EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "12"))


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    served = Listener()
    yield served
    served.close()


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(spec=specs())
def test_no_hostile_repository_makes_a_check_reach_past_it(
        spec: Spec, tmp_path: Path, listener: Listener) -> None:
    audit = audit_folder(tmp_path)
    built = build(spec, tmp_path / "example", listener.port)
    found: list[str] = []
    for argv in COMMANDS:
        found += problems(run_watched(argv, built, audit), built, listener)
    assert found == [], "\n".join(["mkdocs.yml:", *spec.config, "", *found])


def test_the_watch_sees_what_it_must_refuse(tmp_path: Path, listener: Listener) -> None:
    """The watch itself: a run that writes outside, starts a process, connects, runs the
    repository's code and quotes a secret is caught on each count."""
    audit = audit_folder(tmp_path)
    built = build(Spec(["site_name: t"], {"index.md": "# Page\n"}), tmp_path / "ex",
                  listener.port)
    (built.repo / "docs" / "index.md").write_text("# Page\n")
    script = built.repo / "rogue.py"
    script.write_text(
        "import socket, subprocess, sys\n"
        f"open({str(built.outside / 'written')!r}, 'w').close()\n"
        f"print(open({str(built.outside / 'secret.md')!r}).read())\n"
        "subprocess.run(['true'])\n"
        f"socket.create_connection(('127.0.0.1', {listener.port})).close()\n")
    watch = run_watched(["check", "--links-only", "--json"], built, audit)
    assert problems(watch, built, listener) == []  # a plain check: nothing to say
    from support import hostile_repo as hostile

    sneaky = run_watched(["check", "--links-only", "--json"], built, audit)
    sneaky.events += [["write", str(built.outside / "w")], ["process", "sh"],
                      ["network", "socket.connect", "x"], ["code", str(script)],
                      ["read", str(built.outside / "secret.md")]]
    sneaky.stderr += hostile.SECRET
    said = " ".join(problems(sneaky, built, listener))
    for what in ("wrote", "started ['sh']", "network", "code", "opened", "quoted"):
        assert what in said, (what, said)
    # And the hook really sees a child's doings (a script run the way atlas is run).
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(audit), "HOSTILE_WATCH_ALL": "1",
           "HOSTILE_AUDIT_LOG": str(tmp_path / "rogue.log"),
           "HOSTILE_WATCHED": str(built.repo), "HOSTILE_READABLE": sys.prefix}
    subprocess.run([sys.executable, str(script)], env=env, capture_output=True, timeout=60,
                   check=True)
    log = (tmp_path / "rogue.log").read_text()
    for kind in ('"write"', '"read"', '"process"', '"network"', '"code"'):
        assert kind in log, (kind, log)
    assert listener.connections == 1
    listener.connections = 0
