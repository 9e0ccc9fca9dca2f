"""`atlas check --links-only`, the pre-commit hook's command, is answered before click is
imported (fast/check.py), and says exactly what the full CLI says: the same stdout, stderr
and exit status, findings or none, text or JSON, the tree or the commit being made; where
the check raises, the full CLI says it. Each case runs the real entry point in a child
(the fast path) and the full CLI's handler in this process, on the same site."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.git import GitRepo
from support.linksites import site
from support.runner import Result, run_atlas

PAGES = {
    "index.md": "# Home\n\n[ok](other.md#there) [gone](missing.md) [no](#nowhere)\n",
    "other.md": "# Other\n\n## There\n\n[back](index.md) [\x1b]52;c;aGk=\x07](#evil)\n",
}


def _both(root: Path, *args: str) -> tuple[Result, Result]:
    env = {"XDG_CACHE_HOME": str(root.parent / "cache")}
    fast = run_atlas("check", *args, cwd=root, env=env, process=True)
    full = run_atlas("check", *args, cwd=root, env=env)
    return fast, full


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    site(root, pages=PAGES)
    return root


@pytest.mark.parametrize("args", [
    ["--links-only"], ["--links-only", "--json"], ["--json", "--links-only", "docs/index.md"],
    ["--links-only", "docs/other.md", "docs/index.md"],
])
def test_the_fast_path_says_what_the_full_cli_says(root: Path, args: list[str]) -> None:
    for _ in range(2):  # cold, then with the renderings kept
        fast, full = _both(root, *args)
        assert (fast.returncode, fast.stdout, fast.stderr) == \
            (full.returncode, full.stdout, full.stderr)
        assert fast.returncode == 1 and "missing.md" in fast.stdout
        assert "\x1b" not in fast.stdout  # what a page holds is shown, never obeyed


def test_the_fast_path_checks_the_commit_being_made(root: Path) -> None:
    repo = GitRepo(root)
    repo.git("add", "-A")
    fast, full = _both(root, "--links-only", "--staged")
    assert (fast.returncode, fast.stdout, fast.stderr) == \
        (full.returncode, full.stdout, full.stderr)
    (root / "docs" / "index.md").write_text("# Home\n\n[ok](other.md#there)\n")
    repo.git("add", "-A")
    fast, full = _both(root, "--links-only", "--staged")
    assert fast.returncode == full.returncode == 0
    assert fast.stdout == full.stdout and "no findings" in fast.stdout


@pytest.mark.parametrize("args", [
    ["--links-only", "--staged"],  # not a git repository: a user error, said by the CLI
    ["--links-only", "--json", "--staged"],
    # Past a path, an option is a path too (a record check, and there is no record here).
    ["docs/other.md", "--links-only"],
])
def test_where_the_check_raises_the_full_cli_says_it(tmp_path: Path, args: list[str]) -> None:
    root = tmp_path / "plain"
    site(root, pages=PAGES)
    fast, full = _both(root, *args)
    assert (fast.returncode, fast.stdout, fast.stderr) == \
        (full.returncode, full.stdout, full.stderr)
    assert fast.returncode == 2 and "atlas: error:" in fast.stderr, fast.stderr


def test_the_fast_path_imports_no_click(root: Path) -> None:
    done = run_atlas("check", "--links-only", "--json", cwd=root, process=True,
                     env={"PYTHONPROFILEIMPORTTIME": "1",
                          "XDG_CACHE_HOME": str(root.parent / "cache")})
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "atlas_files.api.checks" in imported
    assert not {m for m in imported if m.split(".")[0] == "click"}
    # Anything else on the command line is the full CLI's.
    done = run_atlas("check", "--links-only", "--mkdocs", "mkdocs.yml", cwd=root,
                     process=True, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert "click" in {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
