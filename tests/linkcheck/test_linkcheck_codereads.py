"""What a site's accepted code gave is kept between checks, and given again only while
everything it depends on is as it was: the page, the code, and each file it read, folder
it listed and environment variable it read (codereads.py). Each check is a real `atlas
check` process; the hook and the macros module append to a counter file beside the site
each time they run, so a kept answer is one for which the code did not run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support.linksites import STRICT, site
from support.runner import run_atlas

# The hook adds a heading read from data.txt (relative to the site's folder, where `mkdocs
# build` runs), and one more where HOOK_HEADING is set; the macro's word is read from
# word.txt. Each notes each run in ran.txt (written, not read: it invalidates nothing).
HOOK = """\
import os
from pathlib import Path


def on_page_markdown(markdown, page, config, files):
    with open(Path(__file__).with_name("ran.txt"), "a") as ran:
        ran.write("hook " + page.file.src_uri + "\\n")
    heading = Path("data.txt").read_text().strip()
    more = os.environ.get("HOOK_HEADING")
    return markdown + "\\n\\n## " + heading + "\\n" + (f"\\n## {more}\\n" if more else "")
"""
MACROS = """\
from pathlib import Path


def define_env(env):
    @env.macro
    def word():
        with open(Path(__file__).with_name("ran.txt"), "a") as ran:
            ran.write("macro\\n")
        return Path("word.txt").read_text().strip()
"""
INDEX = "# I\n\n## {{ word() }}\n\n[a](#from-data) [b](#a-word) [c](other.md#from-data) " \
        "[d](other.md#from-env)\n"
OTHER = "# O\n\n[back](index.md#from-data)\n"


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    site(root, text=yaml.safe_dump({
        "site_name": "t", "validation": STRICT, "hooks": ["hooks.py"], "plugins": ["macros"],
        "markdown_extensions": ["toc"]}), pages={"index.md": INDEX, "other.md": OTHER})
    (root / "hooks.py").write_text(HOOK)
    (root / "main.py").write_text(MACROS)
    (root / "data.txt").write_text("From data\n")
    (root / "word.txt").write_text("A word\n")
    return root


def _check(root: Path, tmp_path: Path, **env: str) -> tuple[set[str], list[str]]:
    """The links a real `atlas check` process reported broken (its errors), and the runs
    of the site's code that check made (hook PAGE, or macro)."""
    ran = root / "ran.txt"
    before = ran.read_text().splitlines() if ran.exists() else []
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), **env}
    done = run_atlas("check", "--links-only", "--json", str(root / "docs"), env=env,
                     process=True)
    assert done.returncode in (0, 1), done.stderr
    findings = [f for f in done.json()["findings"] if f["severity"] == "error"]
    after = ran.read_text().splitlines() if ran.exists() else []
    return {f["message"].split("'")[1] for f in findings}, sorted(after[len(before):])


def _accept(root: Path, tmp_path: Path) -> None:
    done = run_atlas("check", "accept", "--yes", str(root), process=True,
                     env={"XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert done.returncode == 0, done.stderr


BOTH = ["hook index.md", "hook other.md"]


def test_a_warm_check_gives_what_the_code_gave_without_running_it(root: Path,
                                                                   tmp_path: Path) -> None:
    _accept(root, tmp_path)
    first = _check(root, tmp_path)
    assert first == ({"other.md#from-env"}, [*BOTH, "macro"])
    assert _check(root, tmp_path) == ({"other.md#from-env"}, [])
    # The page changed: that page alone goes through the hook again.
    (root / "docs" / "other.md").write_text(OTHER + "\n[again](#nope)\n")
    assert _check(root, tmp_path) == ({"other.md#from-env", "#nope"}, ["hook other.md"])
    assert _check(root, tmp_path) == ({"other.md#from-env", "#nope"}, [])


def test_a_file_the_code_read_that_changed_runs_it_again(root: Path, tmp_path: Path) -> None:
    _accept(root, tmp_path)
    _check(root, tmp_path)
    # Both pages' hook read data.txt: both run again, and the old heading is gone.
    (root / "data.txt").write_text("Other data\n")
    assert _check(root, tmp_path) == (
        {"#from-data", "other.md#from-data", "index.md#from-data", "other.md#from-env"}, BOTH)
    # The macro read word.txt while index.md was expanded: that page is expanded again
    # (and goes through the hook again, since its Markdown changed).
    (root / "word.txt").write_text("Another word\n")
    errors, ran = _check(root, tmp_path)
    assert "#a-word" in errors and ran == ["hook index.md", "macro"]
    # Gone, the file is read again, and the hook raises: its pages' anchors are left to
    # the build (no error), and nothing is kept of that run.
    (root / "data.txt").unlink()
    assert _check(root, tmp_path) == (set(), BOTH)
    (root / "data.txt").write_text("From data\n")
    assert _check(root, tmp_path) == ({"#a-word", "other.md#from-env"}, BOTH)
    assert _check(root, tmp_path) == ({"#a-word", "other.md#from-env"}, [])


def test_an_environment_variable_the_code_read_counts(root: Path, tmp_path: Path) -> None:
    _accept(root, tmp_path)
    _check(root, tmp_path)
    assert _check(root, tmp_path, HOOK_HEADING="From env") == (set(), BOTH)
    assert _check(root, tmp_path, HOOK_HEADING="From env") == (set(), [])
    assert _check(root, tmp_path) == ({"other.md#from-env"}, BOTH)


def test_changed_code_accepted_again_runs_again(root: Path, tmp_path: Path) -> None:
    _accept(root, tmp_path)
    _check(root, tmp_path)
    (root / "hooks.py").write_text(HOOK.replace("heading = Path", "heading = 'Hooked ' + Path"))
    # Not accepted as it is now: nothing runs, nothing kept is given for it.
    errors, ran = _check(root, tmp_path)
    assert ran == [] and "other.md#from-env" not in errors
    _accept(root, tmp_path)
    # The macros are expanded again too: their key holds all of the site's accepted code.
    assert _check(root, tmp_path) == (
        {"#from-data", "other.md#from-data", "index.md#from-data", "other.md#from-env"},
        [*BOTH, "macro"])
    assert _check(root, tmp_path)[1] == []


def test_a_new_page_reaches_the_hooks_files(root: Path, tmp_path: Path) -> None:
    # The hooks' set-up listed docs_dir: a page added there is a file of the site at once.
    (root / "docs" / "index.md").write_text(INDEX + "\n[new](new.md)\n")
    _accept(root, tmp_path)
    assert "new.md" in _check(root, tmp_path)[0]
    (root / "docs" / "new.md").write_text("# N\n")
    errors, ran = _check(root, tmp_path)
    assert "new.md" not in errors and "hook new.md" in ran


def test_an_answer_made_with_a_program_is_never_kept(root: Path, tmp_path: Path) -> None:
    (root / "hooks.py").write_text(HOOK.replace(
        "    heading = ", "    import subprocess\n    subprocess.run(['true'])\n    heading = "))
    _accept(root, tmp_path)
    assert _check(root, tmp_path)[1] == [*BOTH, "macro"]
    assert _check(root, tmp_path)[1] == BOTH  # the hook's, every time; the macro's kept


def test_an_answer_made_from_a_file_the_check_may_not_read_is_never_kept(
        root: Path, tmp_path: Path) -> None:
    # data.txt leads out of the repository: what it holds cannot be watched from here.
    outside = tmp_path / "outside.txt"
    outside.write_text("From data\n")
    (root / "data.txt").unlink()
    (root / "data.txt").symlink_to(outside)
    _accept(root, tmp_path)
    assert _check(root, tmp_path) == ({"other.md#from-env"}, [*BOTH, "macro"])
    outside.write_text("Elsewhere\n")
    assert _check(root, tmp_path) == (
        {"#from-data", "other.md#from-data", "index.md#from-data", "other.md#from-env"}, BOTH)


def test_the_kept_answers_live_in_the_users_cache_not_the_repository(root: Path,
                                                                   tmp_path: Path) -> None:
    _accept(root, tmp_path)
    _check(root, tmp_path)
    kept = list((tmp_path / "cache" / "atlas-files" / "links").glob("*.json"))
    hooks = [json.loads(p.read_text()) for p in kept if "-h" in p.name]
    assert len(hooks) == 1
    reads = {name for entry in hooks[0]["pages"].values() for _, name, _ in entry["reads"]}
    assert str((root / "data.txt").resolve()) in reads
    assert "HOOK_HEADING" in reads
    assert not any("ran.txt" in name for name in reads)  # written, never read
    assert not list(root.rglob("*.json"))


def test_a_warm_check_imports_neither_mkdocs_nor_jinja_nor_the_sites_code(
        root: Path, tmp_path: Path) -> None:
    _accept(root, tmp_path)
    _check(root, tmp_path)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPROFILEIMPORTTIME": "1"}
    done = run_atlas("check", "--links-only", "--json", str(root / "docs"), env=env,
                     process=True)
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "atlas_files.linkcheck.sitelinks" in imported  # the trace is the check's
    # Nor the theme's entry points: every link of the site lands in docs_dir.
    assert not {m for m in imported if m.split(".")[0] in ("mkdocs", "jinja2", "markdown",
                                                           "hooks", "main")
                or m == "importlib.metadata"}, imported
    assert len((root / "ran.txt").read_text().splitlines()) == 3  # the first check's alone
