"""`atlas site build`, with each engine: everything in the record appears where a reader
looks for it, links hold, MkDocs' strict build is clean, the nav stays bounded, and the
record is never written to."""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cdp import http_server
from support.runner import run_atlas, snapshot
from support.site_records import Facts, broken_links, page_text, parse, rich_record

from atlas_files import sitegen
from atlas_files.protocol import artifacts
from atlas_files.protocol.leases import ADVISORY
from atlas_files.sitegen.urls import href
from atlas_files.storage.record import Record


@pytest.fixture(scope="module", params=sitegen.ENGINES)
def built(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
          ) -> dict[str, Any]:
    """The rich record's site, built by each engine in turn."""
    root = tmp_path_factory.mktemp(f"site-{request.param}")
    record, facts = rich_record(root / "rec")
    before = snapshot(record.root)
    calls: list[tuple[str, int, int]] = []
    result = sitegen.build(record, root / "out", engine=request.param,
                           progress=lambda stage, done, total: calls.append((stage, done, total)))
    return {"record": record, "facts": facts, "result": result, "site": result.site_dir,
            "before": before, "progress": calls, "root": root}


def test_build_reports_what_it_built(built: dict[str, Any]) -> None:
    result = built["result"]
    facts: Facts = built["facts"]
    assert result.index.is_file()
    assert result.docs.topics == sum(len(t) for t in facts.topics.values())
    assert result.docs.versions == sum(n for t in facts.topics.values() for n in t.values())
    assert result.warnings == ()
    assert result.docs.problems == ()


def test_the_record_is_not_written(built: dict[str, Any]) -> None:
    assert snapshot(built["record"].root) == built["before"]


def test_home_shows_each_projects_status_and_recent_activity(built: dict[str, Any]) -> None:
    home = built["site"] / "index.html"
    text = page_text(home)
    assert "Web status 3: loader done." in text
    assert "ML status: run 7 queued." in text
    assert "Status v3 by alice" in text and "Status v1 by dana" in text
    links = {v for _, _, v in parse(home).links}
    assert {"status/web.html", "status/ml.html"} <= links
    assert "artifacts/web/run7.html#v2" not in links  # ml's topic lives under ml
    assert "artifacts/ml/run7.html#v2" in links  # recent activity links the version
    assert re.search(r"Recent activity .* run7 v2", text)


def test_status_history_has_every_version_with_diffs_and_corrections(
        built: dict[str, Any]) -> None:
    facts: Facts = built["facts"]
    for project, count in facts.status.items():
        page = built["site"] / "status" / f"{project}.html"
        parsed = parse(page)
        assert {f"v{n}" for n in range(1, count + 1)} <= parsed.ids
    web = built["site"] / "status" / "web.html"
    text = page_text(web)
    for n in (1, 2):  # older versions: their exact text, folded
        assert f"Web status {n}: loader in progress." in text
    assert "Changes from v2 to v3" in text and "Changes from v1 to v2" in text
    correction = next(c for c, ref in facts.corrections.items() if ref == "status@v2")
    assert f"../decisions.html#{correction}" in {v for _, _, v in parse(web).links}
    assert "the loader was not in progress" in text


def test_artifacts_index_lists_every_topic_with_its_marks(built: dict[str, Any]) -> None:
    facts: Facts = built["facts"]
    index = built["site"] / "artifacts" / "index.html"
    parsed = parse(index)
    links = {v for _, _, v in parsed.links}
    for project, topics in facts.topics.items():
        assert f"project--{project}" in parsed.ids
        for topic, count in topics.items():
            assert f"{project}/{topic}.html" in links
            assert f"{project}/{topic}.html#v{count}" in links
    html = index.read_text()
    row = {t: re.search(rf'{t}\.html"><strong>{t}</strong>.*?</tr>', html).group(0)  # type: ignore[union-attr]
           for t in ("design", "idea", "plan", "run7")}
    assert "atlas-mark--accepted" in row["design"] and "atlas-mark--proposal" in row["idea"]
    assert "v1 retracted" in row["run7"]
    assert "v1 corrected" in row["plan"]
    assert "v3" in page_text(index) and " of 3" not in page_text(index)


def test_each_topic_page_holds_all_versions_newest_first(built: dict[str, Any]) -> None:
    facts: Facts = built["facts"]
    for project, topics in facts.topics.items():
        for topic, count in topics.items():
            page = built["site"] / "artifacts" / project / f"{topic}.html"
            html = page.read_text()
            positions = [html.index(f'id="v{n}"') for n in range(count, 0, -1)]
            assert positions == sorted(positions), f"{topic}: not newest first"
    plan = built["site"] / "artifacts" / "web" / "plan.html"
    text = page_text(plan)
    assert "evaluate 3" in text  # the latest, rendered
    assert "Step list, revision 1." in text and "Step list, revision 2." in text
    html = plan.read_text()
    assert '<span class="atlas-del">-- evaluate 1</span>' in html
    assert '<span class="atlas-add">+- evaluate 2</span>' in html
    assert "Changes from v1 to v2" in text and "Changes from v2 to v3" in text
    assert "step two was missing" in text  # the correction of v1, on v1


def test_body_links_resolve_to_site_pages(built: dict[str, Any]) -> None:
    notes = built["site"] / "artifacts" / "web" / "notes.html"
    links = {v for _, _, v in parse(notes).links}
    assert {"plan.html#v2", "plan.html#v1", "../../status/web.html#v1",
            "https://example.com"} <= links
    assert not any("plan@v9" in v or "v9" in v for v in links)  # no such version: text only


def test_decisions_and_corrections_are_linked_both_ways(built: dict[str, Any]) -> None:
    facts: Facts = built["facts"]
    decisions = built["site"] / "decisions.html"
    parsed = parse(decisions)
    for decision in facts.decisions:
        assert decision in parsed.ids
    text = page_text(decisions)
    for words in ("git-friendly", "it blocks the rest", "the deadline came", "three seeds",
                  "one seed", "timed-out", "disagreed"):
        assert words in text
    rows = dict(re.findall(r'<tr id="(dec-[^"]+)" data-project="([a-z]+)"',
                           decisions.read_text()))
    assert sorted(rows.values()) == ["ml", "web", "web"]
    links = {v for _, _, v in parsed.links}
    targets = {"plan@v1": "artifacts/web/plan.html#v1", "status@v2": "status/web.html#v2",
               "run7@v1": "artifacts/ml/run7.html#v1"}
    for correction, ref in facts.corrections.items():
        assert correction in parsed.ids  # the correction's own row
        if ref.startswith("dec-"):
            assert f"#{ref}" in links or f"decisions.html#{ref}" in links
            assert f"decisions.html#{correction}" in links  # shown on the decision's row
            continue
        assert targets[ref] in links  # the correction links to what it corrects ...
        target_page = built["site"] / targets[ref].split("#")[0]
        back = {v for _, _, v in parse(target_page).links}
        depth = "../" * targets[ref].count("/")
        assert f"{depth}decisions.html#{correction}" in back  # ... and that links back
    accepted = built["site"] / "artifacts" / "web" / "design.html"
    assert f"../../decisions.html#{facts.decisions[0]}" in {v for _, _, v in
                                                             parse(accepted).links}


def test_leases_page_shows_state_advisory_and_countdown(built: dict[str, Any]) -> None:
    page = built["site"] / "leases.html"
    parsed = parse(page)
    for resource in built["facts"].leases:
        assert f"lease--{resource}" in parsed.ids
    text = page_text(page)
    assert " ".join(ADVISORY.split()) in text  # verbatim
    held = re.search(r'<tr id="lease--gpubox.gpu0" data-atlas-expires="([^"]+)"',
                     page.read_text())
    assert held is not None
    assert "training run 7" in text and "released" in text and "expired" in text
    assert "assets/atlas.js" in {posixpath.normpath(v) for _, _, v in parsed.links}


def test_telemetry_page_shows_machines_staleness_and_memory(built: dict[str, Any]) -> None:
    page = built["site"] / "telemetry.html"
    html = page.read_text()
    for machine in built["facts"].machines:
        assert f'id="machine--{machine}"' in html
    section = {m: html.split(f'id="machine--{m}"', 1)[1].split("</div>", 1)[0]
               for m in built["facts"].machines}
    assert "atlas-mark--stale" in section["oldbox"]
    assert "atlas-mark--stale" not in section["gpubox"]
    assert "unreachable" in section["downbox"] and "connection timed out" in section["downbox"]
    assert 'style="width: 50.0%"' in section["gpubox"]  # 40960 of 81920 MiB
    assert "40,960 / 81,920 MiB" in section["gpubox"]


def test_no_broken_link_or_anchor(built: dict[str, Any]) -> None:
    assert broken_links(built["site"]) == []


@pytest.mark.skipif(shutil.which("linkchecker") is None and not os.environ.get("CI"),
                    reason="linkchecker not installed (it is in the test extras)")
def test_linkchecker_finds_nothing(built: dict[str, Any]) -> None:
    # Over HTTP: run as root, linkchecker drops its privileges and cannot read tmp_path.
    server, base = http_server(built["site"])
    try:
        proc = subprocess.run(
            ["linkchecker", "--no-status", "--no-warnings", f"{base}/index.html"],
            capture_output=True, text=True, timeout=300,
        )
    finally:
        server.kill()
        server.wait()
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "0 errors found" in proc.stdout
    checked = re.search(r"(\d+) links? in (\d+) URLs? checked", proc.stdout)
    assert checked is not None and int(checked.group(2)) >= built["result"].docs.pages


def test_strict_mkdocs_build_of_the_written_folder_is_clean(built: dict[str, Any]) -> None:
    out = built["result"].out_dir
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(out / "mkdocs.yml"),
         "-d", str(built["root"] / "strict")],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "WARNING" not in proc.stderr


def test_config_is_plain_and_the_nav_bounded(built: dict[str, Any]) -> None:
    out = built["result"].out_dir
    config = yaml.safe_load((out / "mkdocs.yml").read_text())
    assert config["plugins"] == ["search", "tags"]
    assert "hooks" not in config
    assert config["theme"]["name"] == "material"
    assert config["use_directory_urls"] is False
    for key in ("not_found", "anchors", "absolute_links", "unrecognized_links"):
        assert config["validation"]["links"][key] == "warn"
    flat = yaml.safe_dump(config["nav"])
    assert "artifacts/web/" not in flat and "artifacts/ml/" not in flat
    assert len(config["nav"]) == 8  # Tasks has one page per project, like Status
    assert "/artifacts/*/*.md" in config["not_in_nav"]
    exts = {e if isinstance(e, str) else next(iter(e)) for e in config["markdown_extensions"]}
    assert not exts & {"attr_list", "md_in_html", "pymdownx.escapeall"}
    # One page per topic, never one per version.
    topic_pages = list((out / "docs" / "artifacts").glob("*/*.md"))
    assert len(topic_pages) == sum(len(t) for t in built["facts"].topics.values())


def test_progress_reports_both_stages_to_the_end(built: dict[str, Any]) -> None:
    calls = built["progress"]
    stages = [c[0] for c in calls]
    assert stages.index("build") > stages.index("write")
    for stage in ("write", "build"):
        last = [c for c in calls if c[0] == stage][-1]
        assert last[1] == last[2] > 0


def test_rebuild_rewrites_only_what_changed(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    artifacts.put(record, "a", "one\n", author="alice")
    artifacts.put(record, "b", "two\n", author="alice")
    out = tmp_path / "out"
    sitegen.write_docs(record, out)
    page_b = out / "docs" / "artifacts" / "web" / "b.md"
    stamp = page_b.stat().st_mtime_ns
    stray = out / "docs" / "stray.md"
    stray.write_text("left by hand")
    artifacts.put(record, "a", "one, again\n", author="alice", expect=1)
    sitegen.write_docs(record, out)
    assert page_b.stat().st_mtime_ns == stamp
    assert "one, again" in (out / "docs" / "artifacts" / "web" / "a.md").read_text()
    assert not stray.exists()


def test_damaged_version_is_left_out_and_named(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    artifacts.put(record, "a", "fine\n", author="alice")
    bad = record.artifact_stream("a", "web").path(2)
    bad.write_text("no front matter here\n")
    result = sitegen.build(record, tmp_path / "out")
    assert any("a.v0002.md" in p for p in result.docs.problems)
    home = page_text(result.site_dir / "index.html")
    assert "Problems" in home and "a.v0002.md" in home
    assert "fine" in page_text(result.site_dir / "artifacts" / "web" / "a.html")


def test_cli_build_json_and_text(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    artifacts.put(record, "a", "hello\n", author="alice")
    out = tmp_path / "out"
    r = run_atlas("site", "build", "--out", str(out), "--json", record=record.root,
                  timeout=300)
    assert r.returncode == 0, r.stderr
    data = r.json()
    assert data["index"] == str(out / "site" / "index.html") and data["topics"] == 1
    assert Path(data["index"]).is_file() and data["warnings"] == []
    r = run_atlas("site", "build", "--out", str(out), record=record.root, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == f"open {out / 'site' / 'index.html'}"


def test_default_out_dir_lies_beside_the_record(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    r = run_atlas("site", "build", record=record.root, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rec-site" / "site" / "index.html").is_file()
    assert not any(p.name == "site" for p in record.root.iterdir())


def test_out_dir_inside_the_record_or_foreign_is_refused(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    before = snapshot(record.root)
    r = run_atlas("site", "build", "--out", str(record.root / "_site"), record=record.root)
    assert r.returncode == 2
    assert "outside" in r.stderr and "Traceback" not in r.stderr
    assert snapshot(record.root) == before
    r = run_atlas("site", "build", "--out", str(tmp_path), record=record.root)
    assert r.returncode == 2  # it holds the record
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    r = run_atlas("site", "build", "--out", str(foreign), record=record.root)
    assert r.returncode == 2 and "not empty" in r.stderr
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]



@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "web", "index", "x.y"]), min_size=1, max_size=4),
       st.lists(st.sampled_from(["a", "b", "web", "index", "x.y"]), min_size=1, max_size=4))
def test_relative_links_land_on_their_page(source: list[str], target: list[str]) -> None:

    page, to = "/".join(source) + ".md", "/".join(target) + ".md"
    link = href(page, to, "v2")
    path, _, anchor = link.partition("#")
    assert anchor == "v2" and not path.startswith("/")
    landed = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    assert landed == to[:-3] + ".html"


def test_pages_load_nothing_from_other_hosts(built: dict[str, Any]) -> None:
    for page in built["site"].rglob("*.html"):
        for tag, attr, value in parse(page).links:
            if tag in ("link", "script", "img", "iframe") and attr in ("href", "src"):
                assert not re.match(r"^(https?:)?//", value), (page.name, tag, value)
