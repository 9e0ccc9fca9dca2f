"""A MkDocs site's links checked again: the renderings kept in the user's cache folder
(``atlas-files/links/``) make the second run fast, and never change a verdict (a page, a
snippet it includes, the site's Markdown setup: whatever changed is rendered again). And
the shortcuts a rendering takes (no block-code highlighting, no inline patterns on text
that can make no link or id) collect exactly what the whole rendering does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import linksites
from support.linksites import EXTENSIONS, site, write

from atlas_files.check import check_links
from atlas_files.linkcheck import rendercache, siteconfig
from atlas_files.linkcheck.findings import ERROR
from atlas_files.linkcheck.sitepages import Renderer


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user cache folder of this test's own (the renderings of its sites alone)."""
    base = tmp_path / "user-cache"
    base.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(base))
    return base / "atlas-files" / "links"


def kept_files() -> list[Path]:
    where = rendercache.folder()
    assert where is not None
    return sorted(where.glob("*.json"))


def found(folder: Path) -> list[tuple[str, str, int, str]]:
    report = check_links([folder])
    return [(f.code, f.severity, f.line, Path(f.path).name) for f in report.findings]


def no_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Renderer, text: str) -> None:
        raise AssertionError("rendered")

    monkeypatch.setattr(Renderer, "render", refuse)


PAGES = {
    "index.md": "# Home\n\n[ok](guide.md#usage) [gone](guide.md#nope) [x](missing.md)\n",
    "guide.md": "# Guide\n\n## Usage\n\n```python title=\"x.py\"\nprint(1)\n```\n",
}


def test_a_second_run_renders_nothing_and_says_the_same(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # An extension that works only inside its own generator: said when the renderer is made.
    folder = site(tmp_path, [*EXTENSIONS, "zensical.extensions.preview"])
    write(folder, PAGES)
    cold = found(folder)
    assert ("ATL011", ERROR, 3, "index.md") in cold and ("ATL010", ERROR, 3, "index.md") in cold
    assert ("ATL018", "warning", 1, "mkdocs.yml") in [(f[0], f[1], 1, f[3]) for f in cold]
    assert len(kept_files()) == 1 and not (tmp_path / ".atlas-cache").exists()
    no_rendering(monkeypatch)
    assert found(folder) == cold  # every verdict (and what the setup said) from the cache


def test_a_changed_page_is_rendered_again(tmp_path: Path) -> None:
    folder = site(tmp_path)
    write(folder, PAGES)
    assert [f[0] for f in found(folder)] == ["ATL011", "ATL010"]
    write(folder, {"guide.md": "# Guide\n\n## Nope\n\n## Usage\n"})
    assert [f[0] for f in found(folder)] == ["ATL010"]


def test_a_page_kept_for_its_ids_is_rendered_again_when_its_links_are_judged(
        tmp_path: Path) -> None:
    folder = site(tmp_path)
    write(folder, {"a.md": "# A\n\n[to b](b.md#x)\n", "b.md": "# B\n\n## X\n",
                   "c.md": "# C\n\n[to a](a.md#a)\n"})
    assert found(folder) == []  # a.md rendered (and kept) for its ids alone
    write(folder, {"b.md": "# B\n\n## Y\n"})  # a.md unchanged, its link now broken
    assert found(folder) == [("ATL011", ERROR, 3, "a.md")]


def test_a_changed_snippet_is_rendered_again(tmp_path: Path) -> None:
    folder = site(tmp_path)
    write(folder, {"index.md": "# Home\n\n--8<-- \"part.md\"\n\n[a](#included)\n",
                   "includes/part.md": "## Included\n"})
    assert found(folder) == []
    write(folder, {"includes/part.md": "## Renamed\n"})
    assert [f[0] for f in found(folder)] == ["ATL011"]


def test_a_snippet_that_appears_is_rendered_again(tmp_path: Path) -> None:
    folder = site(tmp_path)
    write(folder, {"index.md": "# Home\n\n--8<-- \"later.md\"\n\n[a](#later)\n"})
    assert [f[0] for f in found(folder)] == ["ATL011"]
    write(folder, {"includes/later.md": "## Later\n"})
    assert found(folder) == []


def test_a_changed_markdown_setup_is_rendered_again(tmp_path: Path) -> None:
    folder = site(tmp_path)
    write(folder, {"index.md": "# Two Words\n\n[a](#two_words)\n"})
    assert [f[0] for f in found(folder)] == ["ATL011"]
    site(tmp_path, [*EXTENSIONS, {"toc": {"separator": "_"}}])
    assert found(folder) == []


def test_a_damaged_cache_is_no_cache(tmp_path: Path) -> None:
    folder = site(tmp_path)
    write(folder, PAGES)
    cold = found(folder)
    kept = kept_files()
    assert len(kept) == 1
    for damage in (b"{not json", b'{"setup": 1}', kept[0].read_bytes()[:-40]):
        kept[0].write_bytes(damage)
        assert found(folder) == cold


def test_an_extension_atlas_does_not_load_is_said_again_from_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Never loaded, it cannot change a rendering: the site's renderings are kept, and
    # what was said of it is said again by a run that renders nothing.
    folder = site(tmp_path, [*EXTENSIONS, "no_such_extension_here", "subprocess:run"])
    write(folder, PAGES)
    cold = found(folder)
    assert [f[0] for f in cold].count("ATL011") == 1
    assert [f[0] for f in cold].count("ATL018") == 2
    no_rendering(monkeypatch)
    assert found(folder) == cold


SHORTCUT_PAGE = """\
# Top `code` *em* &amp; [link](other.md)

Plain prose with dev@example.com and https://example.com and `inline`, no marks.

```python title="named.py" hl_lines="1"
# Not a heading
print("[not a link](gone.md)")
```

```console exec="1"
refused fence: what follows is read as the parser reads it
```

## After the fence { #custom }

## Fish &amp; Chips

- item with [a link](other.md#x) and text
- plain item
- [ ] task

| a | b |
|---|---|
| [cell](other.md) | plain |

Text[^1] and *emphasis*{ #emphasised }.

[^1]: A note with [a link](other.md).

=== "Tab one"

    ## Tabbed heading

    Content.

??? note "Details"
    ### Detailed `heading`

    <span id="raw-id">raw</span>

    indented code after a blank line

[ref]: other.md#ref
See [ref].

## Call `#!python print("a<b")` & `x`

Prose [with a link](other.md) and `#!python y = 2`{ #code-id } and `#!js z`.

=== "Tab `#!python x = 1`"

    Tabbed.
"""


def test_the_renderings_shortcuts_collect_what_the_whole_rendering_does(
        tmp_path: Path) -> None:
    site(tmp_path, [*EXTENSIONS, "def_list", "abbr", "pymdownx.betterem",
                   "pymdownx.mark", "pymdownx.keys", "pymdownx.tasklist"])
    written = tmp_path / "mkdocs.yml"  # tabs named after their titles' text
    written.write_text(written.read_text().replace(
        "alternate_style: true", "alternate_style: true\n    slugify: "
        "!!python/object/apply:pymdownx.slugs.slugify {kwds: {case: lower}}"))
    config = siteconfig.load(tmp_path / "mkdocs.yml")
    fast = Renderer(config, lambda key, message: None)
    whole = Renderer(config, lambda key, message: None, shortcuts=False)
    for text in (SHORTCUT_PAGE, PAGES["guide.md"], PAGES["index.md"]):
        quick, full = fast.render(text), whole.render(text)
        assert quick.ids == full.ids == fast.render(text, whole=False).ids  # ids alone

        def judged(links: tuple[str, ...]) -> list[str]:  # absolute ones never are
            return [u for u in links if "://" not in u and "\x02amp" not in u]

        assert judged(quick.links) == judged(full.links)
    quick = fast.render(SHORTCUT_PAGE)
    assert {"custom", "emphasised", "raw-id", "fn:1", "fnref:1", "top-code-em-link",
            "detailed-heading", "fish-chips", "code-id"} <= quick.ids
    assert "call-printab-x" in quick.ids  # highlighted inline code in a heading
    assert "other.md#x" in quick.links and "#custom" in quick.links


def test_the_emoji_index_a_site_names_is_found_not_imported(tmp_path: Path) -> None:
    # pymdownx.emoji makes no id and no link, so atlas leaves it out; the index its
    # configuration names (a large module) is looked for, not imported, and a name that
    # cannot be found is still said.
    folder = site(tmp_path, text=(
        "site_name: t\nmarkdown_extensions:\n  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
        "      emoji_generator: !!python/name:pymdownx.no_such_module.to_svg\n"),
        pages={"index.md": "# Home\n\n[a](#home) [b](#nope)\n"})
    script = ("import json, sys; from atlas_files.check import check_links; "
              f"report = check_links([{str(folder)!r}]); "
              "print(json.dumps([[f.code, f.message] for f in report.findings])); "
              "print('material.extensions.emoji' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    found = json.loads(out[0])
    assert [code for code, _ in found] == ["ATL018", "ATL011"]
    assert "pymdownx.no_such_module.to_svg" in found[0][1]
    assert out[1] == "False"


MACRO_PAGES = {
    "index.md": "# Home\n\n{% include 'part.md' %}\n{% include 'later.md' ignore missing %}\n"
                "## About {{ product }}\n\n"
                "[a](#included-heading) [b](#about-widget) [c](#came-later)\n",
    "part.md": "## Included heading\n",
}


def macro_errors(folder: Path) -> set[str]:
    report = check_links([folder])
    return {f.message.split("'")[1] for f in report.findings if f.severity == ERROR}


def test_a_kept_macros_expansion_holds_only_while_what_it_used_is_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = site(tmp_path, text="site_name: t\nplugins: [macros]\nextra:\n  product: Widget\n",
                  pages=MACRO_PAGES)
    forks = linksites.forks(monkeypatch)
    assert macro_errors(folder) == {"#came-later"}
    expanded = len(forks)
    assert expanded >= 1
    # A later run (a pre-commit hook's) forks no expanding child and says the same.
    assert macro_errors(folder) == {"#came-later"}
    assert len(forks) == expanded
    # A template the page included changed: expanded again, and judged as it now reads.
    (folder / "part.md").write_text("## Renamed heading\n")
    assert macro_errors(folder) == {"#came-later", "#included-heading"}
    assert len(forks) > expanded
    # A template it looked for in vain appeared.
    (folder / "later.md").write_text("## Came later\n")
    assert macro_errors(folder) == {"#included-heading"}
    # A variable of mkdocs.yml changed.
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nplugins: [macros]\nextra:\n"
                                         "  product: Gadget\n")
    assert macro_errors(folder) == {"#included-heading", "#about-widget"}


def test_macros_are_expanded_in_a_caller_that_holds_much_address_space(
        tmp_path: Path) -> None:
    # A long-lived caller (a server with threads) may hold more address space than the
    # expanding child's cap, mostly reserved: the child's cap comes on top of it.
    folder = site(tmp_path, text="site_name: t\nplugins: [macros]\nextra:\n  product: Widget\n",
                  pages=MACRO_PAGES)
    script = ("import mmap, sys, json; from pathlib import Path; "
              # Reserved, never touched, and no memory committed (PROT_NONE): address
              # space alone, as a thread's stack or a malloc arena mostly is.
              "held = mmap.mmap(-1, 3 << 30, flags=mmap.MAP_PRIVATE, prot=0); "
              "from atlas_files.check import check_links; "
              "r = check_links([Path(sys.argv[1])]); "
              "print(json.dumps(sorted(f.message for f in r.findings)))")
    done = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True,
                          text=True, check=True)
    messages = json.loads(done.stdout)
    assert any("#came-later" in m and "broken anchor" in m for m in messages), messages
    assert not any("cannot be checked" in m for m in messages), messages


TAGGED_CONFIG = """\
site_name: t
validation: {anchors: warn, links: {not_found: warn}}
extra_css: !relative css/x.css
markdown_extensions:
  - toc:
      slugify: !!python/object/apply:pymdownx.slugs.slugify {kwds: {case: lower}}
  - pymdownx.superfences:
      custom_fences:
        - name: chart
          class: chart
          format: !!python/name:mypackage.fences.chart
  - attr_list
"""


def test_a_site_configuration_read_before_is_read_without_pyyaml(tmp_path: Path) -> None:
    # A warm check of a small site is mostly start-up, PyYAML's import a large share of it:
    # an unchanged mkdocs.yml comes from the user's YAML cache, its tags as they were read.
    folder = site(tmp_path, text=TAGGED_CONFIG, pages={
        "index.md": "# Two Words\n\n[a](#two-words) [b](#nope)\n",
    })
    expected = [("ATL011", "error", 3, "index.md"), ("ATL018", "warning", 7, "mkdocs.yml")]
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from atlas_files.check import check_links\n"
        "report = check_links([Path(sys.argv[1])])\n"
        "print(json.dumps({'yaml': 'yaml' in sys.modules, 'found': [\n"
        "    [f.code, f.severity, f.line, Path(f.path).name, f.message]\n"
        "    for f in report.findings]}))\n"
    )

    def run() -> tuple[bool, list[tuple[str, str, int, str, str]]]:
        done = subprocess.run([sys.executable, "-c", script, str(folder)],
                              capture_output=True, text=True, check=True, cwd=tmp_path)
        out = json.loads(done.stdout)
        return out["yaml"], [tuple(f) for f in out["found"]]

    (first_yaml, first), (second_yaml, second) = run(), run()
    assert first_yaml and not second_yaml
    assert second == first
    assert sorted(f[:4] for f in first) == expected
    # Edited, the configuration is read again: the slugs now keep their case.
    (tmp_path / "mkdocs.yml").write_text(TAGGED_CONFIG.replace("lower", "none"))
    (folder / "index.md").write_text("# Two Words\n\n[a](#Two-Words)\n")
    third_yaml, third = run()
    assert third_yaml
    assert [f[0] for f in third] == ["ATL018"]


def test_a_configuration_naming_the_environment_reads_its_defaults_and_is_kept(
        tmp_path: Path) -> None:
    # !ENV's value is the default the text gives, never the environment's (issue 39, item
    # 7): a text that holds one is the same configuration on every run, kept like any.
    text = "site_name: t\nvalidation: {anchors: !ENV [ANCHOR_LEVEL, warn]}\n"
    folder = site(tmp_path, text=text, pages={"index.md": "# A\n\n[b](#nope)\n"})
    script = ("import json, sys; from pathlib import Path; "
              "from atlas_files.check import check_links; "
              "r = check_links([Path(sys.argv[1])]); "
              "print(json.dumps(['yaml' in sys.modules, [f.code for f in r.findings]]))")
    seen = []
    for level in ("warn", "ignore", "ignore"):
        done = subprocess.run([sys.executable, "-c", script, str(folder)],
                              capture_output=True, text=True, check=True, cwd=tmp_path,
                              env={**os.environ, "ANCHOR_LEVEL": level})
        seen.append(json.loads(done.stdout))
    assert seen == [[True, ["ATL011"]], [False, ["ATL011"]], [False, ["ATL011"]]]
