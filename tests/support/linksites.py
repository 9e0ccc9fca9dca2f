"""The one builder of MkDocs sites for the tests of the links check: ``site`` writes a
mkdocs.yml (by default strict validation and the extensions a real site uses) and pages,
``write`` more pages; ``forks`` counts the children a check starts to render them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from atlas_files.linkcheck import renderpool

EXTENSIONS: list[object] = [
    "attr_list", "footnotes", "admonition", "md_in_html", "pymdownx.details",
    {"pymdownx.highlight": {"anchor_linenums": True, "line_spans": "__span"}},
    "pymdownx.inlinehilite", "pymdownx.magiclink", "pymdownx.superfences",
    {"pymdownx.tabbed": {"alternate_style": True}},
    {"pymdownx.snippets": {"base_path": ["docs/includes"]}},
    {"toc": {"permalink": True}},
]
STRICT = {"links": {"not_found": "warn", "anchors": "warn", "unrecognized_links": "warn"}}


def site(root: Path, extensions: list[object] | None = None, *, text: str | None = None,
         pages: dict[str, str] | None = None, **more: object) -> Path:
    """A site in ``root``: its docs folder, made, with ``pages`` written in it.

    Its mkdocs.yml is ``text`` as given (for what YAML cannot dump: tags, INHERIT, hostile
    values), or else strict validation, ``extensions`` (``EXTENSIONS`` by default) and the
    keys ``more``; then docs/includes, where their snippets are looked for, is made too.
    """
    docs = root / "docs"
    if text is None:
        config = {"site_name": "t", "validation": STRICT,
                  "markdown_extensions": EXTENSIONS if extensions is None else extensions,
                  **more}
        text = yaml.safe_dump(config)
        (docs / "includes").mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    (root / "mkdocs.yml").write_text(text)
    docs.mkdir(exist_ok=True)
    write(docs, pages or {})
    return docs


def write(folder: Path, pages: dict[str, str]) -> None:
    for name, text in pages.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def forks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Each child the links check forks from now on (to render or expand a page)."""
    forked: list[object] = []
    real = renderpool.fork_child

    def counted(*args: object, **kwargs: object) -> int | None:
        forked.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(renderpool, "fork_child", counted)
    return forked
