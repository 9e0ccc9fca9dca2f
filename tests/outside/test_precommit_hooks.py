"""The hooks of .pre-commit-hooks.yaml under the real pre-commit framework, in a throwaway
repository that uses them the way any repository would: `repo:` + `rev:`.

pre-commit installs a hook repository from what is committed at ``rev``. To test the hooks
as they are in this working tree (committed or not), the tree is copied into a temporary
repository and committed there; its environment is installed once per test session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from support import hostile_repo
from support.git import git
from support.tools import needs

from atlas_files.protocol import artifacts, leases
from atlas_files.storage.record import Record

ROOT = Path(__file__).resolve().parents[2]
pytestmark = needs("pre-commit", "pre-commit is not installed")


def run(cmd: list[str], cwd: Path, env: dict[str, str], check: bool = True,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATLAS_", "GIT_"))}
    env.update(PRE_COMMIT_HOME=str(home), GIT_AUTHOR_NAME="test", GIT_COMMITTER_NAME="test",
               GIT_AUTHOR_EMAIL="test@example.invalid",
               GIT_COMMITTER_EMAIL="test@example.invalid")
    return env


@pytest.fixture(scope="session")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, Path]]:
    """(hook repository, its commit, PRE_COMMIT_HOME) with the hook environment installed."""
    base = tmp_path_factory.mktemp("hooks")
    home = base / "pre-commit-home"
    env = _env(home)
    src = base / "atlas-files"
    listed = git(ROOT, "ls-files", "-co", "--exclude-standard", "-z", env=env)
    for rel in filter(None, listed.split("\0")):
        source = ROOT / rel
        if not os.path.lexists(source):
            continue
        target = src / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        elif source.is_file():
            shutil.copy2(source, target)
    git(src, "init", "-q", env=env)
    git(src, "add", "-A", env=env)
    git(src, "commit", "-q", "--no-verify", "-m", "snapshot", env=env)
    sha = git(src, "rev-parse", "HEAD", env=env)
    # Install the environment once; every test repository below reuses it.
    warm = base / "warm"
    warm.mkdir()
    git(warm, "init", "-q", env=env)
    (warm / ".pre-commit-config.yaml").write_text(_config(src, sha))
    run(["pre-commit", "install-hooks"], warm, env, timeout=900)
    yield src, sha, home


def _config(src: Path, sha: str) -> str:
    return (f"repos:\n  - repo: {src}\n    rev: {sha}\n    hooks:\n"
            "      - id: atlas-check\n      - id: atlas-links\n      - id: atlas-versions\n")


class Repo:
    def __init__(self, path: Path, env: dict[str, str]) -> None:
        self.path = path
        self.env = env

    def git(self, *args: str) -> str:
        return git(self.path, *args, env=self.env)

    def commit(self, message: str = "change", env: dict[str, str] | None = None,
               add: tuple[str, ...] = ("-A",)) -> subprocess.CompletedProcess[str]:
        self.git("add", *add)
        return run(["git", "commit", "-q", "-m", message], self.path, {**self.env, **(env or {})},
                   check=False)

    def write(self, rel: str, text: str) -> Path:
        path = self.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.chmod(0o644)
        path.write_text(text)
        return path


@pytest.fixture
def repo(hooks: tuple[Path, str, Path], tmp_path: Path) -> Repo:
    src, sha, home = hooks
    path = tmp_path / "work"
    path.mkdir()
    r = Repo(path, _env(home))
    r.git("init", "-q")
    r.write(".pre-commit-config.yaml", _config(src, sha))
    run(["pre-commit", "install"], path, r.env)
    r.write("notes/plan.v0001.md", "one\n")
    r.write("notes/plan.v0002.md", "two\n")
    r.write("docs/a.md", "# A\n\n## Section\n")
    r.write("docs/index.md", "# Index\n\nFirst [A](a.md#section).\n")
    r.write("README.md", "Start at [the index](docs/index.md).\n")
    first = r.commit("start")
    assert first.returncode == 0, first.stdout + first.stderr
    return r


def output(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout + proc.stderr


def test_a_version_skip_fails_and_the_next_version_passes(repo: Repo) -> None:
    repo.write("notes/plan.v0004.md", "four\n")
    bad = repo.commit("skip")
    assert bad.returncode != 0
    assert "notes/plan.v0004.md:1: ATL003 version skip in plan.v*.md: plan.v0004.md is v4 " \
        "after v2; v3 is missing" in output(bad)
    repo.git("rm", "-q", "--cached", "notes/plan.v0004.md")
    (repo.path / "notes/plan.v0004.md").rename(repo.path / "notes/plan.v0003.md")
    good = repo.commit("next version")
    assert good.returncode == 0, output(good)


def test_editing_a_committed_version_fails(repo: Repo) -> None:
    repo.write("notes/plan.v0002.md", "two, edited\n")
    bad = repo.commit("edit")
    assert bad.returncode != 0
    assert "notes/plan.v0002.md:1: ATL040 this commit edits" in output(bad)
    repo.git("checkout", "HEAD", "--", "notes/plan.v0002.md")
    repo.write("notes/plan.v0003.md", "two, edited\n")
    good = repo.commit("write the next version instead")
    assert good.returncode == 0, output(good)


def test_moving_a_linked_file_fails_until_the_links_move_with_it(repo: Repo) -> None:
    repo.git("mv", "docs/a.md", "docs/b.md")
    bad = repo.commit("move")
    assert bad.returncode != 0
    assert "docs/index.md:3: ATL042 links 'a.md#section', which this commit moves to " \
        "docs/b.md" in output(bad)
    index = repo.path / "docs/index.md"
    index.write_text(index.read_text().replace("a.md", "b.md"))
    good = repo.commit("move, links fixed")
    assert good.returncode == 0, output(good)


def test_broken_links_and_anchors_in_committed_markdown(repo: Repo) -> None:
    repo.write("docs/c.md", "# C\n\n[A](a.md#sektion) and [gone](gone.md)\n")
    bad = repo.commit("links")
    assert bad.returncode != 0
    assert "docs/c.md:3: ATL011" in output(bad) and "docs/c.md:3: ATL010" in output(bad)
    assert "did you mean #section?" in output(bad)
    repo.write("docs/c.md", "# C\n\n[A](a.md#section)\n")
    good = repo.commit("links fixed")
    assert good.returncode == 0, output(good)


# -- atlas-links on a repository whose mkdocs.yml a teammate wrote (issue 25) ------------------

HOSTILE_SITES = {
    # a call of mkdocs' own YAML loader, which constructs anything
    "python-call": "site_name: t\nmarkdown_extensions:\n  - toc:\n      permalink: "
                   "!!python/object/apply:mkdocs.utils.yaml.yaml_load "
                   "[\"!!python/object/apply:os.system ['id > {marker}']\"]\n",
    # Python-Markdown's module:Class form: import subprocess, call run(...)
    "module-class": "site_name: t\nmarkdown_extensions:\n  - subprocess:run:\n"
                    "      args: \"id > {marker}\"\n      shell: true\n",
}


@pytest.mark.parametrize("case", sorted(HOSTILE_SITES))
def test_the_links_hook_runs_no_code_that_mkdocs_yml_names(repo: Repo, case: str) -> None:
    marker = repo.path.parent / "FILE"
    repo.write("mkdocs.yml", HOSTILE_SITES[case].format(marker=marker))
    repo.write("docs/c.md", "# C\n\n[A](a.md#section) [nope](a.md#nope)\n")
    bad = repo.commit("a teammate's site")
    assert not marker.exists(), output(bad)
    assert bad.returncode != 0 and "docs/c.md:3: ATL011" in output(bad)
    assert "mkdocs.yml:3: ATL018" in output(bad)
    assert "Traceback" not in output(bad)


def test_the_links_hook_fetches_nothing_and_quotes_nothing_from_outside(
        repo: Repo, tmp_path: Path) -> None:
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    seen: list[object] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            seen.append(conn)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    secret = "s3cr3t-7f3a"
    (tmp_path / "secret.ini").write_text(f"[x]\ntoken = {secret}: : : not yaml\n")
    try:
        port = server.getsockname()[1]
        repo.write("mkdocs.yml", "site_name: t\nmarkdown_extensions:\n"
                   "  - pymdownx.snippets:SnippetExtension:\n      url_download: true\n"
                   "      base_path: ['/']\n  - pymdownx.snippets:\n"
                   "      url_download: true\n      base_path: ['/']\n")
        repo.write("docs/c.md", f"# C\n\n--8<-- \"http://127.0.0.1:{port}/x.md\"\n\n"
                   "[x](#from-the-server) [nope](a.md#nope)\n")
        bad = repo.commit("a site that would fetch")
        assert bad.returncode != 0 and "docs/c.md:5: ATL011" in output(bad)
        repo.write("mkdocs.yml", f"site_name: t\nINHERIT: {tmp_path / 'secret.ini'}\n")
        inherits = repo.commit("a site that would read a file of the user's")
        assert "INHERIT" in output(inherits) and "outside the repository" in output(inherits)
        assert secret not in output(inherits)
    finally:
        server.close()
        thread.join(5)
    assert seen == []


@settings(max_examples=int(os.environ.get("HOSTILE_HOOK_EXAMPLES", "3")), deadline=None,
          derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                   HealthCheck.too_slow])
@given(spec=hostile_repo.specs())
def test_the_hooks_on_a_hostile_repository_reach_nowhere(
        hooks: tuple[Path, str, Path], tmp_path: Path, spec: hostile_repo.Spec) -> None:
    """The adversarial suite's repositories (test_repository_hostile.py), committed through
    the real pre-commit framework: each hook's atlas is watched as there."""
    src, sha, home = hooks
    spec.fsmonitor = False  # pre-commit's own git would run it; atlas's never does
    listener = hostile_repo.Listener()
    try:
        audit = hostile_repo.audit_folder(tmp_path)
        built = hostile_repo.build(spec, tmp_path / "example", listener.port)
        (built.repo / ".pre-commit-config.yaml").write_text(_config(src, sha))
        log = tmp_path / "hooks-audit.log"
        log.unlink(missing_ok=True)
        env = {**_env(home), **hostile_repo.watched_env(built, audit, log),
               "PRE_COMMIT_HOME": str(home)}
        shown = []
        for argv in (["pre-commit", "run"], ["pre-commit", "run", "--all-files"]):
            proc = run(argv, built.repo, env, check=False, timeout=600)
            shown.append(output(proc))
            watch = hostile_repo.Watch(argv, 0, "{\"findings\": []}", "", [])
            watch.events = hostile_repo.events(log)
            said = hostile_repo.problems(watch, built, listener)
            assert said == [], "\n".join([*spec.config, *said])
            assert ["process", "git"] in watch.events  # the hooks' atlas was watched
            assert hostile_repo.SECRET not in output(proc)
            assert "Traceback" not in output(proc), output(proc)
        assert any("atlas links" in text for text in shown)
    finally:
        listener.close()


def test_record_checks_run_on_what_the_commit_changes(repo: Repo) -> None:
    record = Record.init(repo.path / "rec", ["web"])
    artifacts.put(record, "plan", "# Plan\n", author="ann")
    first = repo.commit("a record")
    assert first.returncode == 0, output(first)
    version = repo.path / "rec/projects/web/artifacts/plan/plan.v0001.md"
    repo.write(str(version.relative_to(repo.path)),
               version.read_text().replace("# Plan", "# Plan, edited"))
    bad = repo.commit("edit a record version")
    assert bad.returncode != 0
    assert "rec/projects/web/artifacts/plan/plan.v0001.md:1: ATL040" in output(bad)
    assert "ATL005" in output(bad)  # its digest says so as well


def test_the_manifest_and_the_project_config_are_valid(tmp_path: Path) -> None:
    env = _env(tmp_path / "home")
    run(["pre-commit", "validate-manifest", ".pre-commit-hooks.yaml"], ROOT, env)
    run(["pre-commit", "validate-config", ".pre-commit-config.yaml"], ROOT, env)
    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"atlas-check", "atlas-links", "atlas-versions", "atlas-leases"}
    assert hooks["atlas-leases"]["entry"] == "atlas lease guard --staged"
    own = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    local = [h["id"] for r in own["repos"] if r["repo"] == "local" for h in r["hooks"]]
    assert {"ruff", "mypy", "atlas-links"} <= set(local)


# -- atlas-leases: commits into paths someone else holds a lease on -------------------------


@pytest.fixture
def leased(hooks: tuple[Path, str, Path], tmp_path: Path) -> tuple[Repo, Record]:
    """A repository using the atlas-leases hook, inside the folder of the team's record
    (the record is found as the nearest atlas.yaml above the repository root)."""
    src, sha, home = hooks
    record = Record.init(tmp_path / "team")
    path = record.root / "code"
    path.mkdir()
    r = Repo(path, _env(home))
    r.git("init", "-q")
    r.write(".pre-commit-config.yaml", f"repos:\n  - repo: {src}\n    rev: {sha}\n"
            "    hooks:\n      - id: atlas-leases\n")
    run(["pre-commit", "install"], path, r.env)
    r.write("src/metrics.py", "one\n")
    r.write("src/util.py", "one\n")
    first = r.commit("start", env={"ATLAS_AS": "alice"})
    assert first.returncode == 0, output(first)
    return r, record


ALICE = {"ATLAS_AS": "alice"}
BOB = {"ATLAS_AS": "bob"}


def test_a_commit_into_a_path_bob_leased_fails_for_alice_and_passes_for_bob(
        leased: tuple[Repo, Record]) -> None:
    repo, record = leased
    leases.claim(record, "repo.metrics", holder="bob", duration_s=3600,
                 why="rewriting the export", paths=["src/metrics.py"])
    repo.write("src/metrics.py", "alice's change\n")
    bad = repo.commit("alice edits metrics", env=ALICE)
    assert bad.returncode != 0
    said = " ".join(output(bad).split())
    assert "bob holds repo.metrics for" in said and "rewriting the export" in said
    assert "59m more" in said or "1h more" in said
    assert "src/metrics.py (leased as src/metrics.py)" in said
    assert "advisory" in said and "SKIP=atlas-leases git commit" in said
    assert "tell bob through the record" in said

    # Another file passes (the edit of metrics.py stays in the working tree, unstaged).
    repo.git("reset", "-q")
    repo.write("src/util.py", "alice's util\n")
    other = repo.commit("alice edits util", env=ALICE, add=("src/util.py",))
    assert other.returncode == 0, output(other)

    # SKIP goes ahead, as the message says.
    skipped = repo.commit("alice goes ahead", env={**ALICE, "SKIP": "atlas-leases"})
    assert skipped.returncode == 0, output(skipped)

    # The holder's own commit passes.
    repo.write("src/metrics.py", "bob's change\n")
    own = repo.commit("bob edits metrics", env=BOB)
    assert own.returncode == 0, output(own)


def test_after_the_lease_expires_alices_commit_passes(leased: tuple[Repo, Record]) -> None:
    repo, record = leased
    repo.write("src/util.py", "timing\n")
    start = time.monotonic()
    timing = repo.commit("how long one commit takes here", env=ALICE)
    assert timing.returncode == 0, output(timing)
    # Long enough for the refused commit to run inside it on a loaded machine.
    seconds = max(5.0, 3 * (time.monotonic() - start))
    leases.claim(record, "repo.metrics", holder="bob", duration_s=seconds,
                 why="a short edit", paths=["src/"])
    claimed = time.monotonic()
    repo.write("src/metrics.py", "alice again\n")
    bad = repo.commit("alice, too early", env=ALICE)
    assert bad.returncode != 0 and "bob holds repo.metrics" in output(bad)
    time.sleep(max(0.0, claimed + seconds + 0.5 - time.monotonic()))
    assert not leases.current(record, "repo.metrics").held
    good = repo.commit("alice, after bob's lease ended", env=ALICE)
    assert good.returncode == 0, output(good)


def test_the_committer_from_git_config_and_no_record_found(
        leased: tuple[Repo, Record], tmp_path: Path) -> None:
    repo, record = leased
    leases.claim(record, "repo.metrics", holder="bob", duration_s=3600, why="w",
                 paths=["src/metrics.py"])
    repo.git("config", "atlas.as", "bob")
    repo.write("src/metrics.py", "bob via git config\n")
    own = repo.commit("bob's, named by git config")
    assert own.returncode == 0, output(own)
    # A record named in git config that is not there stops the commit: never unchecked.
    repo.git("config", "atlas.record", "../nowhere")
    repo.write("src/metrics.py", "again\n")
    stopped = repo.commit("misconfigured")
    assert stopped.returncode != 0 and "no record at" in output(stopped)
    repo.git("config", "--unset", "atlas.record")
    # No record at all: the hook passes and says so once (pre-commit shows it with -v).
    (record.root / "atlas.yaml").rename(record.root / "atlas.yaml.off")
    repo.git("config", "atlas.as", "alice")
    repo.git("add", "-A")
    shown = run(["pre-commit", "run", "atlas-leases", "--verbose"], repo.path, repo.env,
                check=False)
    assert shown.returncode == 0, output(shown)
    assert output(shown).count("no atlas record found") == 1
