"""A claim of a lease one holds already renews it: when that shortens the lease or
replaces its why, the result says so, in MCP (a warning after the result, and `changed`
in it) and in the CLI (a warning on stderr, and `changed` in --json)."""

from __future__ import annotations

import json
from pathlib import Path

from support.mcp_client import call, text
from support.runner import run_atlas

from atlas_files.facts import timeutil
from atlas_files.storage.record import Record


def test_a_shorter_claim_by_the_holder_says_it_shortened_the_lease_and_replaced_its_why(
        tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec")
    first = call(record.root, "lease", {"action": "claim", "resource": "gpu0",
                                        "duration": "3h", "why": "long training run"})
    assert not first.is_error and first.structured_content["changed"] == {}
    again = call(record.root, "lease", {"action": "claim", "resource": "gpu0",
                                        "duration": "30m", "why": "quick eval"})
    assert not again.is_error
    doc = again.structured_content
    assert doc["action"] == "renew" and doc["why"] == "quick eval"
    assert doc["changed"]["why"] == {"was": "long training run", "now": "quick eval"}
    was, now = (timeutil.parse_time(doc["changed"]["expires_at"][k]) for k in ("was", "now"))
    assert 2.4 * 3600 < (was - now).total_seconds() < 2.6 * 3600
    said = text(again)
    assert "warning: this claim renewed your lease of gpu0 and shortened it by 2h30m" in said
    assert "it was 'long training run', it is now 'quick eval'" in said
    # A longer claim with the same why says nothing more than that it renewed.
    longer = call(record.root, "lease", {"action": "claim", "resource": "gpu0",
                                         "duration": "2h", "why": "quick eval"})
    assert list(longer.structured_content["changed"]) == ["expires_at"]
    assert "warning:" not in text(longer)


def test_the_cli_says_the_same_on_stderr(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec")
    claim = ("lease", "claim", "gpu0", "--for")
    assert run_atlas(*claim, "2h", "--why", "a", record=record.root,
                     identity="alice").returncode == 0
    shorter = run_atlas(*claim, "10m", "--why", "b", "--json", record=record.root,
                        identity="alice")
    assert shorter.returncode == 0, shorter.stderr
    assert json.loads(shorter.stdout)["changed"]["why"] == {"was": "a", "now": "b"}
    assert "shortened it by 1h50m" in shorter.stderr
    assert "replaced the why of your lease of gpu0" in shorter.stderr
    plain = run_atlas(*claim, "5m", "--why", "b", record=record.root, identity="alice")
    assert "renewed gpu0" in plain.stdout and "shortened it by 5m" in plain.stderr
