"""The files a MkDocs site's theme adds to it, as MkDocs counts them.

MkDocs adds a theme's static files to the site's files before any page is rendered, so a
link to one is a link to a file of the site: the `mkdocs` theme's ``img/favicon.ico``,
Material's ``assets/images/favicon.png``, and whatever the site's ``theme.custom_dir``
holds. They are every file of the theme's folders (``custom_dir`` first, then the theme,
then the themes it ``extends``) but what MkDocs leaves out: hidden files and folders,
Python files, HTML templates, Markdown, translations, ``mkdocs_theme.yml``, a README and
the theme's ``static_templates``. A file of ``docs_dir`` of the same name wins.

The themes' files are read from the installed packages when a check needs them (a link
to a file ``docs_dir`` lacks), found through their ``mkdocs.themes`` entry points without
importing anything, so a new version of a theme is right the day it is installed. Only
the themes atlas knows are looked up: MkDocs' own `mkdocs` and `readthedocs`, and
Material. For another theme (or a known one that is not installed here) a link to a
missing file that a theme could provide cannot be checked from source.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files.linkcheck.boundary import Boundary
from atlas_files.linkcheck.siteconfig import MAX_BYTES, SiteConfig, safe_load

KNOWN = ("mkdocs", "readthedocs", "material")
# What MkDocs leaves out of a theme's files (mkdocs.structure.files.add_files_from_theme),
# matched against the lowercased path; then the theme's static_templates.
_LEFT_OUT = (".*", "*/.*", "*.py", "*.pyc", "*.html", "*readme*", "mkdocs_theme.yml",
             "locales/*", "*.markdown", "*.mdown", "*.mkdn", "*.mkd", "*.md")
_MAX_DEPTH = 5  # themes extending themes


@dataclass(frozen=True)
class Theme:
    files: frozenset[str]  # paths in the built site, as in docs_dir
    unknown: str | None  # why the theme's files cannot be known here (None: they are)
    left_out: tuple[str, ...]  # patterns of what no theme file can be

    def may_provide(self, target: str) -> bool:
        """Whether a theme file could be ``target`` (a path MkDocs does not leave out)."""
        lowered = target.lower()
        return not any(fnmatch.fnmatch(lowered, p) for p in self.left_out)


def theme(site: SiteConfig) -> Theme:
    """The files ``site``'s theme adds (see the module's docstring)."""
    raw: Any = site.data.get("theme", "mkdocs")
    config = raw if isinstance(raw, dict) else {"name": raw}
    name = config.get("name")
    static = config.get("static_templates")
    left_out = list(_LEFT_OUT) + [str(s).lower() for s in static or ()
                                  if isinstance(static, list)]
    dirs: list[Path] = []
    custom = config.get("custom_dir")
    if isinstance(custom, str) and custom:
        folder = site.root / custom
        if Boundary(map(Path, site.readable)).holds(folder):  # never a folder outside
            dirs.append(folder)
    unknown = None
    if name is not None:
        found = _theme_dirs(name, left_out)
        if isinstance(found, str):
            unknown = found
        else:
            dirs += found
    files: set[str] = set()
    for folder in dirs:
        files |= _listed(folder)
    return Theme(frozenset(f for f in files
                           if not any(fnmatch.fnmatch(f.lower(), p) for p in left_out)),
                 unknown, tuple(left_out))


def _theme_dirs(name: Any, left_out: list[str]) -> list[Path] | str:
    """The folders of installed theme ``name`` and those it extends (their
    static_templates added to ``left_out``), or why they cannot be known."""
    dirs: list[Path] = []
    for _ in range(_MAX_DEPTH):
        if name not in KNOWN:
            return (f"the theme {str(name)[:60]!r}, whose files atlas does not know, may "
                    "provide it")
        folder = _installed(name)
        if folder is None:
            return f"the theme {name!r} is not installed here, and its files may provide it"
        dirs.append(folder)
        try:
            with open(folder / "mkdocs_theme.yml", "rb") as fh:
                config = safe_load(fh.read(MAX_BYTES).decode("utf-8", "replace"))
        except (OSError, ValueError):
            config = None
        config = config if isinstance(config, dict) else {}
        static = config.get("static_templates")
        left_out += [str(s).lower() for s in static if isinstance(s, str)] \
            if isinstance(static, list) else []
        name = config.get("extends")
        if not name:
            return dirs
    return f"the theme {name!r} extends themes more than {_MAX_DEPTH} deep"


def _installed(name: str) -> Path | None:
    """The folder of theme ``name``'s module, as its ``mkdocs.themes`` entry point names
    it (the last one, as MkDocs takes it), found without importing anything."""
    # Here, not at the top: a check whose links all land in docs_dir never asks for the
    # theme, and importlib.metadata's import is a tenth of a warm check of a small site.
    from importlib import metadata  # noqa: PLC0415 - see above

    try:
        points = [p for p in metadata.entry_points(group="mkdocs.themes")
                  if p.name == name]
    except Exception:  # noqa: BLE001 - a broken install's metadata: as if none
        return None
    if not points:
        return None
    top, *rest = points[-1].value.split(":")[0].strip().split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    for place in places:
        folder = Path(place, *rest)
        if folder.is_dir():
            return folder
    return None


def _listed(folder: Path) -> set[str]:
    """Every file under ``folder``, as a path relative to it (links to folders not
    followed, as Jinja's loader lists them)."""
    out: set[str] = set()
    for here, _, names in os.walk(folder):
        rel = Path(here).relative_to(folder).as_posix()
        prefix = "" if rel == "." else rel + "/"
        out.update(prefix + n for n in names if os.path.isfile(os.path.join(here, n)))
    return out
