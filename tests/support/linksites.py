"""A MkDocs site of a few pages for the links check's tests: ``site`` writes its mkdocs.yml
(strict validation, the extensions a real site uses), ``write`` its pages."""

from __future__ import annotations

from pathlib import Path

import yaml

EXTENSIONS: list[object] = [
    "attr_list", "footnotes", "admonition", "md_in_html", "pymdownx.details",
    {"pymdownx.highlight": {"anchor_linenums": True, "line_spans": "__span"}},
    "pymdownx.inlinehilite", "pymdownx.magiclink", "pymdownx.superfences",
    {"pymdownx.tabbed": {"alternate_style": True}},
    {"pymdownx.snippets": {"base_path": ["docs/includes"]}},
    {"toc": {"permalink": True}},
]
STRICT = {"links": {"not_found": "warn", "anchors": "warn", "unrecognized_links": "warn"}}


def site(root: Path, extensions: list[object] | None = None, **more: object) -> Path:
    config = {"site_name": "t", "validation": STRICT,
              "markdown_extensions": EXTENSIONS if extensions is None else extensions, **more}
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config))
    (root / "docs" / "includes").mkdir(parents=True, exist_ok=True)
    return root / "docs"


def write(folder: Path, pages: dict[str, str]) -> None:
    for name, text in pages.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
