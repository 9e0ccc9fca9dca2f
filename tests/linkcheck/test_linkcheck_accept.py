"""A site's own code (its hooks, its macros module and what they import) runs in the links
check once a person on the clone accepted it, by content (`atlas check accept`), and not
before, nor after it changed; an accepted hook that loops or allocates is held by the page
deadline and the memory cap, said once. Each test has its own config folder, where the
acceptance is kept: nothing in the repository can plant one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.git import GitRepo
from support.linksites import STRICT, site
from support.runner import run_atlas

from atlas_files.api import checks as api
from atlas_files.check import check_links, check_staged
from atlas_files.linkcheck.findings import ERROR, Report

# The hook makes one anchor and removes another; the macros module makes a third. Each
# leaves a mark that it ran, beside the site (the check never writes there itself).
HOOK = """\
from pathlib import Path

import helper


def on_page_markdown(markdown, page, config, files):
    Path(__file__).with_name("hook-ran").touch()
    return markdown.replace("TITLE", helper.title()).replace("## Removed by the hook\\n", "")
"""
# Read relative to the site's folder, where `mkdocs build` runs (as Material's own hooks do).
HELPER = "def title():\n    with open('title.txt') as f:\n        return f.read().strip()\n"
MACROS = """\
from pathlib import Path


def define_env(env):
    @env.macro
    def heading(text):
        Path(__file__).with_name("macros-ran").touch()
        return "## " + text
"""
PAGE = ("# {title}\n\n## TITLE\n\n## Removed by the hook\n\n{{{{ heading('From the macro') }}}}"
        "\n\n[a](#made-by-the-hook) [b](#from-the-macro) [c](#removed-by-the-hook) "
        "[d](#nope-{n})\n")
PAGES = {"index.md": PAGE.format(title="I", n=1), "other.md": PAGE.format(title="O", n=2)}
# What the build says, running the same code: the anchor the hook removes, and the two
# that nothing makes.
BROKEN = {(page, link) for page in PAGES
          for link in ("#removed-by-the-hook", f"#nope-{1 if page == 'index.md' else 2}")}


@pytest.fixture(autouse=True)
def own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder / "atlas"


def _site(root: Path, hook: str = HOOK) -> Path:
    docs = site(root, text=yaml.safe_dump({
        "site_name": "t", "validation": STRICT, "hooks": ["hooks.py"], "plugins": ["macros"],
        "markdown_extensions": ["toc"]}), pages=PAGES)
    (root / "hooks.py").write_text(hook)
    (root / "helper.py").write_text(HELPER)
    (root / "title.txt").write_text("Made by the hook\n")
    (root / "main.py").write_text(MACROS)
    return docs


def _judged(report: Report, docs: Path) -> tuple[set[tuple[str, str]], list[str]]:
    errors, warnings = set(), []
    for f in report.findings:
        if f.severity == ERROR:
            page = (docs.parent / f.path).resolve().relative_to(docs.resolve()).as_posix()
            errors.add((page, f.message.split("'")[1]))
        else:
            warnings.append(f"{f.code} {f.message}")
    return errors, warnings


def _ran(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("*-ran"))


@pytest.mark.parametrize("mode", ["tree", "staged"])
def test_accepted_code_runs_and_its_errors_are_the_builds(tmp_path: Path, own_config: Path,
                                                          mode: str) -> None:
    root = tmp_path / "site"
    docs = _site(root)
    shown = api.review_site_code(root)
    assert [(f.rel, f.role) for f in shown.files] == [
        ("hooks.py", "hook"), ("main.py", "macros module"), ("helper.py", "imported by hooks.py")]
    api.accept_site_code(root, shown)
    if mode == "staged":  # as the pre-commit hook runs it: no flag
        GitRepo(root).git("add", "-A")
        report = check_staged(root, mode="links", base=root)
    else:
        report = check_links([docs], base=root)
    errors, warnings = _judged(report, docs)
    assert errors == BROKEN, warnings
    assert warnings == []
    assert _ran(root) == ["hook-ran", "macros-ran"]
    # The acceptance lives in the user's config folder, by the repository's real path.
    kept = json.loads((own_config / "accepted-site-code.json").read_text())
    assert kept["accepted"][0]["repository"] == os.path.realpath(root)
    assert set(kept["accepted"][0]["files"]) == {"hooks.py", "main.py", "helper.py"}
    # The truth: MkDocs building the site runs the same code and says the same links.
    pytest.importorskip("mkdocs_macros")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-d", str(tmp_path / "out")],
                           cwd=root, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stderr[-2000:]
    truth = {(page, link) for page in PAGES for link in ("#removed-by-the-hook", "#nope-1",
                                                         "#nope-2")
             if f"Doc file '{page}' contains a link '{link}'" in built.stderr}
    assert truth == BROKEN, built.stderr[-2000:]


def test_unaccepted_code_never_runs_and_no_error_is_invented(tmp_path: Path) -> None:
    root = tmp_path / "site"
    docs = _site(root)
    errors, warnings = _judged(check_links([docs], base=root), docs)
    assert errors == set()
    assert _ran(root) == []
    # One message for the hook, naming the command that accepts it (the macros pages are
    # the hook's pages too: its cause is said first).
    assert len(warnings) == 1 and "atlas check accept" in warnings[0], warnings


def test_code_changed_after_acceptance_is_not_run_and_said_once(tmp_path: Path) -> None:
    root = tmp_path / "site"
    docs = _site(root)
    api.accept_site_code(root)
    (root / "helper.py").write_text(HELPER + "# changed\n")
    errors, warnings = _judged(check_links([docs], base=root), docs)
    assert errors == set() and _ran(root) == []
    changed = [w for w in warnings if "changed since it was accepted" in w]
    assert len(changed) == 1 and "helper.py" in changed[0] \
        and "atlas check accept" in changed[0], warnings
    # A module newly imported is as new to the acceptance as a changed one.
    api.accept_site_code(root)
    (root / "extra.py").write_text("X = 1\n")
    (root / "hooks.py").write_text("import extra\n" + HOOK)
    errors, warnings = _judged(check_links([docs], base=root), docs)
    assert errors == set() and _ran(root) == []
    assert any("changed since it was accepted" in w and "extra.py" in w for w in warnings)
    # Accepted again: it runs.
    api.accept_site_code(root)
    errors, _ = _judged(check_links([docs], base=root), docs)
    assert errors == BROKEN and _ran(root) == ["hook-ran", "macros-ran"]


@pytest.mark.parametrize("body, said", [
    ("    while True:\n        pass\n", "took longer than 1 s"),
    # 2 GiB in small pieces: past the child's cap (1 GiB more than it was forked with).
    ("    hold = [bytearray(1 << 20) for _ in range(2 << 10)]\n    return markdown\n",
     "MemoryError"),
])
def test_an_accepted_hook_that_loops_or_allocates_is_held_and_said_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, said: str) -> None:
    if "while" in body:  # a second of CPU is enough to know it loops
        monkeypatch.setenv("ATLAS_CHECK_RENDER_S", "1")
    root = tmp_path / "site"
    docs = _site(root, hook="def on_page_markdown(markdown, page, config, files):\n" + body)
    api.accept_site_code(root)
    errors, warnings = _judged(check_links([docs], base=root), docs)
    assert errors == set(), warnings  # its pages' anchors are the build's to judge
    held = [w for w in warnings if said in w]
    assert len(held) == 1, warnings


def test_accept_asks_and_refuses_without_a_terminal(tmp_path: Path, own_config: Path) -> None:
    root = tmp_path / "site"
    _site(root)
    env = {"XDG_CONFIG_HOME": str(own_config.parent)}
    refused = run_atlas("check", "accept", str(root), env=env, process=True)
    assert refused.returncode == 2
    assert "no terminal" in refused.stderr and "--yes" in refused.stderr
    assert "hooks.py" in refused.stdout and "helper.py" in refused.stdout  # what it shows
    assert not (own_config / "accepted-site-code.json").exists()
    done = run_atlas("check", "accept", str(root), "--yes", "--json", env=env, process=True)
    assert done.returncode == 0, done.stderr
    assert done.json()["runs"] is True
    assert {f["path"] for f in done.json()["files"]} == {"hooks.py", "main.py", "helper.py"}


def test_an_acceptance_planted_in_the_repository_is_refused(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            ) -> None:
    root = tmp_path / "site"
    docs = _site(root)
    api.accept_site_code(root)
    made = (tmp_path / "config-home" / "atlas" / "accepted-site-code.json").read_text()
    # The same acceptance, but in a config folder inside the repository: refused, and
    # nothing runs.
    planted = root / ".config"
    (planted / "atlas").mkdir(parents=True)
    (planted / "atlas" / "accepted-site-code.json").write_text(made)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(planted))
    errors, warnings = _judged(check_links([docs], base=root), docs)
    assert errors == set() and _ran(root) == []
    assert any("inside the repository" in w and "not run" in w for w in warnings), warnings


def test_an_accepted_hook_renders_the_themes_templates_as_built(tmp_path: Path) -> None:
    # As Material's translations hook does: a template of the theme's custom_dir, rendered
    # into the page.
    root = tmp_path / "site"
    docs = site(root, text=yaml.safe_dump({
        "site_name": "t", "validation": STRICT, "hooks": ["hooks.py"],
        "theme": {"name": "mkdocs", "custom_dir": "overrides"}}),
        pages={"index.md": "# I\n\n[a](#from-the-template) [b](#nope)\n"})
    (root / "overrides" / "hooks").mkdir(parents=True)
    (root / "overrides" / "hooks" / "part.html").write_text("## From the {{ what }}\n")
    (root / "hooks.py").write_text(
        "def on_page_markdown(markdown, page, config, files):\n"
        "    template = config.theme.get_env().get_template('hooks/part.html')\n"
        "    return markdown + '\\n' + template.render(what='template')\n")
    api.accept_site_code(root)
    errors, warnings = _judged(check_links([docs], base=root), docs)
    assert errors == {("index.md", "#nope")} and warnings == [], warnings


def test_an_accepted_hook_whose_events_all_come_after_the_validation_is_not_run(
        tmp_path: Path) -> None:
    # As mkdocstrings-python's hook: it writes a schema once the site is built.
    root = tmp_path / "site"
    docs = site(root, text=yaml.safe_dump({
        "site_name": "t", "validation": STRICT, "hooks": ["hooks.py"]}),
        pages={"index.md": "# I\n\n[a](#i) [b](#nope)\n"})
    (root / "hooks.py").write_text(
        "from pathlib import Path\n\nPath(__file__).with_name('hook-ran').touch()\n\n\n"
        "def on_post_build(config, **kwargs):\n    pass\n")
    api.accept_site_code(root)
    errors, warnings = _judged(check_links([docs], base=root), docs)
    assert errors == {("index.md", "#nope")} and warnings == [], warnings
    assert _ran(root) == []  # not even imported
