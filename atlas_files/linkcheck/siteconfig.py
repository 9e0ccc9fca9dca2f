"""A MkDocs site's configuration, as far as its links go, read without running anything.

``mkdocs.yml`` (found upward from the files checked, or named) says where the pages are
(``docs_dir``), how URLs are made (``use_directory_urls``), which Markdown extensions
render them (``markdown_extensions``, with MkDocs' own ``toc``, ``tables`` and
``fenced_code`` always added), what MkDocs reports (``validation:``), and which plugins
and hooks change pages as the site is built.

It is someone else's file, so nothing in it runs, and nothing of the checker's
environment is read into it. The YAML is read with a loader that constructs nothing:
MkDocs' own ``!ENV`` is the default its tag gives (its last item; None without one),
never a variable of the environment (a committed ``!ENV [SECRET_TOKEN, toc]`` would
otherwise print the token in a check's findings, in a pull request's public log), and
``!relative`` is a path; every other tag
(``!!python/name:``, ``!!python/object/apply:``, ``!include``...) is kept as written, as
an ``Unresolved`` that the check says once (ATL018) and leaves out. A handful of Python
names are understood as the values they are: the slugify functions, fence formats and
emoji indexes of Python-Markdown, pymdown-extensions and Material (``KNOWN_NAMES``,
``KNOWN_CALLS``: looked up in that table, never by the name's prefix), imported only in
the configuration of an extension atlas loads. YAML aliases are bounded (a few lines
that expand to a billion values are refused) and so is the file; ``INHERIT:`` and
``docs_dir`` must stay inside the repository (boundary.py), and an inherited file is read
as carefully as the first.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_files.linkcheck.boundary import OUTSIDE, Boundary, root_of
from atlas_files.linkcheck.filesources import DiskSource
from atlas_files.linkcheck.findings import ERROR, WARNING
from atlas_files.storage import worktree, yamlcache

if TYPE_CHECKING:
    import yaml

NAMES = ("mkdocs.yml", "mkdocs.yaml")
BUILTIN_EXTENSIONS = ("toc", "tables", "fenced_code")
# Extensions whose output holds no id and no relative link, left out: for speed (the emoji
# index alone takes longer to load than most pages take to render), because what they do
# is read files (b64 embeds images, after MkDocs has collected the links), or because
# they need MkDocs' own processors around them to run at all (Material's preview adds a
# data-preview attribute to links, reading MkDocs' `relpath` processor): siteplan.py.
NOT_NEEDED = frozenset({"pymdownx.emoji", "pymdownx.b64", "material.extensions.preview"})
# MkDocs' validation levels, as findings: warn fails a strict build, info is only logged.
_LEVELS = {"warn": ERROR, "info": WARNING, "ignore": None, "debug": None}
# Unset: what atlas reports (anchors are always checked; a broken one is an error).
DEFAULT_LEVELS: dict[str, str | None] = {
    "not_found": ERROR, "anchors": ERROR, "unrecognized_links": WARNING,
    "absolute_links": None,
}
MAX_BYTES = 1 << 20  # a configuration file larger than this is not read
MAX_VALUES = 100_000  # values a document may expand to through its YAML aliases
_MAX_INHERIT = 5

# The Python names a site's Markdown setup may use that atlas understands as values: each
# is a function of Python-Markdown, pymdown-extensions or Material that makes ids, fences
# or emoji from its arguments and nothing else. Only these exact names, never a prefix.
KNOWN_NAMES = frozenset({
    "markdown.extensions.toc.slugify", "markdown.extensions.toc.slugify_unicode",
    "pymdownx.slugs.uslugify", "pymdownx.slugs.uslugify_encoded",
    "pymdownx.slugs.uslugify_cased", "pymdownx.slugs.uslugify_cased_encoded",
    "pymdownx.slugs.gfm", "pymdownx.slugs.gfm_encoded",
    "pymdownx.superfences.fence_code_format", "pymdownx.superfences.fence_div_format",
    "pymdownx.superfences.default_validator", "pymdownx.superfences.highlight_validator",
    "pymdownx.emoji.emojione", "pymdownx.emoji.gemoji", "pymdownx.emoji.twemoji",
    "pymdownx.emoji.to_png", "pymdownx.emoji.to_svg", "pymdownx.emoji.to_png_sprite",
    "pymdownx.emoji.to_svg_sprite", "pymdownx.emoji.to_alt", "pymdownx.emoji.to_awesome",
    "material.extensions.emoji.twemoji", "material.extensions.emoji.to_svg",
    "materialx.emoji.twemoji", "materialx.emoji.to_svg",
})
# ...and the factories among them, called (``!!python/object/apply:``) with keywords of
# plain values only: the function they make is still one of these toolkits'.
KNOWN_CALLS = frozenset({
    "pymdownx.slugs.slugify", "pymdownx.arithmatex.arithmatex_fenced_format",
    "pymdownx.arithmatex.arithmatex_inline_format",
})
_PLAIN = (str, int, float, bool, type(None))
_OUTSIDE = ("lies outside the repository checked (by its path, or through a symbolic link), "
            "and atlas check reads only the repository's own files")


@dataclass(frozen=True)
class Unresolved:
    """A value atlas leaves out: a tag it constructs nothing for, as written."""

    what: str
    line: int = 0

    def said(self) -> str:
        """The tag and its line, for a message."""
        return f"`{_cut(self.what)}`" + (f" (line {self.line})" if self.line else "")


def _cut(text: str) -> str:
    return text if len(text) <= 120 else text[:117] + "..."


@dataclass(frozen=True)
class _Named:
    """A ``!!python/name:`` (``call`` None) or ``!!python/object/apply:`` as written,
    understood (``_resolved``) only if it is one of the known names."""

    name: str
    call: tuple[list[Any], dict[str, Any]] | None
    line: int

    def unresolved(self) -> Unresolved:
        kind = "name" if self.call is None else "object/apply"
        return Unresolved(f"!!python/{kind}:{self.name}", self.line)


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    import yaml  # noqa: PLC0415 - here only while a text is parsed (see _loader)

    if isinstance(node, yaml.SequenceNode):
        yield from node.value
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value


def _bounded(root: yaml.Node) -> None:
    """Refuse a document that its aliases expand past MAX_VALUES values (a few lines can
    name a billion), or that holds itself (an alias inside its own anchor): everything
    that walks the configuration afterwards then walks a tree of bounded size."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            if sizes[key] > MAX_VALUES:
                raise ValueError(f"its YAML aliases expand it to more than {MAX_VALUES:,} "
                                 "values")
            continue
        if key in sizes:
            continue
        if key in open_:
            raise ValueError("a YAML alias in it refers to the value that holds it")
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1 if node.start_mark is not None else 0


def _env(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """``!ENV``'s default: what MkDocs makes of it where none of its variables is set."""
    import yaml  # noqa: PLC0415 - see _loader

    names = loader.construct_sequence(node, deep=True) if isinstance(node, yaml.SequenceNode) \
        else []
    return names[-1] if len(names) > 1 else None


@dataclass(frozen=True)
class Relative:
    """``!relative``: a path relative to the config's folder (or the docs folder)."""

    suffix: str


def _relative(loader: yaml.SafeLoader, node: yaml.Node) -> Relative:
    import yaml  # noqa: PLC0415 - see _loader

    value = loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else ""
    return Relative(str(value or ""))


def _python_name(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> _Named:
    return _Named(suffix, None, _line(node))


def _python_apply(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> _Named:
    import yaml  # noqa: PLC0415 - see _loader

    if isinstance(node, yaml.MappingNode):
        spec = loader.construct_mapping(node, deep=True)
        args, kwds = spec.get("args", []), spec.get("kwds", {})
    elif isinstance(node, yaml.SequenceNode):
        args, kwds = loader.construct_sequence(node, deep=True), {}
    else:
        args, kwds = [], {}
    # Arguments of another shape than a list and a mapping: a call atlas never makes.
    return _Named(suffix, (list(args) if isinstance(args, list) else [args],
                           dict(kwds) if isinstance(kwds, dict) else {"": kwds}),
                  _line(node))


def _unknown(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Unresolved:
    tag = str(node.tag)
    shown = "!!" + tag[len("tag:yaml.org,2002:"):] if tag.startswith("tag:yaml.org,2002:") \
        else tag
    return Unresolved(shown, _line(node))


@functools.cache
def _loader() -> type[yaml.SafeLoader]:
    """The loader that constructs nothing (see the module's docstring). Made, and PyYAML
    imported, only when a text is parsed: a site whose mkdocs.yml this user's atlas read
    before is read from the YAML cache (``_parse``), and PyYAML's import is a large share
    of a warm check of a small site."""
    import yaml  # noqa: PLC0415 - see the docstring

    class Loader(yaml.SafeLoader):
        def get_single_data(self) -> Any:
            node = self.get_single_node()
            if node is None:
                return None
            _bounded(node)
            return self.construct_document(node)

    Loader.add_constructor("!ENV", _env)
    Loader.add_constructor("!relative", _relative)
    Loader.add_multi_constructor("tag:yaml.org,2002:python/name:", _python_name)
    Loader.add_multi_constructor("tag:yaml.org,2002:python/object/apply:", _python_apply)
    Loader.add_multi_constructor(None, _unknown)
    return Loader


class _NotYAML(ValueError):
    """PyYAML's YAMLError, as what the callers here catch without importing PyYAML."""


def _yaml_load(text: str) -> Any:
    import yaml  # noqa: PLC0415 - see _loader

    try:
        return yaml.load(text, Loader=_loader())  # noqa: S506 - constructs nothing, see above
    except yaml.YAMLError as exc:
        raise _NotYAML(str(exc)) from None


# A value the YAML cache keeps as a mapping with this one key: none that PyYAML gives
# back for a site's own text holds it (such a text is parsed every time instead).
_TAGGED = "\u0000atlas"


class _Uncacheable(ValueError):
    pass


def _to_json(value: Any) -> Any:
    """``value`` with what the loader made of tags as tagged mappings, for the cache."""
    if isinstance(value, dict):
        if _TAGGED in value:
            raise _Uncacheable
        return {k: _to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    if isinstance(value, Unresolved):
        return {_TAGGED: "unresolved", "what": value.what, "line": value.line}
    if isinstance(value, Relative):
        return {_TAGGED: "relative", "suffix": value.suffix}
    if isinstance(value, _Named):
        call = None if value.call is None else [_to_json(value.call[0]),
                                                _to_json(value.call[1])]
        return {_TAGGED: "named", "name": value.name, "call": call, "line": value.line}
    return value


def _from_json(value: Any) -> Any:
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value.get(_TAGGED)
    if kind == "unresolved":
        return Unresolved(value["what"], value["line"])
    if kind == "relative":
        return Relative(value["suffix"])
    if kind == "named":
        call = value["call"]
        return _Named(value["name"], None if call is None else
                      (_from_json(call[0]), _from_json(call[1])), value["line"])
    return {k: _from_json(v) for k, v in value.items()}


def _parse(text: str) -> Any:
    """``text`` as the loader reads it, from the YAML cache where this user's atlas read
    the same text before (``!ENV`` included: its value is the text's own default)."""
    return yamlcache.load(text, _yaml_load, encode=_to_json, decode=_from_json)


def _known(name: str) -> Any:
    """The object a known name (KNOWN_NAMES, KNOWN_CALLS) names, imported; else
    Unresolved."""
    module, _, attr = name.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError):
        return Unresolved(name)


def _findable(name: str) -> Any:
    """As ``_known``, but found rather than imported: the name, or Unresolved."""
    module = name.rpartition(".")[0]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    return name if found else Unresolved(name)


def _resolved(value: Any, lookup: Callable[[str], Any]) -> Any:
    """``value`` with each known python name made what ``lookup`` makes of it (a known
    factory called with its plain keywords); any other becomes Unresolved."""
    if isinstance(value, dict):
        return {k: _resolved(v, lookup) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, lookup) for v in value]
    if not isinstance(value, _Named):
        return value
    if value.call is None:
        if value.name not in KNOWN_NAMES:
            return value.unresolved()
        found = lookup(value.name)
        return value.unresolved() if isinstance(found, Unresolved) else found
    args, kwds = value.call
    if value.name not in KNOWN_CALLS or args or not all(
            isinstance(k, str) and isinstance(v, _PLAIN) for k, v in kwds.items()):
        return value.unresolved()
    found = lookup(value.name)
    if lookup is _findable or isinstance(found, Unresolved) or not callable(found):
        return value.unresolved() if isinstance(found, Unresolved) else found
    try:
        return found(**kwds)
    except Exception:  # noqa: BLE001 - a bad keyword: as if not understood
        return value.unresolved()


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
    # The site's git work tree (else the folder of mkdocs.yml), and the folders the check
    # may read for it: that one and those it was given (boundary.py).
    repository: Path = field(default=Path("/"))
    readable: tuple[str, ...] = ()
    # Each plugin's configuration, by its short name (``material/blog``: ``blog``).
    plugin_configs: dict[str, dict[str, Any]] = field(repr=False, default_factory=dict)
    # The whole configuration as read (INHERIT merged; tags left as Unresolved).
    data: dict[str, Any] = field(repr=False, default_factory=dict)
    # Tags outside the extensions' settings, left out (the extensions' own are said
    # with their extension's name).
    unresolved: tuple[Unresolved, ...] = ()

    def line_of(self, word: str) -> int:
        """The first line of mkdocs.yml that names ``word`` (1 if none)."""
        at = self.text.find(word)
        return self.text.count("\n", 0, at) + 1 if at >= 0 else 1


def find(folder: Path, cache: dict[Path, Path | None]) -> Path | None:
    """The nearest mkdocs.yml at or above ``folder``, up to the root of its git work tree;
    ``cache`` remembers each folder."""
    walked: list[Path] = []
    found: Path | None = None
    current = folder
    while True:
        if current in cache:
            found = cache[current]
            break
        walked.append(current)
        hit = next((current / n for n in NAMES if (current / n).is_file()), None)
        # A mkdocs.yml above the repository's own root is not the repository's.
        if hit is not None or current.parent == current \
                or worktree.holds_git(current):
            found = hit
            break
        current = current.parent
    for f in walked:
        cache[f] = found
    return found


def read_file(path: Path, within: Boundary, what: str) -> str:
    """The text of a configuration file (or a hook) of the site: a regular file inside
    the repository, of at most MAX_BYTES; ValueError (saying why, quoting none of it)
    otherwise."""
    try:
        data, size = DiskSource(within=within).read_limited(path, MAX_BYTES)
    except PermissionError as exc:
        if exc.strerror != OUTSIDE:
            raise ValueError(f"{what} cannot be read ({exc.strerror or exc})") from None
        raise ValueError(f"{what} {_OUTSIDE}: it was not read") from None
    except OSError as exc:
        raise ValueError(f"{what} cannot be read ({exc.strerror or exc})") from None
    if size > MAX_BYTES:
        raise ValueError(f"{what} is larger than {MAX_BYTES >> 20} MiB: it was not read")
    return data.decode("utf-8", "replace")


def safe_load(text: str) -> Any:
    """YAML ``text`` read as mkdocs.yml is (nothing constructed, aliases bounded);
    ValueError if it is not readable."""
    try:
        return _yaml_load(text)
    except _NotYAML as exc:
        raise ValueError(f"not readable YAML: {exc}") from None
    except RecursionError:
        raise ValueError("nested too deep to read") from None


def _load_yaml(path: Path, within: Boundary, depth: int = 0,
               what: str = "it") -> tuple[dict[str, Any], str]:
    text = read_file(path, within, what)
    try:
        data = _parse(text)
    except _NotYAML as exc:
        raise ValueError(f"{'' if what == 'it' else what + ' is '}not readable YAML: "
                         f"{exc}") from None
    except RecursionError:
        raise ValueError(f"{what} is nested too deep to read") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} is not a mapping")
    parent = data.pop("INHERIT", None)
    if isinstance(parent, str) and parent:
        if depth >= _MAX_INHERIT:
            raise ValueError(f"INHERIT goes more than {_MAX_INHERIT} files deep (or round "
                             "in a circle)")
        base, _ = _load_yaml(path.parent / parent, within, depth + 1,
                             f"the file INHERIT names ({_cut(parent)!r})")
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


def _tags(value: Any, path: tuple[Any, ...] = ()) -> Iterator[Unresolved]:
    """Every tag left out of ``value``, but those in an extension's own settings."""
    in_settings = bool(path) and path[0] == "markdown_extensions" and len(path) >= (
        4 if len(path) > 1 and isinstance(path[1], int) else 3)
    if isinstance(value, _Named | Unresolved):
        if not in_settings:
            yield value.unresolved() if isinstance(value, _Named) else value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _tags(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _tags(v, (*path, i))


def load(path: Path, checked: Boundary | None = None) -> SiteConfig:
    """The site configuration in ``path``; ValueError or OSError if it cannot be read.
    The site may read its repository, and (``checked``) the folders the check was given."""
    repository = root_of(path)
    within = Boundary([repository, *map(Path, checked.roots if checked else ())])
    data, text = _load_yaml(path, within)
    root = path.parent
    docs = data.get("docs_dir", "docs")
    docs_dir = (root / (docs if isinstance(docs, str) else "docs")).resolve()
    if not within.holds(docs_dir):
        raise ValueError(f"its docs_dir {_cut(str(docs))!r} {_OUTSIDE}: the site's pages "
                         "were not read")
    extensions: list[tuple[str, dict[str, Any]]] = [(n, {}) for n in BUILTIN_EXTENSIONS]
    for name, cfg in _names(data.get("markdown_extensions")):
        # Python names are imported only where the extension is loaded: one left out for
        # speed (the emoji index, whose module is larger than most pages) is only found.
        cfg = _resolved(cfg, _findable if name in NOT_NEEDED else _known)
        # Configured again, an extension keeps its place (MkDocs' own come first).
        at = next((i for i, e in enumerate(extensions) if e[0] == name), None)
        if at is None:
            extensions.append((name, cfg))
        else:
            extensions[at] = (name, cfg)
    plugin_configs = {name.split("/")[-1]: cfg for name, cfg in _names(data.get("plugins"))}
    hooks = data["hooks"] if isinstance(data.get("hooks"), list) else []
    urls = data.get("use_directory_urls", True)
    return SiteConfig(
        path=path, root=root, docs_dir=docs_dir, use_directory_urls=urls is not False,
        extensions=tuple(extensions), levels=_levels(data.get("validation")),
        plugins=frozenset(plugin_configs),
        hooks=tuple(root / h for h in hooks if isinstance(h, str) and h), text=text,
        repository=repository, readable=within.roots, plugin_configs=plugin_configs,
        data=data,
        unresolved=tuple(_tags(data)))


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
