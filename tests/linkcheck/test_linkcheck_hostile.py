"""The checked repository is someone else's writing: its mkdocs.yml runs no code, and the
links check reads nothing outside the repository, fetches nothing, and quotes no byte of
a file it was not asked to check (issue 25, items 1 and 5, and the render cache); no page
holds it past a deadline (issue 39, items 4 and 5).

Each reproduction runs the real `atlas` (a process of its own) on a git repository in
both modes, `--links-only` on the tree and `--staged`; test_precommit_hooks.py runs the same two
through the real pre-commit framework.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import linksites
from support.git import GitRepo
from support.hostile_repo import Listener
from support.runner import Result, run_atlas

from atlas_files.check import check_links
from atlas_files.facts import renderlimit
from atlas_files.linkcheck import rendercache, renderpool, siteconfig
from atlas_files.linkcheck.siteplan import plan

MODES = ["tree", "staged"]
SECRET = "s3cr3t-7f3a"  # in files outside the repository: no output may hold it


def check(repo: GitRepo, mode: str, timeout: float = 120,
          env: dict[str, str] | None = None) -> Result:
    """`atlas check --links-only --json` in the repository, a process of its own; with
    ``mode`` "staged", on what is staged (all of it)."""
    staged = ["--staged"] if mode == "staged" else []
    if staged:
        repo.git("add", "-A")
    return run_atlas("check", "--links-only", "--json", *staged, cwd=repo.path,
                     timeout=timeout, process=True, env=env)


def findings(result: Result) -> list[dict[str, object]]:
    assert "Traceback" not in result.stderr, result.stderr
    data = json.loads(result.stdout)
    assert isinstance(data, dict), result.stdout
    found = data["findings"]
    assert isinstance(found, list)
    return found


def site(repo: GitRepo, config: str, pages: dict[str, str] | None = None) -> None:
    """The repository's site: ``config`` as its mkdocs.yml, and ``pages``."""
    linksites.site(repo.path, text=config,
                   pages=pages or {"index.md": "# Home\n\n[a](#home) [b](#nope)\n"})


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


# -- item 1: nothing mkdocs.yml names runs ----------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_python_call_tag_in_a_trusted_toolkit_runs_nothing(repo: GitRepo, mode: str) -> None:
    # mkdocs' own YAML loader constructs anything: a call of it, named by a tag, once ran
    # os.system as the user running the check.
    marker = repo.path.parent / "FILE"
    site(repo, "site_name: t\nmarkdown_extensions:\n  - toc:\n      permalink: "
               "!!python/object/apply:mkdocs.utils.yaml.yaml_load "
               f"[\"!!python/object/apply:os.system ['id > {marker}']\"]\n")
    found = findings(check(repo, mode))
    assert not marker.exists()
    said = [f for f in found if f["code"] == "ATL018"]
    assert len(said) == 1 and said[0]["path"] == "mkdocs.yml" and said[0]["line"] == 3
    message = str(said[0]["message"])
    # What it says is true: a tag it constructs nothing for, on its own line.
    assert "`!!python/object/apply:mkdocs.utils.yaml.yaml_load` (line 4)" in message
    assert "constructs nothing" in message and "never imports or calls" in message
    assert [f["code"] for f in found if f["severity"] == "error"] == ["ATL011"]


@pytest.mark.parametrize("mode", MODES)
def test_a_module_class_extension_runs_nothing(repo: GitRepo, mode: str) -> None:
    marker = repo.path.parent / "FILE"
    site(repo, "site_name: t\nmarkdown_extensions:\n  - subprocess:run:\n"
               f"      args: \"id > {marker}\"\n      shell: true\n")
    found = findings(check(repo, mode))
    assert not marker.exists()
    said = [f for f in found if f["code"] == "ATL018"]
    assert len(said) == 1 and said[0]["line"] == 3
    assert "subprocess:run is not loaded" in str(said[0]["message"])
    assert "module:Class" in str(said[0]["message"])
    assert "failed to set itself up" not in str(said[0]["message"])


@pytest.mark.parametrize("name", ["antigravity", "this", "webbrowser", "os", "json.tool"])
def test_an_installed_module_named_as_an_extension_is_never_imported(
        repo: GitRepo, name: str) -> None:
    # `this` prints a poem and `antigravity` opens a browser when imported: neither may be.
    site(repo, f"site_name: t\nmarkdown_extensions:\n  - {name}\n  - attr_list\n",
         {"index.md": "# Home\n\n*x*{ #here }\n\n[a](#here) [b](#nope)\n"})
    result = check(repo, "tree")
    found = findings(result)
    assert "Zen of Python" not in result.stdout + result.stderr
    said = [f for f in found if f["code"] == "ATL018"]
    assert len(said) == 1 and f"{name} is not loaded" in str(said[0]["message"])
    assert [f["code"] for f in found if f["severity"] == "error"] == ["ATL011"]


def test_every_python_tag_is_a_finding_never_an_object(repo: GitRepo) -> None:
    marker = repo.path.parent / "FILE"
    site(repo, "site_name: t\n"
               f"extra: !!python/object/apply:os.system ['touch {marker}']\n"
               f"copyright: !!python/object/new:os.system ['touch {marker}']\n"
               "theme: !!python/name:os.system\n"
               "nav: !include other.yml\n"
               "markdown_extensions:\n  - toc:\n"
               "      slugify: !!python/object/apply:pymdownx.slugs.slugify {kwds: {case: lower}}\n"
               "  - pymdownx.superfences:\n      custom_fences:\n        - name: m\n"
               "          class: m\n          format: !!python/name:builtins.exec\n")
    found = findings(check(repo, "tree"))
    assert not marker.exists()
    lines = sorted(int(str(f["line"])) for f in found if f["code"] == "ATL018")
    # One finding per tag it left out (the slugify it understands is a value, not one);
    # an extension's own, on its extension's line.
    assert lines == [2, 3, 4, 5, 9], found


def test_yaml_aliases_that_expand_a_billion_times_are_refused(repo: GitRepo) -> None:
    laughs = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 10):
        prev = chr(ord("a") + n - 1)
        laughs.append(f"{chr(ord('a') + n)}: &{chr(ord('a') + n)} [{', '.join(['*' + prev] * 10)}]")
    # Walking the extension's settings once took a billion steps.
    site(repo, "site_name: t\nextra:\n" + "".join(f"  {line}\n" for line in laughs)
         + "markdown_extensions:\n  - toc:\n      permalink_title: *j\n")
    result = check(repo, "tree", timeout=60)
    found = findings(result)
    said = [str(f["message"]) for f in found if f["code"] == "ATL018"]
    assert len(said) == 1 and "more than 100,000 values" in said[0]


# -- item 5: nothing fetched, nothing read outside --------------------------------------------


@pytest.fixture
def listener() -> Iterator[Listener]:
    served = Listener()
    yield served
    served.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["pymdownx.snippets", "pymdownx.snippets:SnippetExtension"])
def test_snippets_are_never_fetched_whatever_the_extension_is_called(
        repo: GitRepo, listener: Listener, name: str, mode: str) -> None:
    site(repo, f"site_name: t\nmarkdown_extensions:\n  - {name}:\n"
               "      url_download: true\n      base_path: ['/']\n",
         {"index.md": f"# Home\n\n--8<-- \"http://127.0.0.1:{listener.port}/x.md\"\n\n"
                      "[a](#fetched-heading)\n"})
    found = findings(check(repo, mode))
    assert listener.connections == 0
    # The build would fetch it: what it makes cannot be checked, never an error.
    assert [f["severity"] for f in found if f["path"] == "docs/index.md"] in (
        ["warning"], []), found


@pytest.mark.parametrize("how", ["absolute", "relative", "symlink"])
def test_inherit_outside_the_repository_is_refused_and_never_quoted(
        repo: GitRepo, tmp_path: Path, how: str) -> None:
    secret = tmp_path / "secret.ini"
    secret.write_text(f"[section]\ntoken = {SECRET}: : : not yaml\n")
    if how == "symlink":
        (repo.path / "base.yml").symlink_to(secret)
        named = "base.yml"
    else:
        named = str(secret) if how == "absolute" else "../secret.ini"
    site(repo, f"site_name: t\nINHERIT: {named}\n")
    result = check(repo, "tree")
    found = findings(result)
    assert SECRET not in result.stdout + result.stderr
    said = [str(f["message"]) for f in found if f["code"] == "ATL018"]
    assert len(said) == 1 and "lies outside the repository" in said[0], found


@pytest.mark.parametrize("mode", MODES)
def test_a_link_into_a_file_outside_is_not_read(repo: GitRepo, tmp_path: Path,
                                                mode: str) -> None:
    # A heading close enough to the link's anchor that a hint would name it.
    (tmp_path / "outside.md").write_text(f"# Deployment keys {SECRET}\n")
    repo.write("README.md", "# Readme\n\n[o](../outside.md#deployment-keys) "
               "[p](../outside.md)\n")
    found = findings(check(repo, mode))
    assert SECRET not in json.dumps(found)


@pytest.mark.parametrize("in_site", [True, False])
def test_a_page_that_links_out_of_the_repository_is_not_read(
        repo: GitRepo, tmp_path: Path, in_site: bool) -> None:
    (tmp_path / "outside.md").write_text(f"# Heading {SECRET}\n\n[x](gone-{SECRET}.md)\n")
    if in_site:
        site(repo, "site_name: t\n", {"index.md": "# Home\n\n[l](leak.md#nope)\n"})
        (repo.path / "docs" / "leak.md").symlink_to(tmp_path / "outside.md")
    else:
        repo.write("index.md", "# Home\n\n[l](leak.md#nope)\n")
        (repo.path / "leak.md").symlink_to(tmp_path / "outside.md")
    result = check(repo, "tree")
    found = findings(result)
    assert SECRET not in result.stdout + result.stderr
    refused = [f for f in found if f["code"] == "ATL002"]
    assert refused and "outside the repository" in str(refused[0]["message"])


@pytest.mark.parametrize("mode", MODES)
def test_a_snippet_from_outside_is_not_included(repo: GitRepo, tmp_path: Path,
                                                mode: str) -> None:
    (tmp_path / "outside.md").write_text(f"## Heading {SECRET}\n\n[x](gone-{SECRET}.md)\n")
    site(repo, "site_name: t\nmarkdown_extensions:\n  - pymdownx.snippets:\n"
               "      base_path: [docs, ..]\n",
         {"index.md": "# Home\n\n--8<-- \"part.md\"\n--8<-- \"../outside.md\"\n\n"
                      "[a](#nope)\n"})
    (repo.path / "docs" / "part.md").symlink_to(tmp_path / "outside.md")
    result = check(repo, mode)
    found = findings(result)
    assert SECRET not in result.stdout + result.stderr
    assert all(f["code"] != "ATL010" for f in found)  # the outside file's link: not read


def test_docs_dir_outside_the_repository_is_refused(repo: GitRepo, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "p.md").write_text(f"# {SECRET}\n")
    site(repo, "site_name: t\ndocs_dir: ../elsewhere\n",
         {"index.md": "# Home\n\n[a](../../elsewhere/p.md#nope)\n"})
    result = check(repo, "tree")
    assert SECRET not in result.stdout + result.stderr
    said = [str(f["message"]) for f in findings(result) if f["code"] == "ATL018"]
    assert len(said) == 1 and "docs_dir" in said[0] and "outside the repository" in said[0]


# -- the render cache: nothing a teammate plants is believed, nothing hangs -------------------


def _plant(repo: GitRepo, page: str, text: str, entry: dict[str, object]) -> list[Path]:
    """A rendering of ``page`` (of ``text``) that says ``entry``, written where the render
    cache is read from (the repository's `.atlas-cache/links/`, and, where it is, the
    user's cache folder); the paths written."""
    config = siteconfig.load(repo.path / "mkdocs.yml")
    setup = rendercache.setup_key(config, plan(config, lambda key, message: None))
    assert setup is not None
    key = hashlib.sha256(f"{page}\0{text}".encode()).hexdigest()
    data = json.dumps({"setup": setup, "problems": [],
                       "pages": {key: {"missing": [], "included": [], "ids": [],
                                       "links": [], **entry}}})
    places = [repo.path / ".atlas-cache" / "links" / f"{setup[:32]}.json"]
    where = getattr(rendercache, "folder", lambda: None)()
    if where is not None:
        site_key = hashlib.sha256(str(repo.path / "mkdocs.yml").encode()).hexdigest()[:16]
        places.append(where / f"{site_key}-{setup[:32]}.json")
    for place in places:
        place.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        place.write_text(data)
    return places


PAGES = {"index.md": "# Home\n\n[a](guide.md#usage)\n", "guide.md": "# Guide\n\n## Other\n"}


def test_a_committed_render_cache_cannot_make_a_check_lie(repo: GitRepo) -> None:
    site(repo, "site_name: t\n", PAGES)
    # A teammate commits a "rendering" of guide.md that claims the id the link wants.
    text = "\n" * 0 + PAGES["guide.md"]
    planted = _plant(repo, "guide.md", text, {"ids": ["usage"], "partial": True})
    for own in planted[1:]:  # only the committed one: the user's own folder is theirs
        own.unlink()
    repo.git("add", "-A")
    repo.git("commit", "-q", "--no-verify", "-m", "a planted cache")
    repo.write("docs/index.md", PAGES["index.md"] + "\nMore.\n")  # staged for the commit
    for mode in MODES:
        found = findings(check(repo, mode))
        assert [f["code"] for f in found] == ["ATL011"], (mode, found)


@pytest.mark.parametrize("what", ["zero", "fifo", "huge"])
def test_a_rendering_that_names_a_special_snippet_never_hangs(
        repo: GitRepo, tmp_path: Path, what: str) -> None:
    site(repo, "site_name: t\nmarkdown_extensions: [pymdownx.snippets]\n", PAGES)
    special = {"zero": Path("/dev/zero"), "fifo": tmp_path / "fifo", "huge": tmp_path / "huge"}
    if what == "fifo":
        os.mkfifo(special["fifo"])
    if what == "huge":
        with open(special["huge"], "wb") as f:
            f.truncate(8 << 30)  # sparse: 8 GB that take no disk
    _plant(repo, "guide.md", PAGES["guide.md"],
           {"ids": ["usage"], "included": [[str(special[what]), "0" * 64]]})
    result = check(repo, "tree", timeout=60)
    assert [f["code"] for f in findings(result)] == ["ATL011"]


@pytest.mark.parametrize("what", ["fifo", "symlink", "folder"])
def test_a_render_cache_that_is_not_a_regular_file_is_no_cache(
        repo: GitRepo, tmp_path: Path, what: str) -> None:
    site(repo, "site_name: t\n", PAGES)
    for place in _plant(repo, "guide.md", PAGES["guide.md"], {"ids": ["usage"]}):
        place.unlink()
        if what == "fifo":
            os.mkfifo(place)
        elif what == "symlink":
            place.symlink_to("/dev/zero")
        else:
            place.mkdir()
    result = check(repo, "tree", timeout=60)
    assert [f["code"] for f in findings(result)] == ["ATL011"]


def test_a_cache_folder_others_can_write_is_not_used(
        repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "shared-cache"
    base.mkdir()
    os.chmod(base, 0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(base))
    site(repo, "site_name: t\n", PAGES)
    assert [f["code"] for f in findings(check(repo, "tree"))] == ["ATL011"]
    assert not (base / "atlas-files" / "links").exists() or not any(
        (base / "atlas-files" / "links").iterdir())
    assert not (repo.path / ".atlas-cache").exists()  # nor anything in the repository


# -- issue 39, item 7: nothing of the checker's environment is read ---------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("config", [
    "markdown_extensions: [!ENV [SECRET_TOKEN, toc]]\n",
    "markdown_extensions: [!ENV SECRET_TOKEN]\n",
    "plugins: [macros]\nextra: {s: !ENV [SECRET_TOKEN, none]}\n",
    "plugins: [macros]\nextra: {s: !ENV SECRET_TOKEN}\n",
    "validation: {anchors: !ENV [SECRET_TOKEN, warn]}\n",
])
def test_env_tags_are_never_read_from_the_checkers_environment(
        repo: GitRepo, mode: str, config: str) -> None:
    # A committed mkdocs.yml that names a variable of whoever runs the check (a CI job's
    # token) once printed it in the findings: in a pull request's public log.
    site(repo, "site_name: t\n" + config,
         {"index.md": "# Home\n\n[a]({{ s }}.md) [b](#nope)\n"})
    result = check(repo, mode, env={"SECRET_TOKEN": SECRET})
    found = findings(result)
    assert SECRET not in result.stdout + result.stderr
    # The tag's own default, as a build with the variable unset makes it.
    assert "docs/index.md" in {f["path"] for f in found if f["code"] in ("ATL011", "ATL010")}


# -- issue 39, items 4 and 5: every page a check renders has one deadline --------------------

# Python-Markdown's inline link pattern spends time on this that grows with the square of
# its size (3.11.3 and 3.11.4 alike; 3.11.4 made runs of "[" and "[a][" fast, so a slow
# text here names a pattern that is slow in the Markdown the suite installs).
SLOW_PAGE = "# Bad\n\n[y](#nope)\n\n" + "[a](" * 16000
# A Jinja loop in a loop: hours.
LOOP = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
LIMIT = {renderlimit.CHECK_ENV: "1"}  # a second of CPU a page: the test's own budget


def _unchecked(found: list[dict[str, object]]) -> list[tuple[object, object]]:
    """(path, message) of each page said to take too long, the seconds as "N": the CPU
    limit's (1 s), or the wall clock's where a busy machine gave the child too little."""
    wall = renderpool.WALL_FACTOR
    return [(f["path"], re.sub(rf"longer than (1|{wall}) s", "longer than N s",
                               str(f["message"])))
            for f in found if "this page cannot be checked:" in str(f["message"])]


@pytest.mark.parametrize("mode", MODES)
def test_a_page_that_renders_for_minutes_is_cut_short_and_said_once(
        repo: GitRepo, mode: str) -> None:
    site(repo, "site_name: t\n", {"index.md": "# Home\n\n[b](bad.md#nope) [c](bad.md)\n"
                                              "[d](#gone)\n", "bad.md": SLOW_PAGE})
    for _ in range(2):  # the second run says the same
        found = findings(check(repo, mode, timeout=60, env=LIMIT))
        assert _unchecked(found) == [("docs/bad.md", "this page cannot be checked: rendering "
                                      "took longer than N s (its links, and anchors into "
                                      "it, are not judged)")]
        # Neither its own broken anchor nor the one into it is guessed at; the rest is
        # checked as ever.
        assert [(f["path"], f["code"]) for f in found if f["severity"] == "error"] == [
            ("docs/index.md", "ATL011")], found


def test_a_page_that_ran_out_is_remembered_not_rendered_on_every_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = linksites.site(tmp_path, text="site_name: t\n",
                            pages={"index.md": "# Home\n\n[b](bad.md#nope)\n",
                                   "bad.md": SLOW_PAGE})
    monkeypatch.setenv(renderlimit.CHECK_ENV, "1")
    forks = linksites.forks(monkeypatch)
    said = []
    for _ in range(3):
        report = check_links([folder])
        said.append(sorted((f.code, f.message) for f in report.findings))
        if len(said) == 1:
            assert forks, "the page is rendered in a child"
            first = len(forks)
    assert said[0] == said[1] == said[2] and [c for c, _ in said[0]] == ["ATL017"]
    assert len(forks) == first  # remembered: no child renders it again
    # Given more time than it ran out of, it is tried again.
    monkeypatch.setenv(renderlimit.CHECK_ENV, "1.5")
    check_links([folder])
    assert len(forks) > first


@pytest.mark.parametrize("mode", MODES)
def test_macros_pages_that_loop_are_held_to_a_page_deadline_and_a_run_budget(
        repo: GitRepo, mode: str) -> None:
    pages = {f"p{n}.md": f"# P{n}\n\n[x](#nope)\n\n{LOOP}\n" for n in range(8)}
    site(repo, "site_name: t\nplugins: [macros]\n",
         {**pages, "index.md": "# Home\n\n[a](p0.md#nope) [b](#gone)\n"})
    tried: set[object] = set()
    for _ in range(3):
        found = findings(check(repo, mode, timeout=60, env=LIMIT))
        ran_out = {path for path, message in _unchecked(found)
                   if message == "this page cannot be checked: expanding its macros took "
                   "longer than N s (its links, and anchors into it, are not judged)"}
        # Each run starts no page past its budget (six pages' time: the page it is on
        # then keeps its own deadline), and says the others once, for the site; what ran
        # out before is not run again.
        assert tried <= ran_out and 0 < len(ran_out - tried) <= 6 + 1, (tried, ran_out)
        tried = ran_out
        rest = [f for f in found if "it was not expanded" in str(f["message"])]
        assert len(rest) == (len(ran_out) < 8)
        assert [(f["path"], f["code"]) for f in found if f["severity"] == "error"] == [
            ("docs/index.md", "ATL011")], found
        if len(tried) == 8:
            break


def test_a_child_stuck_past_its_deadline_is_killed_and_its_share_goes_on() -> None:
    def work(key: str) -> str:
        if key == "busy":  # C code, where no signal handler runs: CPU spent, for minutes
            hashlib.pbkdf2_hmac("sha256", b"page", b"salt", 10**9)
        elif key == "sleep":  # no CPU at all: says nothing about the page
            time.sleep(600)
        return key.upper()

    got = renderpool.run_children(work, [["busy", "after"], ["sleep", "later"]], 0.5)
    wall = 0.5 * renderpool.WALL_FACTOR
    # The one that spent its CPU ran out of it (and may be remembered); the other says
    # only that the wall clock ran out.
    assert got == {"busy": renderpool.RanOut(0.5, certain=True), "after": "AFTER",
                   "sleep": renderpool.RanOut(wall, certain=False), "later": "LATER"}
