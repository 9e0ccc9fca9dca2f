"""`atlas check --links-only` on real documentation: every broken link, and only broken
links, with a mkdocs.yml (judged as that site builds) and without one (atlas's reader).

Each class of mistake the checker made on public MkDocs sites has a five-line page here,
in both modes."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.linksites import site
from support.runner import run_atlas

from atlas_files.check import check_links
from atlas_files.linkcheck.findings import ERROR

MODES = ["plain", "site"]
# Fewer than a real site's (support.linksites.EXTENSIONS): each page here is judged as
# these few would render it.
EXTENSIONS: list[object] = [
    "attr_list", "footnotes", "admonition", "md_in_html", "pymdownx.details",
    "pymdownx.superfences", {"pymdownx.tabbed": {"alternate_style": True}},
    {"pymdownx.snippets": {"base_path": ["docs/includes"]}}]


def docs(tmp_path: Path, mode: str) -> Path:
    folder = site(tmp_path, EXTENSIONS) if mode == "site" else tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    return folder


def findings(folder: Path, pages: dict[str, str]) -> list[tuple[str, str, int, str]]:
    """(code, severity, line, file) of each finding on ``pages`` written in ``folder``."""
    for name, text in pages.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    report = check_links([folder])
    return [(f.code, f.severity, f.line, Path(f.path).name) for f in report.findings]


def errors(found: list[tuple[str, str, int, str]]) -> list[tuple[str, str, int, str]]:
    return [f for f in found if f[1] == ERROR]


# -- Markdown that was parsed wrongly ---------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_inline_attr_list_ids_are_anchors(tmp_path: Path, mode: str) -> None:
    page = ("- **locale**{ #mkdocs-locale }: the language\n"
            "- [](){#typeddict} a typed dict\n\n"
            "[a](#mkdocs-locale) [b](#typeddict) [c](#gone)\n")
    assert findings(docs(tmp_path, mode), {"index.md": page}) == [
        ("ATL011", ERROR, 4, "index.md")]


@pytest.mark.parametrize("mode", MODES)
def test_footnote_ids_are_anchors(tmp_path: Path, mode: str) -> None:
    page = "Text[^1] and more[^note].\n\n[^1]: One.\n[^note]: Two.\n\n" \
           "[a](#fn:1) [b](#fnref:note) [c](#fn:2)\n"
    assert findings(docs(tmp_path, mode), {"index.md": page}) == [
        ("ATL011", ERROR, 6, "index.md")]


CONTAINERS = """\
# Top

!!! note "In an admonition"
    ## Admonished

??? note "In a details block"
    ## Detailed

=== "Tab"

    ## Tabbed

- a list item

    ## Listed

- another

    > ## Quoted in a list

[a](#admonished) [b](#detailed) [c](#tabbed) [d](#listed) [e](#quoted-in-a-list) [f](#nope)
"""


@pytest.mark.parametrize("mode", MODES)
def test_headings_inside_containers_are_anchors(tmp_path: Path, mode: str) -> None:
    assert findings(docs(tmp_path, mode), {"index.md": CONTAINERS}) == [
        ("ATL011", ERROR, 21, "index.md")]


@pytest.mark.parametrize("mode", MODES)
def test_links_in_indented_code_and_comments_are_not_links(tmp_path: Path, mode: str) -> None:
    page = ("Some text.\n\n    [code](gone-1.md)\n\n<!-- [hidden](gone-2.md)\n"
            "[still hidden](gone-3.md) -->\n\nText <!-- [inline](gone-4.md) --> "
            "[real](gone-5.md)\n")
    assert findings(docs(tmp_path, mode), {"index.md": page}) == [
        ("ATL010", ERROR, 8, "index.md")]


@pytest.mark.parametrize("mode", MODES)
def test_a_wrapped_line_that_starts_like_a_definition_is_prose(tmp_path: Path,
                                                               mode: str) -> None:
    page = "The option is described in\n[the guide]: see its second part, not a link.\n"
    assert findings(docs(tmp_path, mode), {"index.md": page}) == []


@pytest.mark.parametrize("mode", MODES)
def test_of_two_definitions_of_a_label_the_last_counts(tmp_path: Path, mode: str) -> None:
    folder = docs(tmp_path, mode)
    page = "See [the plan][plan].\n\n[plan]: gone.md\n[plan]: other.md\n"
    found = findings(folder, {"index.md": page, "other.md": "# Other\n"})
    assert errors(found) == []
    assert [(f[0], f[2]) for f in found] == [("ATL016", 3)]


@pytest.mark.parametrize("mode", MODES)
def test_a_broken_unused_definition_is_a_warning(tmp_path: Path, mode: str) -> None:
    page = "Nothing links here.\n\n[unused]: gone.md\n[used]: gone-too.md\n\nSee [used].\n"
    found = findings(docs(tmp_path, mode), {"index.md": page})
    assert sorted((f[0], f[1], f[2]) for f in found) == [
        ("ATL010", ERROR, 4), ("ATL016", "warning", 3)]


# -- anchors made by the build ----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_snippets_are_followed(tmp_path: Path, mode: str) -> None:
    # Where the site's snippets base_path says; without a site, beside the page or above.
    folder = docs(tmp_path, mode)
    part = "includes/part.md" if mode == "site" else "part.md"
    page = "# Page\n\n--8<-- \"part.md\"\n\n[a](#included-heading) [b](#not-included)\n"
    found = findings(folder, {"index.md": page, part: "## Included heading\n"})
    assert found == [("ATL011", ERROR, 5, "index.md")]


def test_a_snippet_that_cannot_be_found_makes_anchors_unverifiable(tmp_path: Path) -> None:
    page = "# Page\n\n--8<-- \"nowhere.md\"\n\n[a](#from-the-snippet)\n"
    found = findings(docs(tmp_path, "plain"), {"index.md": page})
    assert [(f[0], f[1]) for f in found] == [("ATL017", "warning")]


@pytest.mark.parametrize("mode", MODES)
def test_anchors_of_a_build_directive_cannot_be_checked_from_source(tmp_path: Path,
                                                                    mode: str) -> None:
    folder = site(tmp_path, EXTENSIONS, plugins=["search", "mkdocstrings"]) if mode == "site" \
        else docs(tmp_path, mode)
    folder.mkdir(exist_ok=True)
    pages = {"api.md": "# API\n\n::: package.module\n",
             "index.md": "[f](api.md#package.module.func) [g](api.md#api)\n"}
    found = findings(folder, pages)
    assert [(f[0], f[1], f[3]) for f in found] == [("ATL017", "warning", "index.md")]
    assert errors(found) == []


def test_a_hook_that_changes_pages_makes_anchors_unverifiable(tmp_path: Path) -> None:
    (tmp_path / "hooks.py").write_text("def on_page_markdown(markdown, **kw):\n    return x\n")
    folder = site(tmp_path, EXTENSIONS, hooks=["hooks.py"])
    found = findings(folder, {"index.md": "# Top\n\n[a](#made-by-the-hook) [b](gone.md)\n"})
    assert sorted(f[0] for f in found) == ["ATL010", "ATL017"]


# -- what was missed -------------------------------------------------------------------------


def test_a_link_to_a_folder_is_no_page_of_a_site(tmp_path: Path) -> None:
    folder = docs(tmp_path, "site")
    found = findings(folder, {"index.md": "[sub](sub/) [ok](sub/index.md)\n",
                              "sub/index.md": "# Sub\n"})
    assert found == [("ATL019", ERROR, 1, "index.md")]


def test_without_a_site_a_link_to_a_folder_is_a_warning(tmp_path: Path) -> None:
    folder = docs(tmp_path, "plain")
    found = findings(folder, {"index.md": "[sub](sub/) [ok](sub/index.md)\n",
                              "sub/index.md": "# Sub\n"})
    assert found == [("ATL019", "warning", 1, "index.md")]


def test_a_link_outside_docs_dir_is_not_part_of_the_site(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Readme\n")
    found = findings(docs(tmp_path, "site"), {"index.md": "[readme](../README.md)\n"})
    assert found == [("ATL010", ERROR, 1, "index.md")]


def test_without_a_site_a_link_outside_the_folder_is_fine(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Readme\n")
    assert findings(docs(tmp_path, "plain"), {"index.md": "[readme](../README.md)\n"}) == []


@pytest.mark.parametrize("mode", MODES)
def test_a_heading_in_raw_html_has_no_id(tmp_path: Path, mode: str) -> None:
    page = ("<div class=\"box\">\n## Raw\n</div>\n\n<div markdown=\"1\">\n\n## Rendered\n\n"
            "</div>\n\n[a](#raw) [b](#rendered)\n")
    assert findings(docs(tmp_path, mode), {"index.md": page}) == [
        ("ATL011", ERROR, 11, "index.md")]


# -- the site's own configuration -------------------------------------------------------------


def test_the_sites_slugify_and_validation_levels_are_used(tmp_path: Path) -> None:
    folder = site(tmp_path, text=(
        "site_name: t\nmarkdown_extensions:\n  - toc:\n      slugify: !!python/object/apply:"
        "pymdownx.slugs.slugify {kwds: {case: lower}}\n      separator: _\n"
        "validation:\n  links:\n    anchors: info\n"))
    found = findings(folder, {"index.md": "# Über Alles\n\n[a](#über_alles) [b](#uber-alles)\n"})
    # The site's slugify keeps the umlaut; its validation makes a broken anchor a warning.
    assert found == [("ATL011", "warning", 3, "index.md")]


def test_a_missing_extension_is_said_once_and_code_is_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    folder = site(tmp_path, text=(
        "site_name: t\nmarkdown_extensions:\n  - no_such_extension_here\n"
        "  - toc:\n      slugify: !!python/name:os.system\n"
        f"  - pymdownx.superfences:\n      custom_fences:\n        - name: x\n"
        f"          class: x\n          format: !!python/name:builtins.print\n"
        f"extra: !!python/object/apply:os.system ['touch {marker}']\n"))
    found = findings(folder, {"a.md": "# A\n[x](b.md#b)\n", "b.md": "# B\n[y](a.md#a)\n"})
    assert not marker.exists()
    said = [f for f in found if f[0] == "ATL018"]
    # The extension not installed, the two python names in its settings, and the one in
    # `extra:`, each on its own line.
    assert len(said) == 4 and all(f[3] == "mkdocs.yml" for f in said), found
    assert [f[2] for f in said] == [3, 4, 6, 11]
    assert errors(found) == []


def test_files_outside_docs_dir_are_read_without_the_site(tmp_path: Path) -> None:
    site(tmp_path, EXTENSIONS)
    (tmp_path / "README.md").write_text("[docs](docs/) [gone](gone.md)\n")
    found = findings(tmp_path, {"docs/index.md": "# Home\n"})
    assert sorted((f[0], f[3]) for f in found) == [("ATL010", "README.md"),
                                                  ("ATL019", "README.md")]


def test_the_cli_takes_a_named_mkdocs_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "site.yml").write_text("site_name: t\ndocs_dir: ../pages\n"
                                                "markdown_extensions: [attr_list]\n")
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "index.md").write_text("[sub](sub/) *text*{ #x } [x](#x)\n")
    (tmp_path / "pages" / "sub").mkdir()
    named = run_atlas("check", "--links-only", "--json", "--mkdocs", "conf/site.yml", "pages",
                      cwd=tmp_path)
    assert [f["code"] for f in named.json()["findings"]] == ["ATL019"], named.stdout
    missing = run_atlas("check", "--links-only", "--mkdocs", "nope.yml", "pages", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.yml" in missing.stderr
    wrong = run_atlas("check", "--mkdocs", "conf/site.yml", cwd=tmp_path)
    assert wrong.returncode == 2 and "--links-only" in wrong.stderr


@pytest.mark.parametrize("mode", MODES)
def test_a_longer_fence_does_not_close_a_code_block(tmp_path: Path, mode: str) -> None:
    # Python-Markdown (fenced_code, and pymdownx.superfences) closes a fence only with
    # one of the same length: the heading after the longer one is still code.
    page = "```\ncode\n````\n\n# Heading A\n\n```\n\n# B\n\n[a](#heading-a) [b](#b)\n"
    assert findings(docs(tmp_path, mode), {"index.md": page}) == [
        ("ATL011", ERROR, 11, "index.md")]


def test_an_installed_extension_outside_the_toolkits_is_never_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "brokenext.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "from markdown.extensions import Extension\n"
        "class Broken(Extension):\n"
        "    def extendMarkdown(self, md):\n"
        "        raise RuntimeError('this site extension is broken')\n"
        "def makeExtension(**kwargs):\n"
        "    return Broken(**kwargs)\n")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))  # installed: not the project's own
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "lib"))
    folder = site(tmp_path / "project", ["attr_list", "brokenext"])
    (folder / "a.md").write_text("# A\n*x*{ #here }\n[b](b.md#b) [gone](b.md#gone)\n")
    (folder / "b.md").write_text("# B\n[a](a.md#here)\n")
    result = run_atlas("check", "--links-only", "--json", str(folder), cwd=tmp_path / "project")
    assert "Traceback" not in result.stderr
    assert not marker.exists()  # not even imported
    found = {(f["code"], f["severity"]) for f in result.json()["findings"]}
    # Said once, as a warning on mkdocs.yml; the pages are still judged with attr_list.
    assert found == {("ATL018", "warning"), ("ATL011", ERROR)}, result.stdout
    said = [f for f in result.json()["findings"] if f["code"] == "ATL018"]
    assert "brokenext is not loaded" in said[0]["message"]


def test_an_extension_of_the_toolkits_that_loads_its_own_helpers_is_set_up(
        tmp_path: Path) -> None:
    # superfences with preserve_tabs loads pymdownx._bypassnorm itself: one of the
    # toolkit's own modules, loaded; and an extension that fails halfway through its set-up
    # is taken out, not left to fail again as each page starts.
    folder = site(tmp_path, ["attr_list", {"pymdownx.superfences": {"preserve_tabs": True}}])
    found = findings(folder, {"index.md": "# Top\n\n```\n# code\n```\n\n*x*{ #here }\n\n"
                                           "[a](#here) [b](#code) [c](#top)\n"})
    assert found == [("ATL011", ERROR, 9, "index.md")]
