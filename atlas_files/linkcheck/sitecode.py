"""Which of a MkDocs site's own code a links check runs: what a person on this clone
accepted, by content (`atlas check accept`).

A site's hooks (mkdocs.yml's ``hooks:``) and the macros plugin's module (``module_name``,
default ``main``) are the repository's code, and they decide what MkDocs' validation sees.
mkdocs.yml travels with the repository, so nothing in it may make a check run them: the
person who runs atlas on this clone accepts exactly these files, each by its digest, and
the acceptance lives in their own config folder (``~/.config/atlas/accepted-site-code.json``,
ownfiles.py), keyed by the repository's real path, which nothing in the repository can
reach. What is accepted: the hook files, the macros module, and every module of the
repository they import (found by reading their ``import`` statements, never by running
them). While every digest matches, the check runs that code (sitehooks.py, sitemacros.py,
in capped children under the page deadline); a changed file, or one newly imported,
stops all of it until it is accepted again, and the check says so once.
"""

from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files.facts.errors import BadInput
from atlas_files.linkcheck.boundary import Boundary
from atlas_files.linkcheck.siteconfig import SiteConfig, read_file
from atlas_files.storage.ownfiles import config_dir, read_accepted, write_accepted

ACCEPTED_NAME = "accepted-site-code.json"
WHAT = "site code acceptances file"
COMMAND = "atlas check accept"
AGAIN = f"accept each site's code again (`{COMMAND}`)"
_MAX_FILES = 200  # modules followed from the hooks and the macros module


@dataclass(frozen=True)
class CodeFile:
    """One file of the site's code: its path in the repository, what it is to the site,
    and its digest (None: it cannot be read, so it cannot be accepted)."""

    rel: str
    role: str  # "hook", "macros module", "imported by main.py"
    digest: str | None
    why: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.rel, "role": self.role, "sha256": self.digest, "why": self.why}


def macros_module(site: SiteConfig) -> Path | None:
    """The macros plugin's module in the repository (None: no plugin, or no such file)."""
    if "macros" not in site.plugins:
        return None
    config = site.plugin_configs.get("macros")
    name = config.get("module_name", "main") if isinstance(config, dict) else "main"
    local = site.root / (name if isinstance(name, str) and name else "main")
    for path in (local.with_suffix(".py"), local / "__init__.py"):
        if os.path.lexists(path):
            return path
    return None


def _imported(tree: ast.AST, here: Path) -> list[tuple[int, str]]:
    """(relative level, dotted name) of every module ``tree`` imports."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            found.append((node.level, base))
            # ``from pkg import mod`` may import a module as well as a name.
            found += [(node.level, f"{base}.{a.name}".strip(".")) for a in node.names
                      if a.name != "*"]
    return found


def _module_files(level: int, name: str, importer: Path, site: SiteConfig) -> list[Path]:
    """The repository's files that importing ``name`` from ``importer`` runs (each
    package's ``__init__.py`` on the way, then the module)."""
    if level:
        bases = [importer.parent.parents[level - 2] if level > 1 else importer.parent]
    else:
        # MkDocs puts a hook's folder on sys.path, the macros plugin the project's.
        bases = [site.root, importer.parent]
    parts = [p for p in name.split(".") if p]
    for base in bases:
        files: list[Path] = []
        folder = base
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if last and (folder / f"{part}.py").is_file():
                files.append(folder / f"{part}.py")
            elif (folder / part / "__init__.py").is_file():
                files.append(folder / part / "__init__.py")
            elif not last and (folder / part).is_dir():  # a namespace package
                pass
            else:
                break
            folder = folder / part
        else:
            if files:
                return files
    return []


def code_files(site: SiteConfig) -> list[CodeFile]:
    """The site's own code, as `atlas check accept` shows it (see the module's
    docstring): hooks, the macros module, then what they import from the repository."""
    within = Boundary(map(Path, site.readable))
    repository = Path(os.path.realpath(site.repository))
    todo: list[tuple[Path, str]] = [(h, "hook") for h in site.hooks]
    module = macros_module(site)
    if module is not None:
        todo.append((module, "macros module"))
    out: dict[str, CodeFile] = {}
    while todo and len(out) < _MAX_FILES:
        path, role = todo.pop(0)
        real = Path(os.path.realpath(path))
        rel = os.path.relpath(real, repository) if real.is_relative_to(repository) \
            else str(path)
        if rel in out:
            continue
        try:
            text = read_file(path, within, role)
        except ValueError as exc:
            out[rel] = CodeFile(rel, role, None, str(exc))
            continue
        out[rel] = CodeFile(rel, role, hashlib.sha256(text.encode("utf-8", "surrogatepass")
                                                      ).hexdigest())
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for level, name in _imported(tree, path):
            for found in _module_files(level, name, path, site):
                if within.holds(found):
                    todo.append((found, f"imported by {Path(rel).name}"))
    return list(out.values())


def store_path() -> Path | None:
    folder = config_dir()
    return None if folder is None else folder / ACCEPTED_NAME


def _key(site: SiteConfig) -> str:
    return os.path.realpath(site.repository)


def accepted(site: SiteConfig) -> dict[str, str] | None:
    """The files accepted for the site's repository (path: digest), None if none were.
    BadInput or DamagedFile when the acceptances file is not one to trust."""
    path = store_path()
    if path is None:
        return None
    root = _key(site)
    for entry in read_accepted(path, root, WHAT, AGAIN, "repository"):
        files = entry.get("files")
        if entry.get("repository") == root and isinstance(files, dict):
            return {str(k): str(v) for k, v in files.items()}
    return None


@dataclass(frozen=True)
class Standing:
    """The site's code now, against what this clone accepted."""

    files: tuple[CodeFile, ...]
    accepted: dict[str, str] | None
    changed: tuple[CodeFile, ...]  # changed, new, or unreadable since the acceptance

    @property
    def runs(self) -> bool:
        """Whether the check runs the site's code: all of it accepted, as it is now."""
        return bool(self.files) and self.accepted is not None and not self.changed

    def sentence(self) -> str:
        """What stops the code from running, once it was accepted."""
        names = ", ".join(f.rel for f in self.changed[:3]) + \
            (" (and more)" if len(self.changed) > 3 else "")
        return (f"the site's code changed since it was accepted on this clone ({names}): "
                f"none of it runs until you review it and run `{COMMAND}` again")


def standing(site: SiteConfig) -> Standing:
    files = tuple(code_files(site))
    if not files:
        return Standing(files, None, ())
    mine = accepted(site)
    if mine is None:
        return Standing(files, None, ())
    changed = tuple(f for f in files if f.digest is None or mine.get(f.rel) != f.digest)
    return Standing(files, mine, changed)


def accept(site: SiteConfig, files: list[CodeFile]) -> Path:
    """Accept ``files`` (as code_files showed them) for the site's repository; returns
    where the acceptance is kept. What was accepted for the repository's other sites
    stays."""
    path = store_path()
    if path is None:
        raise BadInput("no home folder: there is nowhere of your own to keep what you "
                       "accepted", hint="set HOME or XDG_CONFIG_HOME")
    root = _key(site)
    kept = accepted(site) or {}
    kept.update({f.rel: f.digest for f in files if f.digest is not None})
    write_accepted(path, root, WHAT, AGAIN, "repository",
                   {"repository": root, "files": dict(sorted(kept.items()))}, "repository")
    return path


def all_accepted() -> list[dict[str, Any]]:
    """Every repository whose site code this user accepted, as kept ([] if none). The
    file is read as a listing: it is refused where it is unsafe for any repository."""
    path = store_path()
    if path is None:
        return []
    return read_accepted(path, os.sep + "\0", WHAT, AGAIN)
