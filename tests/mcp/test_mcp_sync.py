"""A chat session's writes through `atlas mcp` travel like the CLI's: on a record with
`sync: {auto: true}`, a put fetches first and pushes after, and a lost race is `stop:`."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.git import git
from support.gitteam import Team, cli
from support.mcp_client import call, text

# Git reads no user or system config here, and no ATLAS_* variable leaks in.
pytestmark = pytest.mark.usefixtures("isolated_git")


def test_an_mcp_put_reaches_the_remote(team: tuple[Team, Path]) -> None:
    remote, alice = team
    result = call(alice, "put", {"name": "plan", "body": "written in a chat\n"})
    assert not result.is_error, text(result)
    landed = remote.inspect()
    assert (landed / "projects/main/artifacts/plan/plan.v0001.md").is_file()
    assert git(landed, "log", "-1", "--format=%s")  # pushed as a commit of its own


def test_an_mcp_put_fetches_first_so_a_stale_expect_is_the_stop_sign(
        team: tuple[Team, Path], tmp_path: Path) -> None:
    remote, alice = team
    bob = remote.clone("bob")
    body = tmp_path / "bob.txt"
    body.write_text("bob's plan\n")
    assert cli(bob, "put", "plan", "-f", str(body), identity="bob")[0] == 0
    # Alice's checkout has not fetched bob's v1; the write fetches before it checks.
    assert not (alice / "projects/main/artifacts/plan").exists()
    result = call(alice, "put", {"name": "plan", "body": "alice's plan\n", "expect": 0})
    assert result.is_error and text(result).startswith("stop:"), text(result)
    assert "bob" in text(result)
    assert sorted(p.name for p in (alice / "projects/main/artifacts/plan").iterdir()
                  if not p.name.startswith(".")) == ["plan.v0001.md"]


@pytest.mark.parametrize(("tool", "args"), [
    ("get", {"name": "plan"}), ("feed", {}), ("search", {"query": "heron"}), ("begin", {})])
def test_an_mcp_read_fetches_first(team: tuple[Team, Path], tmp_path: Path, tool: str,
                                   args: dict[str, str]) -> None:
    """The reads of a chat session see the remote's latest, as the CLI's do."""
    remote, alice = team
    bob = remote.clone("bob")
    body = tmp_path / "bob.txt"
    body.write_text("the heron nests upstream\n")
    assert cli(bob, "put", "plan", "-f", str(body), identity="bob")[0] == 0
    result = call(alice, tool, args)
    assert not result.is_error, text(result)
    assert git(alice, "rev-parse", "refs/remotes/origin/main") == remote.remote_head()
    if tool != "begin":
        assert "heron" in text(result) or "plan" in text(result)
