"""The demo ends with the record's site: everything the demo wrote is in it, where a reader
looks, and the record still passes `atlas check`."""

from __future__ import annotations

from pathlib import Path

from support.runner import run_atlas
from support.site_records import broken_links, page_text, parse

from atlas_files.cli import demo
from atlas_files.protocol import artifacts, corrections, decisions, leases, status
from atlas_files.protocol.leases import ADVISORY


def test_demo_builds_a_site_showing_everything(tmp_path: Path) -> None:
    said: list[str] = []
    record = demo.run(tmp_path / "rec", said.append)
    opened = [line.removeprefix("open ") for line in said if line.startswith("open ")]
    assert opened, said[-10:]
    index = Path(opened[-1])
    assert index.is_file()
    assert record.root.resolve() not in index.resolve().parents  # outside the record
    site = index.parent

    check = run_atlas("check", record=record.root, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr

    assert broken_links(site) == []
    home = page_text(site / "index.html")
    artifacts_page = parse(site / "artifacts" / "index.html")
    artifact_links = {v for _, _, v in artifacts_page.links}
    decided = parse(site / "decisions.html")
    for project in record.config.projects:
        assert project in home
        versions = status.log(record, project)
        if versions:
            ids = parse(site / "status" / f"{project}.html").ids
            assert {f"v{v.version}" for v in versions} <= ids
        for topic in artifacts.ls(record, project):
            assert f"{project}/{topic.name}.html#v{topic.version}" in artifact_links
            ids = parse(site / "artifacts" / project / f"{topic.name}.html").ids
            assert {f"v{n}" for n in range(1, topic.version + 1)} <= ids
        for d in decisions.list_decisions(record, project):
            assert d.id in decided.ids
        for c in corrections.list_corrections(record, project):
            assert c.id in decided.ids
    lease_page = parse(site / "leases.html")
    for lease in leases.ls(record):
        assert f"lease--{lease.resource}" in lease_page.ids
    assert " ".join(ADVISORY.split()) in page_text(site / "leases.html")
