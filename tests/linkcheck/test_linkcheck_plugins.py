"""The links check on MkDocs sites with plugins and hooks (issue 28): an error is an error,
and "cannot be checked from source" is said only where it is true, once per cause.

Each class of mistake the check made on public sites has a site of a few lines here, run
in both modes (`--links-only` on the tree, and `--staged` on a commit of it), and judged
against `mkdocs build` of the same site with the same plugins running (every link problem
a warning): atlas's errors are exactly MkDocs' warnings. A plugin that is not installed
skips that comparison (pip install mkdocs-redirects mkdocs-macros-plugin mkdocs-exclude
mkdocs-autorefs), except in CI (ATLAS_REQUIRE_MKDOCS_PLUGINS), which installs them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import yaml
from support.git import GitRepo
from support.linksites import STRICT, site, write

from atlas_files.check import check_links, check_staged
from atlas_files.linkcheck.findings import ERROR, Report

MKDOCS_WARNING = re.compile(r"Doc file '(?P<page>[^']+)' contains (?:a link|an unrecognized "
                            r"relative link) '(?P<link>.*?)'")
QUOTED = re.compile(r"'(.*?)'")
MKDOCS_GUESS = re.compile(r"Doc file '(?P<page>[^']+)' contains (?:a link|an unrecognized "
                          r"relative link) '(?P<link>.*?)'.*? Did you mean '(?P<guess>.*?)'\?")


@dataclass
class Case:
    config: str  # mkdocs.yml, less validation (STRICT is added)
    files: dict[str, str]
    errors: set[tuple[str, str]]  # (page in docs, link as written)
    warnings: int = 0  # at most one per cause
    plugins: tuple[str, ...] = ()  # what `mkdocs build` needs installed
    run_hooks: bool = False
    extra: dict[str, str] = field(default_factory=dict)  # files beside mkdocs.yml


CASES = {
    # 1. mkdocs-redirects writes HTML stubs after the build and adds no page.
    "redirects": Case(
        "site_name: t\nplugins:\n  - redirects:\n      redirect_maps:\n"
        "        old.md: new.md\n",
        {"index.md": "# I\n\n[a](gone.md) [b](old.md) [c](new.md)\n", "new.md": "# New\n"},
        {("index.md", "gone.md"), ("index.md", "old.md")}, plugins=("redirects",)),
    # 2. The blog plugin makes its archive, category and pagination pages, nothing else.
    "blog": Case(
        "site_name: t\ntheme: material\nplugins: [blog]\n",
        {"index.md": "# I\n\n[a](gone.md) [b](blog/category/news.md) "
                     "[c](blog/posts/first.md#first-post) [d](blog/posts/first.md#nope)\n",
         "blog/index.md": "# Blog\n",
         "blog/posts/first.md": "---\ndate: 2024-01-15\ncategories: [News]\n---\n"
                                "# First post\n\nHello.\n"},
        {("index.md", "gone.md"), ("index.md", "blog/posts/first.md#nope")}, warnings=1,
        plugins=("material/blog",)),
    # 3. The macros plugin: what extra: and front matter give is expanded and judged.
    "macros": Case(
        "site_name: t\nplugins: [macros]\nextra:\n  product: Widget\n",
        {"index.md": "---\nsection: Setup\n---\n# I\n\n## About {{ product }}\n\n"
                     "## {{ section }} guide\n\n[a](#about-widget) [b](#setup-guide) [c](#nope)\n"
                     "\n[d](other.md#about-widget) [e](other.md#gone)\n",
         "other.md": "# O\n\n## About {{ product }}\n"},
        {("index.md", "#nope"), ("index.md", "other.md#gone")}, plugins=("macros",)),
    # 4. A hook that changes pages: said once with a count (a reference definition no link
    # uses among them), and the files still checked...
    "hook": Case(
        "site_name: t\nhooks: [hooks.py]\n",
        {f"p{n}.md": f"# P{n}\n\n## TITLE\n\n[a](#made-by-the-hook) [b](#nope{n}) "
                     f"[c](gone{n}.md)\n\n[unused]: #nope-def{n}\n" for n in (1, 2, 3)},
        {(f"p{n}.md", f"gone{n}.md") for n in (1, 2, 3)}, warnings=1,
        extra={"hooks.py": "def on_page_markdown(markdown, page, config, files):\n"
                           "    return markdown.replace('TITLE', 'Made by the hook')\n"}),
    # ... and with --run-site-hooks, as MkDocs runs it: exact.
    "hook-run": Case(
        "site_name: t\nhooks: [hooks.py]\n",
        {f"p{n}.md": f"# P{n}\n\n## TITLE\n\n[a](#made-by-the-hook) [b](#nope{n}) "
                     f"[c](gone{n}.md)\n" for n in (1, 2, 3)},
        {(f"p{n}.md", link) for n in (1, 2, 3) for link in (f"gone{n}.md", f"#nope{n}")},
        run_hooks=True,
        extra={"hooks.py": "def on_page_markdown(markdown, page, config, files):\n"
                           "    return markdown.replace('TITLE', 'Made by the hook')\n"}),
    # 5. Files left out of the site are not judged; a partial is judged where included.
    "exclude": Case(
        "site_name: t\nexclude_docs: |\n  drafts/\nplugins:\n  - exclude:\n"
        "      glob: ['includes/*']\nmarkdown_extensions: [pymdownx.snippets]\n",
        {"index.md": "# I\n\n--8<-- \"docs/includes/part.md\"\n\n[a](#from-the-part) "
                     "[b](gone.md) [c](includes/part.md)\n",
         "includes/part.md": "## From the part\n\n[p](other.md) [q](../nowhere.md)\n",
         "other.md": "# O\n", "drafts/wip.md": "# WIP\n\n[x](nowhere.md) [y](#nope)\n"},
        {("index.md", "gone.md"), ("index.md", "includes/part.md"),
         ("index.md", "../nowhere.md")}, plugins=("exclude",)),
    # 6. autorefs in a heading: the id is made of the link's text.
    "autorefs": Case(
        "site_name: t\nplugins: [autorefs]\n",
        {"index.md": "# I\n\n## [Foo][foo] is now a dict\n\n[a](#foo-is-now-a-dict) "
                     "[b](#nope)\n\n[defined][d]\n\n[d]: other.md\n", "other.md": "# O\n"},
        {("index.md", "#nope")}, plugins=("autorefs",)),
    # 7. An extension that needs MkDocs' own processors (Material's preview).
    "preview": Case(
        "site_name: t\ntheme: material\nmarkdown_extensions:\n  - attr_list\n"
        "  - material.extensions.preview:\n      targets:\n        include: ['*.md']\n",
        {"index.md": "# I\n\n*x*{ #here }\n\n[a](b.md#nope) [b](#here) [c](b.md#real)\n",
         "b.md": "# B\n\n```\n# not a heading\n````\n\n## Real\n"},
        {("index.md", "b.md#nope")}),
    # (found on Material's own docs) Emoji in a heading make no text of its id.
    "emoji": Case(
        "site_name: t\ntheme: material\nmarkdown_extensions:\n  - attr_list\n"
        "  - pymdownx.emoji:\n      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
        "      emoji_generator: !!python/name:material.extensions.emoji.to_svg\n",
        {"index.md": "# I\n\n## :material-tag-outline: Version\n\n## :smile: Smiles :nope:\n\n"
                     "[a](#version) [b](#smiles-nope) [c](#material-tag-outline-version)\n"},
        {("index.md", "#material-tag-outline-version")}),
    # 8. A bare markdown attribute in md_in_html.
    "md-in-html": Case(
        "site_name: t\nmarkdown_extensions: [md_in_html, attr_list]\n",
        {"index.md": "# I\n\n<div class=\"grid\" markdown>\n\n## In grid\n\n[a](#nope-grid) "
                     "[b](gone.md)\n\n</div>\n\n[c](#in-grid)\n"},
        {("index.md", "#nope-grid"), ("index.md", "gone.md")}),
    # 9. A one-line fence is inline code, not a fence left open.
    "one-line-fence": Case(
        "site_name: t\nmarkdown_extensions: [pymdownx.superfences]\n",
        {"index.md": "# I\n\n```text one line```\n\n## After\n\n[a](#nope-after) [b](#after)"
                     " [c](gone.md)\n"},
        {("index.md", "#nope-after"), ("index.md", "gone.md")}),
    # 10. A relative link to a page written without .md.
    "no-suffix": Case(
        "site_name: t\n",
        {"async.md": "# Async\n\nSee [the docs](../advanced/transports#asgitransport).\n",
         "advanced/transports.md": "# T\n\n## ASGITransport\n", "index.md": "# I\n"},
        {("async.md", "../advanced/transports#asgitransport")}),
    # 11. (issue 43, found on mkdocs' own docs) A theme's static files are the site's:
    # MkDocs' own theme ships img/favicon.ico, read from the installed theme.
    "theme-mkdocs": Case(
        "site_name: t\n",
        {"index.md": "# I\n\n[a](img/favicon.ico) [b](css/base.css) [c](img/gone.ico)\n\n"
                     "![d](js/base.js) [e](base.html) [f](mkdocs_theme.yml)\n"},
        {("index.md", "img/gone.ico"), ("index.md", "base.html"),
         ("index.md", "mkdocs_theme.yml")}),
    "theme-readthedocs": Case(
        "site_name: t\ntheme: readthedocs\n",
        {"index.md": "# I\n\n[a](css/theme.css) [b](img/favicon.ico) [c](css/gone.css)\n"},
        {("index.md", "css/gone.css")}),
    # ... Material's, and what the site's custom_dir adds (its templates not).
    "theme-material": Case(
        "site_name: t\ntheme:\n  name: material\n  custom_dir: overrides\n",
        {"index.md": "# I\n\n[a](assets/images/favicon.png) [b](extra/logo.svg) "
                     "[c](assets/gone.png) [d](main.html) [e](extra/notes.md)\n"},
        {("index.md", "assets/gone.png"), ("index.md", "main.html"),
         ("index.md", "extra/notes.md")},
        extra={"overrides/extra/logo.svg": "<svg/>", "overrides/main.html": "{% extends "
               "'base.html' %}", "overrides/extra/notes.md": "# N\n"}),
    # 12. (issue 43, as httpx writes them) Links to a page's address: MkDocs leaves each as
    # is, checking neither page nor anchor, with directory URLs or without.
    "page-address": Case(
        "site_name: t\n",
        {"async.md": "# A\n\n[a](../advanced/transports#asgitransport) [b](advanced/transports)"
                     " [c](../advanced/transports/#nope) [d](nowhere)\n",
         "advanced/transports.md": "# T\n\n## ASGITransport\n\n[e](../clients#x) [f](clients)\n",
         "advanced/clients.md": "# C\n", "index.md": "# I\n"},
        {("async.md", "../advanced/transports#asgitransport"),
         ("async.md", "advanced/transports"), ("async.md", "../advanced/transports/#nope"),
         ("async.md", "nowhere"), ("advanced/transports.md", "../clients#x"),
         ("advanced/transports.md", "clients")}),
    "page-address-files": Case(
        "site_name: t\nuse_directory_urls: false\n",
        {"async.md": "# A\n\n[a](../advanced/transports#asgitransport) [b](advanced/transports)"
                     " [c](advanced/transports.html#asgitransport)\n",
         "advanced/transports.md": "# T\n\n## ASGITransport\n", "index.md": "# I\n"},
        {("async.md", "../advanced/transports#asgitransport"),
         ("async.md", "advanced/transports"),
         ("async.md", "advanced/transports.html#asgitransport")}),
}


def _write(root: Path, case: Case) -> Path:
    validation = yaml.safe_dump({"validation": STRICT}, sort_keys=False)
    docs = site(root, text=case.config + validation, pages=case.files)
    write(root, case.extra)
    return docs


def _judged(report: Report, docs: Path) -> tuple[set[tuple[str, str]], list[str]]:
    """(page, link) of each error, and each warning as a line; paths are shown relative
    to the site's folder (the check's base)."""
    errors, warnings = set(), []
    for f in report.findings:
        if f.severity != ERROR:
            warnings.append(f"{f.path}:{f.line}: {f.code} {f.message}")
            continue
        quoted = QUOTED.search(f.message)
        errors.add((_page(f.path, docs), quoted.group(1) if quoted else f.message))
    return errors, warnings


def _page(path: str, docs: Path) -> str:
    """A finding's path (relative to the site's folder, the check's base) in docs."""
    page = Path(path) if Path(path).is_absolute() else docs.parent / path
    return page.resolve().relative_to(docs.resolve()).as_posix()


def _check(root: Path, case: Case, mode: str) -> tuple[set[tuple[str, str]], list[str]]:
    docs = _write(root, case)
    if mode == "staged":
        repo = GitRepo(root)
        repo.git("add", "-A")
        report = check_staged(root, mode="links", base=root, run_site_hooks=case.run_hooks)
    else:
        report = check_links([docs], base=root, run_site_hooks=case.run_hooks)
    return _judged(report, docs)


@pytest.mark.parametrize("mode", ["tree", "staged"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_plugin_sites_are_judged_as_built(tmp_path: Path, name: str, mode: str) -> None:
    case = CASES[name]
    errors, warnings = _check(tmp_path / "site", case, mode)
    assert errors == case.errors, warnings
    assert len(warnings) == case.warnings, warnings


@pytest.mark.parametrize("mode", ["tree", "staged"])
def test_a_theme_atlas_does_not_know_makes_its_files_uncertain_said_once(
        tmp_path: Path, mode: str) -> None:
    # MkDocs would count its static files among the site's: which those are, only the
    # theme's install knows. A Markdown page or a template is never one.
    case = Case("site_name: t\ntheme:\n  name: windmill\n",
                {"index.md": "# I\n\n[a](img/logo.png) [b](css/x.css) [c](gone.md) "
                             "[d](#nope) [e](page.html)\n",
                 "other.md": "# O\n\n[f](img/other.png)\n"},
                {("index.md", "gone.md"), ("index.md", "#nope"), ("index.md", "page.html")})
    errors, warnings = _check(tmp_path / "site", case, mode)
    assert errors == case.errors
    assert len(warnings) == 1 and "3 links on 2 pages cannot be checked" in warnings[0] \
        and "the theme 'windmill', whose files atlas does not know" in warnings[0], warnings


def _installed(plugin: str) -> bool:
    return plugin in {e.name for e in entry_points(group="mkdocs.plugins")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_sites_built_by_mkdocs_agree(tmp_path: Path, name: str) -> None:
    """The truth: `mkdocs build` of each site, its plugins (and, where the case runs them,
    its hooks) running, says exactly atlas's errors."""
    case = CASES[name]
    missing = [p for p in case.plugins if not _installed(p)]
    if missing:
        if os.environ.get("ATLAS_REQUIRE_MKDOCS_PLUGINS"):
            pytest.fail(f"MkDocs plugins {missing} are not installed")
        pytest.skip(f"MkDocs plugins {missing} are not installed")
    root = tmp_path / "site"
    docs = _write(root, case)
    if not case.run_hooks and "hooks:" in case.config:
        pytest.skip("the build runs the hook: compared in the case that runs it")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-d", str(tmp_path / "out")],
                           cwd=root, capture_output=True, text=True, timeout=300, env=env)
    assert built.returncode == 0, built.stderr[-2000:]
    truth = {(m["page"], m["link"]) for m in MKDOCS_WARNING.finditer(built.stderr)}
    report = check_links([docs], base=root, run_site_hooks=case.run_hooks)
    errors, _ = _judged(report, docs)
    assert errors == truth == case.errors, built.stderr[-2000:]
    # Where MkDocs guesses what a link meant, atlas says the same guess.
    guessed = {(m["page"], m["link"], m["guess"]) for m in MKDOCS_GUESS.finditer(built.stderr)}
    said = {(_page(f.path, docs), *QUOTED.findall(f.message)[:2])
            for f in report.findings if "did you mean" in f.message}
    assert said == guessed, built.stderr[-2000:]
