"""A MkDocs site's configuration, as far as its links go, read without running anything.

``mkdocs.yml`` (found upward from the files checked, or named) says where the pages are
(``docs_dir``), how URLs are made (``use_directory_urls``), which Markdown extensions
render them (``markdown_extensions``, with MkDocs' own ``toc``, ``tables`` and
``fenced_code`` always added), what MkDocs reports (``validation:``), and which plugins
and hooks change pages as the site is built.

A linter must not run a repository's code. So the YAML is read with a safe loader that
knows MkDocs' tags: ``!ENV`` and ``!relative`` are resolved; ``!!python/name:`` and
``!!python/object/apply:`` only for the Markdown toolkits atlas depends on (Python-Markdown,
pymdown-extensions, Material, MkDocs), and imported only in the configuration of an
extension atlas loads (elsewhere they are only looked for); anything else stays
unresolved, is left out, and is said once (ATL018).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from atlas_files.check.findings import ERROR, WARNING

NAMES = ("mkdocs.yml", "mkdocs.yaml")
_TRUSTED = ("markdown", "pymdownx", "material", "mkdocs")
BUILTIN_EXTENSIONS = ("toc", "tables", "fenced_code")
# Extensions whose output holds no id and no relative link, left out for speed (the emoji
# index alone takes longer to load than most pages take to render): siteplan.py.
NOT_NEEDED = frozenset({"pymdownx.emoji"})
# MkDocs' validation levels, as findings: warn fails a strict build, info is only logged.
_LEVELS = {"warn": ERROR, "info": WARNING, "ignore": None, "debug": None}
# Unset: what atlas reports (anchors are always checked; a broken one is an error).
DEFAULT_LEVELS: dict[str, str | None] = {
    "not_found": ERROR, "anchors": ERROR, "unrecognized_links": WARNING,
    "absolute_links": None,
}


@dataclass(frozen=True)
class Unresolved:
    """A tag atlas does not resolve: the name it gives."""

    what: str


class _Loader(yaml.SafeLoader):
    pass


def _env(loader: _Loader, node: yaml.Node) -> Any:
    names = ([loader.construct_scalar(node)] if isinstance(node, yaml.ScalarNode)
             else loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode)
             else [])
    *keys, default = names if len(names) > 1 else [*names, None]
    for key in keys:
        if isinstance(key, str) and key in os.environ:
            return yaml.safe_load(os.environ[key]) if os.environ[key] else os.environ[key]
    return default


@dataclass(frozen=True)
class Relative:
    """``!relative``: a path relative to the config's folder (or the docs folder)."""

    suffix: str


def _relative(loader: _Loader, node: yaml.Node) -> Relative:
    value = loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else ""
    return Relative(str(value or ""))


@dataclass(frozen=True)
class _Named:
    """A ``!!python/name:`` (``call`` None) or ``!!python/object/apply:`` as written,
    resolved once its extension is known (``resolve``)."""

    name: str
    call: tuple[list[Any], dict[str, Any]] | None = None


def _trusted(name: str) -> Any:
    """The object ``module.attr`` names, if it lies in a trusted toolkit; else Unresolved."""
    module, _, attr = name.rpartition(".")
    if name.split(".")[0] not in _TRUSTED or not module:
        return Unresolved(name)
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return Unresolved(name)


def _findable(name: str) -> Any:
    """As ``_trusted``, but found rather than imported: Unresolved, or the name."""
    module = name.rpartition(".")[0]
    if name.split(".")[0] not in _TRUSTED or not module:
        return Unresolved(name)
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    return name if found else Unresolved(name)


def _resolved(value: Any, lookup: Callable[[str], Any]) -> Any:
    """``value`` with each python name made what ``lookup`` makes of it (and called)."""
    if isinstance(value, dict):
        return {k: _resolved(v, lookup) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, lookup) for v in value]
    if not isinstance(value, _Named):
        return value
    found = lookup(value.name)
    if value.call is None or isinstance(found, Unresolved) or lookup is _findable:
        return found
    if not callable(found):
        return Unresolved(value.name)
    args, kwds = (_resolved(part, lookup) for part in value.call)
    try:
        return found(*args, **kwds)
    except Exception:  # noqa: BLE001 - a bad argument: as if not resolved
        return Unresolved(value.name)


def _python_name(loader: _Loader, suffix: str, node: yaml.Node) -> Any:
    return _Named(suffix)


def _python_apply(loader: _Loader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        spec = loader.construct_mapping(node, deep=True)
        args, kwds = spec.get("args", []), spec.get("kwds", {})
    elif isinstance(node, yaml.SequenceNode):
        args, kwds = loader.construct_sequence(node, deep=True), {}
    else:
        args, kwds = [], {}
    return _Named(suffix, (list(args) if isinstance(args, list) else [],
                           dict(kwds) if isinstance(kwds, dict) else {}))


def _unknown(loader: _Loader, suffix: str, node: yaml.Node) -> Any:
    return Unresolved(f"!{suffix}")


_Loader.add_constructor("!ENV", _env)
_Loader.add_constructor("!relative", _relative)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/name:", _python_name)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/object/apply:", _python_apply)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", _unknown)
_Loader.add_multi_constructor("!", _unknown)


@dataclass(frozen=True)
class SiteConfig:
    path: Path
    root: Path  # the folder of mkdocs.yml: relative paths in it start here
    docs_dir: Path
    use_directory_urls: bool
    extensions: tuple[tuple[str, dict[str, Any]], ...]
    levels: dict[str, str | None]
    plugins: frozenset[str]
    hooks: tuple[Path, ...]
    text: str = field(repr=False, default="")

    def line_of(self, word: str) -> int:
        """The first line of mkdocs.yml that names ``word`` (1 if none)."""
        at = self.text.find(word)
        return self.text.count("\n", 0, at) + 1 if at >= 0 else 1


def find(folder: Path, cache: dict[Path, Path | None]) -> Path | None:
    """The nearest mkdocs.yml at or above ``folder``; ``cache`` remembers each folder."""
    walked: list[Path] = []
    found: Path | None = None
    current = folder
    while True:
        if current in cache:
            found = cache[current]
            break
        walked.append(current)
        hit = next((current / n for n in NAMES if (current / n).is_file()), None)
        if hit is not None or current.parent == current:
            found = hit
            break
        current = current.parent
    for f in walked:
        cache[f] = found
    return found


def _load_yaml(path: Path, depth: int = 0) -> tuple[dict[str, Any], str]:
    text = path.read_text(encoding="utf-8")
    data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader, see above
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} is not a mapping")
    parent = data.pop("INHERIT", None)
    if isinstance(parent, str) and depth < 5:
        base, _ = _load_yaml((path.parent / parent).resolve(), depth + 1)
        data = _merge(base, data)
    return data, text


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _names(items: Any) -> list[tuple[str, dict[str, Any]]]:
    """[(name, config)] of a MkDocs list (or mapping) of extensions or plugins."""
    out: list[tuple[str, dict[str, Any]]] = []
    if isinstance(items, dict):
        items = [{k: v} for k, v in items.items()]
    for item in items if isinstance(items, list) else []:
        if isinstance(item, str):
            out.append((item, {}))
        elif isinstance(item, dict):
            for name, cfg in item.items():
                out.append((str(name), cfg if isinstance(cfg, dict) else {}))
    return out


def _levels(validation: Any) -> dict[str, str | None]:
    levels = dict(DEFAULT_LEVELS)
    if not isinstance(validation, dict):
        return levels
    flat = {k: v for k, v in validation.items() if isinstance(v, str)}
    links = validation["links"] if isinstance(validation.get("links"), dict) else {}
    for key in levels:
        value = links.get(key, flat.get(key))
        if isinstance(value, str) and value.lower() in _LEVELS:
            levels[key] = _LEVELS[value.lower()]
    return levels


def load(path: Path) -> SiteConfig:
    """The site configuration in ``path``; ValueError or OSError if it cannot be read."""
    try:
        data, text = _load_yaml(path)
    except yaml.YAMLError as exc:
        raise ValueError(f"not readable YAML: {exc}") from None
    root = path.parent
    docs = data.get("docs_dir", "docs")
    docs_dir = (root / (docs if isinstance(docs, str) else "docs")).resolve()
    extensions: list[tuple[str, dict[str, Any]]] = [(n, {}) for n in BUILTIN_EXTENSIONS]
    for name, cfg in _names(data.get("markdown_extensions")):
        # Python names are imported only where the extension is loaded: one left out for
        # speed (the emoji index, whose module is larger than most pages) is only found.
        cfg = _resolved(cfg, _findable if name in NOT_NEEDED else _trusted)
        # Configured again, an extension keeps its place (MkDocs' own come first).
        at = next((i for i, e in enumerate(extensions) if e[0] == name), None)
        if at is None:
            extensions.append((name, cfg))
        else:
            extensions[at] = (name, cfg)
    plugins = frozenset(name.split("/")[-1] for name, _ in _names(data.get("plugins")))
    hooks = data["hooks"] if isinstance(data.get("hooks"), list) else []
    urls = data.get("use_directory_urls", True)
    return SiteConfig(
        path=path, root=root, docs_dir=docs_dir, use_directory_urls=urls is not False,
        extensions=tuple(extensions), levels=_levels(data.get("validation")),
        plugins=plugins, hooks=tuple(root / h for h in hooks if isinstance(h, str)),
        text=text)


def resolve_relative(value: Any, root: Path, docs_dir: Path,
                     unresolved: Callable[[Unresolved], None]) -> Any:
    """``value`` with each ``!relative`` made a path and each Unresolved left out (and
    handed to ``unresolved``)."""
    if isinstance(value, Relative):
        suffix = value.suffix
        m = re.match(r"\$(config_dir|docs_dir)(.*)", suffix)
        if m is None:
            return str(root / suffix)
        base = root if m.group(1) == "config_dir" else docs_dir
        return str(base / m.group(2).lstrip("/")) if m.group(2) else str(base)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, Unresolved):
                unresolved(v)
                continue
            out[k] = resolve_relative(v, root, docs_dir, unresolved)
        return out
    if isinstance(value, list):
        kept = []
        for v in value:
            if isinstance(v, Unresolved):
                unresolved(v)
                continue
            kept.append(resolve_relative(v, root, docs_dir, unresolved))
        return kept
    return value
