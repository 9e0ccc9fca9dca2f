"""`atlas site build --engine`: the engine is chosen by the option or atlas.yaml, its output
is checked rather than its exit code trusted, and a rebuild costs what changed."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from dataclasses import dataclass
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from support.runner import snapshot

from atlas_files import sitegen
from atlas_files.cli import main
from atlas_files.facts import timeutil
from atlas_files.facts.errors import AtlasError, BadInput
from atlas_files.protocol import artifacts, corrections
from atlas_files.sitegen import engines, model, zensical_engine
from atlas_files.storage.record import Record

CACHE_FREE = {".atlas-cache", "assets/atlas-build.js"}


@dataclass
class Ran:
    exit_code: int
    stdout: str
    stderr: str


def _site_cli(capsys: pytest.CaptureFixture[str], record: Record, *args: str) -> Ran:
    """`atlas site build ARGS` in this process, as the installed command runs it."""
    capsys.readouterr()
    try:
        main(["--record", str(record.root), "site", "build", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return Ran(code, out, err)


def _small(tmp_path: Path, name: str = "rec") -> Record:
    record = Record.init(tmp_path / name, ["web"])
    artifacts.put(record, "plan", "The plan.\n", author="alice")
    return record


def test_engine_comes_from_the_option_else_atlas_yaml(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _small(tmp_path)
    out = tmp_path / "out"
    r = _site_cli(capsys, record, "--out", str(out), "--engine", "zensical", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)  # Zensical's own chatter does not reach our stdout
    assert data["engine"] == "zensical" and data["search_entries"] > 0
    assert (out / "site" / "search.json").is_file()
    with (record.root / "atlas.yaml").open("a") as fh:
        fh.write("site:\n  engine: zensical\n")
    r = _site_cli(capsys, record, "--out", str(out), "--json")
    assert json.loads(r.stdout)["engine"] == "zensical"
    r = _site_cli(capsys, record, "--out", str(out), "--engine", "mkdocs", "--json")
    assert json.loads(r.stdout)["engine"] == "mkdocs"
    assert (out / "site" / "search" / "search_index.json").is_file()
    assert not (out / "site" / "search.json").exists()  # the whole site was replaced


def test_a_bad_engine_is_refused_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _small(tmp_path)
    r = _site_cli(capsys, record, "--out", str(tmp_path / "a"), "--engine", "hugo")
    assert r.exit_code == 2 and "hugo" in r.stderr
    with (record.root / "atlas.yaml").open("a") as fh:
        fh.write("site:\n  engine: sphinx\n")
    r = _site_cli(capsys, record, "--out", str(tmp_path / "b"))
    assert r.exit_code == 2
    assert "site.engine in atlas.yaml is 'sphinx'" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_zensical_not_installed_is_said_with_the_install_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = _small(tmp_path)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "zensical" else real(name, *a))
    with pytest.raises(BadInput) as caught:
        sitegen.build(record, tmp_path / "out", engine="zensical")
    assert caught.value.hint is not None and "atlas-files[zensical]" in caught.value.hint
    assert not (tmp_path / "out").exists()


def test_an_engine_that_exits_0_without_the_pages_fails_the_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Zensical that says it built the site (exit 0) but wrote nothing: the build says
    which pages are missing (exit 2), and the last good site stays in place."""
    record = _small(tmp_path)
    out = tmp_path / "out"
    good = sitegen.build(record, out, engine="mkdocs")
    fake = tmp_path / "fake" / "zensical"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("print('Build finished in 0.01s')\n")
    monkeypatch.setenv("PYTHONPATH", str(fake.parent))
    monkeypatch.setattr(zensical_engine, "require", lambda: None)
    artifacts.put(record, "more", "Another topic.\n", author="bob")
    with pytest.raises(AtlasError) as caught:
        sitegen.build(record, out, engine="zensical")
    assert "zensical built the site but left out" in caught.value.message
    assert "artifacts/web/more.html" in caught.value.message
    assert good.index.is_file() and not (out / "site" / "artifacts" / "web" / "more.html").exists()
    assert not (out / zensical_engine.BUILD_DIR).exists()


@pytest.mark.parametrize("engine", engines.ENGINES)
def test_verify_reads_each_engines_search_index(tmp_path: Path, engine: str) -> None:
    site = tmp_path / "site"
    (site / "artifacts" / "web").mkdir(parents=True)
    for page in ("index.html", "artifacts/web/plan.html"):
        (site / page).write_text("<html></html>")
    index = site / engines.SEARCH_INDEX[engine]
    index.parent.mkdir(parents=True, exist_ok=True)
    pages = ["index.md", "artifacts/web/plan.md"]
    key = "docs" if engine == "mkdocs" else "items"
    with pytest.raises(AtlasError, match="without a search index"):
        engines.verify(engine, site, pages)
    index.write_text(json.dumps({"config": {}, key: [{"location": "index.html"}]}))
    with pytest.raises(AtlasError, match=r"search index leaves out 1 .*artifacts/web/plan\.html"):
        engines.verify(engine, site, pages)
    home = "" if engine == "mkdocs" else "index.html"  # MkDocs names the home page ""
    index.write_text(json.dumps({"config": {}, key: [
        {"location": home}, {"location": "artifacts/web/plan.html#v1"}]}))
    assert engines.verify(engine, site, pages) == 2
    index.write_text("<html>not an index</html>")
    with pytest.raises(AtlasError, match="not a JSON object"):
        engines.verify(engine, site, pages)


# -- rebuilds that cost what changed -------------------------------------------------------


def _docs(out: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(out / "docs").items() if k not in CACHE_FREE}


def _same_as_a_first_build(record: Record, out: Path, tmp_path: Path) -> None:
    """The docs a rebuild left are those a first build into a new folder writes."""
    now = timeutil.now()
    sitegen.write_docs(record, out, now=now)
    cold = tmp_path / f"cold-{len(list(tmp_path.glob('cold-*')))}"
    sitegen.write_docs(record, cold, now=now)
    assert _docs(out) == _docs(cold)


def test_a_rebuild_reads_only_the_topic_that_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    for name in ("alpha", "beta", "gamma"):
        artifacts.put(record, name, f"About {name}.\n", author="alice")
    out = tmp_path / "out"
    sitegen.write_docs(record, out)
    read: list[str] = []
    real = model.read_versions

    def counting(stream: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(stream.name)
        return real(stream, *args, **kwargs)

    monkeypatch.setattr(model, "read_versions", counting)
    artifacts.put(record, "beta", "About beta, again.\n", author="bob", expect=1)
    result = sitegen.write_docs(record, out)
    assert [n for n in read if n != "status"] == ["beta"]
    assert result.topics == 3 and result.versions == 4
    monkeypatch.setattr(model, "read_versions", real)
    _same_as_a_first_build(record, out, tmp_path)


def test_a_kept_page_still_follows_links_marks_and_hand_edits(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    artifacts.put(record, "notes", "See [beta two](beta@v2).\n", author="alice")
    artifacts.put(record, "beta", "Beta one.\n", author="alice")
    out = tmp_path / "out"
    sitegen.write_docs(record, out)
    notes = out / "docs" / "artifacts" / "web" / "notes.md"
    assert "beta.html#v2" not in notes.read_text()  # no such version yet: text only
    # notes did not change, but its link now has a place to go.
    artifacts.put(record, "beta", "Beta two.\n", author="bob", expect=1)
    sitegen.write_docs(record, out)
    assert "beta.html#v2" in notes.read_text()
    _same_as_a_first_build(record, out, tmp_path)
    corrections.correct(record, "notes@v1", what="the link was early", author="bob",
                        project="web")
    sitegen.write_docs(record, out)
    assert "the link was early" in notes.read_text()
    _same_as_a_first_build(record, out, tmp_path)
    version = record.artifact_stream("beta", "web").path(1)
    version.chmod(0o644)
    version.write_text(version.read_text().replace("Beta one.", "Beta one, edited by hand."))
    sitegen.write_docs(record, out)
    assert "Beta one, edited by hand." in (notes.parent / "beta.md").read_text()
    _same_as_a_first_build(record, out, tmp_path)
    notes.unlink()  # a page removed from the docs folder is written again
    sitegen.write_docs(record, out)
    assert "beta.html#v2" in notes.read_text()


def test_pages_do_not_change_with_the_time_of_the_build(tmp_path: Path) -> None:
    """Only the build's time asset and the pages about the present (home, leases,
    telemetry, each project's task board) change between two builds of the same record;
    the config does not, since a changed config makes Zensical build every page again."""
    record = _small(tmp_path)
    corrections.correct(record, "plan@v1", what="a slip", author="bob", project="web")
    out = tmp_path / "out"
    now = timeutil.now()
    sitegen.write_docs(record, out, now=now)
    before = snapshot(out)
    sitegen.write_docs(record, out, now=now + timedelta(days=3, hours=5))
    after = snapshot(out)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed == {"docs/assets/atlas-build.js", "docs/index.md", "docs/leases.md",
                       "docs/tasks/web.md"}


def test_zensical_rebuilds_into_the_same_build_folder(tmp_path: Path) -> None:
    """Zensical's cache is keyed by its config: the second build must present the same
    config (the same build folder), and still yield a complete site."""
    record = _small(tmp_path)
    out = tmp_path / "out"
    sitegen.build(record, out, engine="zensical")
    config = (out / zensical_engine.CONFIG).read_bytes()
    artifacts.put(record, "plan", "The plan, again.\n", author="bob", expect=1)
    result = sitegen.build(record, out, engine="zensical")
    assert (out / zensical_engine.CONFIG).read_bytes() == config
    assert "The plan, again." in (result.site_dir / "artifacts" / "web" / "plan.html").read_text()
    assert result.search_entries > 0


# -- small things a reader sees ------------------------------------------------------------


def test_counts_and_the_footer_read_as_english(tmp_path: Path) -> None:
    record = _small(tmp_path, name="record")  # a record in a folder named "record"
    result = sitegen.build(record, tmp_path / "out")
    home = (result.site_dir / "index.html").read_text()
    text = " ".join(home.split())
    assert "1 project</a>," in text and "1 topic</a>" in text and "0 decisions</a>" in text
    assert "1 topics" not in text and "1 projects" not in text
    assert "record record" not in text
    assert "A snapshot of the record in <code>record</code>" in text
    topic = " ".join((result.site_dir / "artifacts" / "web" / "plan.html").read_text().split())
    assert "1 version, newest first" in topic


def test_the_build_time_is_in_one_script_not_in_the_pages(tmp_path: Path) -> None:
    record = _small(tmp_path)
    now = timeutil.parse_time("2030-05-04T03:02:01Z")
    result = sitegen.write_docs(record, tmp_path / "out", now=now)
    script = (result.docs_dir / "assets" / "atlas-build.js").read_text()
    assert '"builtAt": "2030-05-04T03:02:01' in script
    assert "2030-05-04" not in (result.docs_dir / "artifacts" / "web" / "plan.md").read_text()
    assert "2030" not in result.config_file.read_text()
    assert textwrap.dedent("""\
        extra_javascript:
        - assets/atlas-build.js
        - assets/atlas.js""") in result.config_file.read_text()


# -- text shown as written -----------------------------------------------------------------

FENCED_V1 = "Setup:\n\n```\nthreshold = 0.4\n```\n\n~~~\nstep two\n~~~\n"
# A fence that shows a fence: Python-Markdown renders the inner ``` lines as code.
FENCED_V2 = "Example:\n\n~~~~\n```\nthreshold = 0.5\n```\n~~~~\n"


class _Pre(HTMLParser):
    """The text of each top-level <pre> of a page, and how many <pre> are nested."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self.depth = 0
        self.nested = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "pre":
            self.depth += 1
            self.nested += self.depth > 1
            if self.depth == 1:
                self.texts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.texts[-1] += data


@pytest.mark.parametrize("engine", sitegen.ENGINES)
def test_fences_in_texts_are_shown_as_written(tmp_path: Path, engine: str) -> None:
    """An older version's text is shown exactly as written and a rendered code block
    keeps its lines: the engine's own Markdown pass (fenced code in MkDocs, SuperFences
    in Zensical) must not turn a fence inside the generator's HTML into a code block."""
    record = Record.init(tmp_path / "rec", ["web"])
    artifacts.put(record, "fenced", FENCED_V1, author="alice")
    artifacts.put(record, "fenced", FENCED_V2, author="bob", expect=1)
    result = sitegen.build(record, tmp_path / "out", engine=engine)
    page = _Pre()
    page.feed((result.site_dir / "artifacts" / "web" / "fenced.html").read_text())
    assert page.nested == 0
    assert FENCED_V1 in page.texts  # v1, folded, as written
    assert "```\nthreshold = 0.5\n```\n" in page.texts  # v2's code block, rendered
