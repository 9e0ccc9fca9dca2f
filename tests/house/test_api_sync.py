"""Sync lives under the API: on a record with `sync: {auto: true}`, every API function
that reads the record fetches first and every one that writes it pushes after, whoever
calls it (the CLI, the MCP server, a library caller). Each public function of
atlas_files.api is named below as a read, a write, or local (with why); one the table
does not name fails the test, so a new function gets its sync decided on purpose."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.git import git, isolate_git
from support.gitteam import Team, bare_remote, cli, start_team

import atlas_files.api
from atlas_files.api import Worker, core, decisions, leases, ritual, search, status, tasks
from atlas_files.protocol import tasks as taskmod

Call = Callable[[Worker], Any]


def _task(w: Worker, title: str) -> str:
    """The id of the fixture's task titled ``title``, read without syncing."""
    board = taskmod.read_board(w.record, w.project_name)
    return next(t.id for t in board.tasks.values() if t.title == title)


READS: dict[str, Call] = {
    "core.get": lambda w: core.get(w, "plan"),
    "core.ls": lambda w: core.ls(w),
    "core.history": lambda w: core.history(w, "plan"),
    "core.diff": lambda w: core.diff(w, "plan"),
    "core.feed": lambda w: core.feed(w),
    "status.status_show": lambda w: status.status_show(w),
    "status.status_log": lambda w: status.status_log(w),
    "status.status_diff": lambda w: status.status_diff(w),
    "decisions.decisions": lambda w: decisions.decisions(w),
    "leases.ls": lambda w: leases.ls(w),
    "leases.show": lambda w: leases.show(w, "gpu0"),
    "search.search": lambda w: search.search(w, "plan"),
    "ritual.begin": lambda w: ritual.begin(w),
    "ritual.begin_again": lambda w: ritual.begin_again(w),
    "tasks.ls": lambda w: tasks.ls(w),
    "tasks.show": lambda w: tasks.show(w, _task(w, "t1")),
}
WRITES: dict[str, Call] = {
    "core.put": lambda w: core.put(w, "plan", "a new version\n"),
    "status.status_write": lambda w: status.status_write(w, "where things stand\n"),
    "decisions.decide": lambda w: decisions.decide(
        w, topic="db", recommended="pg", chosen="pg", relation="agreed", why="fits"),
    "decisions.correct": lambda w: decisions.correct(w, "plan@v1", "the first step was wrong"),
    "decisions.retract": lambda w: decisions.retract(w, "plan@v1", "withdrawn"),
    "leases.claim": lambda w: leases.claim(w, "gpu1", "1h", "a run"),
    "leases.renew": lambda w: leases.renew(w, "gpu0", "2h"),
    "leases.release": lambda w: leases.release(w, "gpu0"),
    "leases.break_": lambda w: leases.break_(Worker(w.record, "carol"), "gpu2", "its run died"),
    "ritual.end": lambda w: ritual.end(w, status="done for today\n"),
    "tasks.add": lambda w: tasks.add(w, "another task"),
    "tasks.claim": lambda w: tasks.claim(w, _task(w, "t1"), "1h"),
    "tasks.release": lambda w: tasks.release(w, _task(w, "t1")),
    "tasks.next_": lambda w: tasks.next_(w, "1h"),
    "tasks.done": lambda w: tasks.done(w, _task(w, "t2")),
    "tasks.drop": lambda w: tasks.drop(w, _task(w, "t3"), "not needed"),
}
# Functions that neither fetch nor push, and why.
LOCAL = {
    "worker.reads": "the decorator that makes a read refresh first",
    "worker.writes": "the decorator that makes a write sync after",
    "core.init": "makes a record; there is no remote yet",
    "core.check_write": "refuses a write before its body is read; the write itself syncs",
    "status.check_status_write": "the same, for the status",
    "checks.check": "judges the files as they are (a commit's, or the folder's): a fetch "
                    "would change what is judged",
    "checks.review_site_code": "reads a MkDocs site's own code on disk and the person's "
                               "own acceptances file, outside the record",
    "checks.accept_site_code": "writes the person's own acceptances file, outside the record",
    "site.build": "renders the record as this clone holds it",
    "site.serve": "serves the record as this clone holds it",
    "telemetry.sample": "reads this machine's GPUs; no record",
    "telemetry.rows": "telemetry rows are live rows of this machine; they never travel",
    "telemetry.probe": "writes live rows, which never travel",
    "telemetry.machines_per_round": "the same probe, by rounds",
    "telemetry.probe_every": "the same probe, repeated",
    "telemetry.pending_probe": "a probe string for its person to approve",
    "telemetry.approve": "the person's own approvals file, outside the record",
    "telemetry.ls": "live rows of this machine",
    "leases.covering": "asked by the commit and edit guards on every commit and tool "
                       "call, from what this clone holds",
    "guard.guard": "the edit-time guard of a harness: answers at once from this clone",
    "editguard.check_edit": "refreshes a record that syncs itself (sync.refresh, at most "
                            "once per fetch_every) and fetches the code repository: "
                            "tests/hooks/test_tools.py",
    "editguard.find_record": "finds a record by the files of an edit; reads no record",
    "editguard.inside": "compares two paths",
    "editguard.record_file": "judges a path inside the record; reads nothing",
    "editguard.remember": "notes in the session row what the guard told",
    "editguard.repository_root": "finds a code repository; no record",
    "news.after_tool": "the post-tool hook: what changed, from this clone, as begin's "
                       "briefing already fetched",
    "setup.inside": "compares two paths",
    "setup.settings_path": "a path; reads nothing",
    "versions.body_to_write": "reads a body the caller gave; no record",
    "versions.version_list": "renders what history and status log read",
    "briefing.told_line": "renders a line",
    "briefing.told_section": "a part of begin",
    "stop.stop_check": "the turn-end hook: answers at once from this clone",
    "activity.activity": "the code repository's commits, not the record",
    "activity.repository_status": "the same",
    "activity.repository_section": "the same",
    "activity.repository_briefing": "the same",
    "activity.briefing_lines": "renders a section; reads nothing",
    "setup.setup": "writes a harness's settings; no record",
    "setup.hook_command": "a command line; reads nothing",
    "setup.record_for_hooks": "finds where a record is; reads nothing in it",
    "setup.no_record_for_hooks": "a message; reads nothing",
    "setup.merge_hooks": "edits a settings document; reads nothing",
    "setup.remove_hooks": "the same",
    "setup.agents_section": "a text; reads nothing",
    "syncing.sync": "the exchange itself",
    "syncing.review": "what `atlas sync accept` would accept",
    "syncing.accept": "the person's own acceptance, outside the record",
    "versions.version_json": "renders a version; reads nothing",
    "versions.marks": "renders corrections of a version already read",
    "briefing.one_line": "renders a line",
    "briefing.status_part": "a part of begin, which fetched",
    "briefing.topics": "a part of begin",
    "briefing.correction_section": "a part of begin",
    "briefing.decision_section": "a part of begin",
    "briefing.lease_section": "a part of begin",
    "briefing.task_section": "a part of begin",
    "stop.claims_held": "a part of end and of the turn-end hook, which answers at once "
                        "from this clone",
    "briefing.machine_section": "a part of begin",
    "budget.render": "lays out begin's text",
    "budget.fit": "lays out begin's text",
}


def public_functions() -> Iterator[str]:
    """``module.function`` for every public function defined in atlas_files.api."""
    for info in pkgutil.iter_modules(atlas_files.api.__path__):
        module = importlib.import_module(f"atlas_files.api.{info.name}")
        for name, value in vars(module).items():
            if inspect.isfunction(value) and not name.startswith("_") \
                    and value.__module__ == module.__name__:
                yield f"{info.name}.{name}"


def test_every_api_function_is_a_read_a_write_or_local_on_purpose() -> None:
    named = {**READS, **WRITES, **LOCAL}
    assert sorted(set(public_functions()) - set(named)) == []
    assert sorted(set(named) - set(public_functions())) == []


class Clones:
    def __init__(self, team: Team, alice: Path, bob: Path) -> None:
        self.team, self.alice, self.bob = team, alice, bob
        self.n = 0

    def bob_writes(self) -> None:
        """Bob pushes a version: the remote moves past what alice has fetched."""
        self.n += 1
        body = self.bob.parent / f"bob-{self.n}.txt"
        body.write_text(f"bob's note {self.n}\n")
        code, _, err = cli(self.bob, "put", f"note-{self.n}", "-f", str(body), identity="bob")
        assert code == 0, err


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clones]:
    """One team for the module (each case leaves the record as the next one needs it):
    alice's record syncs by itself and fetches on every read; plan v1, a status and leases
    on gpu0 and gpu2 held by alice are on the remote."""
    root = tmp_path_factory.mktemp("api-sync")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in isolate_git(root / "home").items():
            mp.setenv(key, value)
        for key in [k for k in os.environ if k.startswith("ATLAS_")]:
            mp.delenv(key)
        team, alice = start_team(root, str(bare_remote(root / "served")))
        bob = team.clone("bob")
        alice_w = Worker.open(alice, "alice")
        core.put(alice_w, "plan", "the first plan\n")
        status.status_write(alice_w, "where things stood\n")
        leases.claim(alice_w, "gpu0", "1h", "training")
        leases.claim(alice_w, "gpu2", "1h", "another run")
        for title in ("t1", "t2", "t3", "t4"):
            tasks.add(alice_w, title)
        assert cli(alice, "sync")[0] == 0
        assert cli(bob, "sync")[0] == 0
        yield Clones(team, alice, bob)


@pytest.mark.parametrize("name", list(READS))
def test_an_api_read_fetches_first(clones: Clones, name: str) -> None:
    clones.bob_writes()
    head = clones.team.remote_head()
    assert git(clones.alice, "rev-parse", "refs/remotes/origin/main") != head
    READS[name](Worker.open(clones.alice, "alice"))
    assert git(clones.alice, "rev-parse", "refs/remotes/origin/main") == head, \
        f"{name} read the record without fetching"


@pytest.mark.parametrize("name", list(WRITES))
def test_an_api_write_pushes_after(clones: Clones, name: str) -> None:
    before = clones.team.remote_head()
    WRITES[name](Worker.open(clones.alice, "alice"))
    after = clones.team.remote_head()
    assert after != before, f"{name} wrote without pushing"
    assert after == git(clones.alice, "rev-parse", "HEAD")  # alice's write is what landed


def test_a_library_caller_can_keep_a_call_here(clones: Clones) -> None:
    """``Worker(sync=False)`` (the CLI's --no-sync) neither fetches nor pushes."""
    clones.bob_writes()
    tracking = git(clones.alice, "rev-parse", "refs/remotes/origin/main")
    before = clones.team.remote_head()
    here = Worker.open(clones.alice, "alice", sync=False)
    core.get(here, "plan")
    core.put(here, "plan", "kept here\n")
    assert git(clones.alice, "rev-parse", "refs/remotes/origin/main") == tracking
    assert clones.team.remote_head() == before
