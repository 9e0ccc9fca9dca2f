"""`atlas check --staged`: what a commit changes, judged against git's index (real git)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.git import git
from support.runner import Result, run_atlas

from atlas_files.protocol import artifacts, decisions
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.invalid")
    git(path, "config", "user.name", "test")
    git(path, "config", "commit.gpgsign", "false")
    return path


def commit_all(repo: Path, message: str = "commit") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def staged(repo: Path, *args: str) -> Result:
    return run_atlas("check", "--staged", *args, cwd=repo)


def hand_version(folder: Path, name: str, version: int, body: str, *, digest: bool = True,
                 based_on: int | None = None) -> Path:
    meta = {"name": name, "version": version,
            "based_on": version - 1 if based_on is None else based_on,
            "author": "ann", "written_at": "2026-01-31T12:00:00Z"}
    if digest:
        meta["digest"] = frontmatter.digest_of(body.encode())
    path = folder / f"{name}.v{version:04d}.md"
    path.write_bytes(frontmatter.render(meta, body.encode()))
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repo holding docs and a record (in rec/), all committed."""
    root = init_repo(tmp_path / "repo")
    record = Record.init(root / "rec", ["web"])
    artifacts.put(record, "plan", "# Plan\n", author="ann")
    artifacts.put(record, "plan", "# Plan\n\n## Steps\n", author="ann")
    decisions.decide(record, topic="go?", recommended="go", chosen="go", relation="agreed",
                     why="ready", author="ann")
    docs = root / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\n## Section\n")
    (docs / "index.md").write_text("# Index\n\nRead [A](a.md#section).\n\nAgain: [a](./a.md)\n")
    (root / "README.md").write_text("See [docs](docs/a.md).\n")
    commit_all(root)
    return root


def plan_dir(repo: Path) -> Path:
    return repo / "rec" / "projects" / "web" / "artifacts" / "plan"


def test_a_clean_commit_passes(repo: Path) -> None:
    hand_version(plan_dir(repo), "plan", 3, "# Plan\n\nv3\n")
    git(repo, "add", "-A")
    result = staged(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no findings" in result.stdout


def test_a_version_skip_in_the_commit(repo: Path) -> None:
    hand_version(plan_dir(repo), "plan", 4, "# Plan\n\nv4\n", based_on=3)
    git(repo, "add", "-A")
    result = staged(repo)
    assert result.returncode == 1
    assert result.stdout.startswith("rec/projects/web/artifacts/plan/plan.v0004.md:1: ATL003 "
                                    "version skip: plan.v0004.md is v4 after v2; v3 is missing")


def test_the_index_is_judged_not_the_disk(repo: Path) -> None:
    # v3 exists on disk but is not staged: the commit still skips a version
    hand_version(plan_dir(repo), "plan", 3, "# Plan\n\nv3\n")
    hand_version(plan_dir(repo), "plan", 4, "# Plan\n\nv4\n")
    git(repo, "add", "rec/projects/web/artifacts/plan/plan.v0004.md")
    result = staged(repo)
    assert result.returncode == 1 and "ATL003" in result.stdout


def test_editing_a_committed_version_is_refused(repo: Path) -> None:
    path = plan_dir(repo) / "plan.v0002.md"
    path.chmod(0o644)
    path.write_text(path.read_text().replace("## Steps", "## Steps, edited"))
    git(repo, "add", "-A")
    result = staged(repo)
    assert result.returncode == 1
    assert ("rec/projects/web/artifacts/plan/plan.v0002.md:1: ATL040 this commit edits "
            "projects/web/artifacts/plan/plan.v0002.md, a version: versions are immutable; "
            "write the next version") in result.stdout


def test_deleting_or_renaming_a_version_is_refused(repo: Path) -> None:
    git(repo, "rm", "-q", "rec/projects/web/artifacts/plan/plan.v0001.md")
    result = staged(repo)
    assert result.returncode == 1 and "ATL041 this commit deletes" in result.stdout
    git(repo, "reset", "-q", "--hard")
    git(repo, "mv", "rec/projects/web/artifacts/plan/plan.v0002.md",
        "rec/projects/web/artifacts/plan/plan.v0003.md")
    result = staged(repo)
    assert result.returncode == 1 and "ATL041 this commit renames" in result.stdout


def test_editing_a_decision_entry_is_refused(repo: Path) -> None:
    entry = next((repo / "rec/projects/web/decisions").iterdir())
    entry.chmod(0o644)
    entry.write_text(entry.read_text().replace('chosen: "go"', 'chosen: "stop"'))
    git(repo, "add", "-A")
    result = staged(repo)
    assert result.returncode == 1
    assert "ATL040" in result.stdout and "write a correction" in result.stdout
    assert "ATL005" in result.stdout  # and its digest says so too


def test_stamping_a_committed_version_is_the_one_allowed_change(repo: Path) -> None:
    hand_version(plan_dir(repo), "plan", 3, "# Plan\n\nby hand\n", digest=False)
    git(repo, "add", "-A")
    result = staged(repo)
    assert result.returncode == 0 and "ATL006" in result.stdout  # a warning
    git(repo, "commit", "-q", "-m", "hand-written v3")
    fixed = run_atlas("check", "--fix", record=repo / "rec")
    assert fixed.returncode == 0 and "stamped the digest" in fixed.stdout
    git(repo, "add", "-A")
    assert git(repo, "diff", "--cached", "--name-only").strip().endswith("plan.v0003.md")
    result = staged(repo)
    assert result.returncode == 0, result.stdout


def test_moving_a_linked_markdown_file_is_refused(repo: Path) -> None:
    git(repo, "mv", "docs/a.md", "docs/b.md")
    result = staged(repo)
    assert result.returncode == 1
    assert ("docs/index.md:3: ATL042 links 'a.md#section', which this commit moves to "
            "docs/b.md") in result.stdout
    assert "docs/index.md:5: ATL042" in result.stdout and "README.md:1: ATL042" in result.stdout
    assert "link 'b.md#section' instead" in result.stdout
    links = run_atlas("check", "--links-only", "--staged", cwd=repo)
    assert links.returncode == 1 and "docs/index.md:3: ATL042" in links.stdout


def test_moving_with_the_links_fixed_in_the_same_commit_passes(repo: Path) -> None:
    git(repo, "mv", "docs/a.md", "docs/b.md")
    index = repo / "docs" / "index.md"
    index.write_text(index.read_text().replace("a.md", "b.md"))
    readme = repo / "README.md"
    readme.write_text(readme.read_text().replace("docs/a.md", "docs/b.md"))
    git(repo, "add", "-A")
    for args in ((), ("--links-only",)):
        result = staged(repo, *args)
        assert result.returncode == 0, result.stdout


def test_deleting_a_linked_markdown_file_is_refused(repo: Path) -> None:
    git(repo, "rm", "-q", "docs/a.md")
    result = staged(repo)
    assert result.returncode == 1
    assert "docs/index.md:3: ATL042 links 'a.md#section', which this commit deletes" \
        in result.stdout


def test_links_are_judged_against_the_index(repo: Path) -> None:
    (repo / "docs" / "new.md").write_text("# New\n\n[draft](draft.md) [a](a.md#nope)\n")
    (repo / "docs" / "draft.md").write_text("# Draft\n")  # on disk, never added
    git(repo, "add", "docs/new.md")
    result = run_atlas("check", "--links-only", "--staged", cwd=repo)
    assert result.returncode == 1
    assert "docs/new.md:3: ATL010 broken link 'draft.md'" in result.stdout
    assert "docs/new.md:3: ATL011 broken anchor 'a.md#nope'" in result.stdout


def test_versions_only_in_any_folder(repo: Path) -> None:
    notes = repo / "notes"
    notes.mkdir()
    (notes / "plan.v0001.md").write_text("one\n")
    (notes / "plan.v0002.md").write_text("two\n")
    commit_all(repo)
    (notes / "plan.v0004.md").write_text("four\n")
    git(repo, "add", "-A")
    result = run_atlas("check", "--versions-only", "--staged", cwd=repo)
    assert result.returncode == 1
    assert result.stdout.startswith("notes/plan.v0004.md:1: ATL003 version skip in plan.v*.md: "
                                    "plan.v0004.md is v4 after v2; v3 is missing")
    git(repo, "reset", "-q", "--hard")  # drops the staged v4
    (notes / "plan.v0002.md").write_text("two, edited\n")
    git(repo, "add", "-A")
    result = run_atlas("check", "--versions-only", "--staged", cwd=repo)
    assert result.returncode == 1 and "notes/plan.v0002.md:1: ATL040" in result.stdout
    git(repo, "reset", "-q", "--hard")
    (notes / "plan.v0003.md").write_text("three\n")
    git(repo, "add", "-A")
    assert run_atlas("check", "--versions-only", "--staged", cwd=repo).returncode == 0


def test_staged_outside_a_git_repository(tmp_path: Path) -> None:
    result = run_atlas("check", "--staged", cwd=tmp_path)
    assert result.returncode == 2 and "not inside a git repository" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_repo_without_a_record_only_gets_the_git_checks(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "plain")
    (root / "a.md").write_text("# A\n")
    (root / "b.md").write_text("[a](a.md)\n")
    commit_all(root)
    git(root, "mv", "a.md", "c.md")
    result = staged(root)
    assert result.returncode == 1 and "b.md:1: ATL042" in result.stdout


def test_the_first_commit_of_a_repository(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "fresh")
    record = Record.init(root / "rec", ["web"])
    artifacts.put(record, "plan", "# Plan\n", author="ann")
    hand_version(root / "rec/projects/web/artifacts/plan", "plan", 3, "# Plan\n\nv3\n")
    (root / "a.md").write_text("# A\n\n[b](b.md#b-part) [plan](rec/projects/web/artifacts/"
                               "plan/plan.v0001.md#plan)\n")
    (root / "b.md").write_text("# B part\n")
    git(root, "add", "-A")
    result = staged(root)
    assert result.returncode == 1
    assert "rec/projects/web/artifacts/plan/plan.v0003.md:1: ATL003" in result.stdout
    links = run_atlas("check", "--links-only", "--staged", cwd=root)
    assert links.returncode == 0, links.stdout  # targets staged in the same commit count
