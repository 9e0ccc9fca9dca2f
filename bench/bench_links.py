"""`atlas check --links-only` against MkDocs' own link validation, on public docs.

Each corpus is the documentation of a public MkDocs project, brought in at bench time from
its source distribution on PyPI (`pip download --no-deps --no-binary PROJECT`), never
vendored. Its configuration (mkdocs.yml, or the same settings as zensical.yml,
properdocs.yml or zensical.toml) is reduced to what this machine can build: Markdown
extensions that are not installed, plugins, hooks and theme overrides are left out (both
tools then judge the same site), and every link problem is made a warning:

    validation: {links: {not_found: warn, anchors: warn, unrecognized_links: warn}}

MkDocs' warnings are the truth. For each corpus it prints recall (the share of MkDocs'
warnings that atlas reports as errors), precision (the share of atlas's errors that MkDocs
also reports), and both tools' times, each the best of --repeat runs: atlas *cold* (no
`.atlas-cache/`: the headline, what the target is judged on) and *warm* (a second run,
its renderings of unchanged pages kept from the first, as a pre-commit hook finds them);
also `atlas check --links-only` on the same pages without a mkdocs.yml (atlas's own
reader, the fast path), and cold through a command server (ATLAS_SERVER: docs/server.md),
which starts no interpreter and imports nothing that the server already has: a new
server's first run (it has what it imports at its start), and a later run of a server
that ran the same check once before (it has learned that run's imports). Targets:
recall 1.0, precision >= 0.95, atlas at least 5x faster than `mkdocs build`.

`--plugins` judges the sites as their projects build them: with the plugins their own
configuration names that are installed here and run offline (pip install mkdocs-redirects
mkdocs-macros-plugin mkdocs-exclude mkdocs-autorefs mkdocstrings-python
mkdocs-git-revision-date-localized-plugin mkdocs-minify-plugin ...; not those that reach
the network, run the docs' code or need what a source distribution lacks: a git host's
API, a coverage report, social cards' image libraries), their hooks and their Markdown
extensions, the corpus made a git repository of one commit. MkDocs' warnings are judged
twice: with the hooks (and a macros module) running, and without; a verdict that differs
between the two depends on running repository code, and the truth atlas's errors are
judged against is what the two builds agree on (recall), while an atlas error counts as
right if the real build (with its hooks) reports it (precision). atlas runs as a
pre-commit hook would (no flag), first with the site's code not accepted, then again once
`atlas check accept --yes` accepted it (in a config folder of the bench's own, never
yours), judged against the real build. Targets: recall and precision >= 0.95, at most
one warning per cause per site, a warm check >= 5x faster than `mkdocs build` with the
plugins (printed plain, and through a command server that ran the same check before, as a
pre-commit hook run with ATLAS_SERVER set finds it, with the code accepted).
`PLUGIN_CORPORA` adds sites chosen for their plugins (the blog, redirects, macros,
exclude, autorefs and mkdocstrings, page hooks, Material's preview extension): from PyPI
as above, or from a git repository at a tag (`git clone` at bench time, or `--mirror DIR`
holding `OWNER+NAME/repo` git folders), never vendored.

    python bench/bench_links.py                 # all corpora (a few minutes)
    python bench/bench_links.py --cache DIR -v  # keep the downloads; list every mismatch
    python bench/bench_links.py --plugins --repeat 5 --mirror DIR
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import yaml
from _common import clean_env, command_server

REPO = Path(__file__).resolve().parent.parent
CORPORA = [  # (PyPI project, version): its sdist holds docs/ and a MkDocs configuration
    ("mkdocs-rss-plugin", "1.19.0"),
    ("mkdocstrings-python", "2.0.11"),
    ("pymdown-extensions", "13.1.2"),
    ("cibuildwheel", "4.3.5"),
    ("griffe", "2.4.1"),
    ("mkdocstrings", "1.0.8"),
    ("mkdocs-autorefs", "1.4.5"),
]
# Sites chosen for their plugins, hooks and extensions, judged with them (--plugins):
# ("git", OWNER/NAME, tag, folder of mkdocs.yml in it) or ("pypi", project, version, "").
PLUGIN_CORPORA = [
    ("git", "squidfunk/mkdocs-material", "9.7.6", ""),  # blog, page hooks (shortcodes)
    ("git", "squidfunk/mkdocs-material", "9.0.0", ""),  # blog, redirects
    ("git", "fralau/mkdocs-macros-plugin", "v1.5.0", "test/simple"),  # macros, extra:
    ("pypi", "mkdocstrings-python", "2.0.11", ""),  # autorefs, mkdocstrings, a page hook
    ("pypi", "mkdocs-autorefs", "1.4.5", ""),  # autorefs, mkdocstrings
    ("pypi", "cibuildwheel", "4.3.5", ""),
]
CONFIGS = ("mkdocs.yml", "mkdocs.yaml", "zensical.yml", "properdocs.yml", "zensical.toml")
STRICT = {"links": {"not_found": "warn", "anchors": "warn", "unrecognized_links": "warn",
                    "absolute_links": "info"}}
WARNING_RE = re.compile(r"Doc file '(?P<page>[^']+)' contains (?:a link|an unrecognized "
                        r"relative link) '(?P<link>.*?)'(?:, but| ?, it was left)")
# The link an error names: "broken link 'L': ...", "link 'L' cannot be checked...", "link
# 'L' names no file of the site..." (an unrecognized link, as MkDocs calls it).
QUOTED_RE = re.compile(r"'(.*?)'(?::| cannot| names no file)")
NEVER_RUN = {"mkdocs-click", "mkdocs_click", "markdown_exec", "plantuml_markdown"}
# Plugins a --plugins build leaves out: they reach the network (privacy, social's fonts,
# git-committers' API, intersphinx and mkdocstrings' inventories are dropped from its
# config), run the docs' code (markdown-exec), or need a coverage report.
PLUGINS_NEVER = {"privacy", "social", "git-committers", "coverage", "markdown-exec",
                 "intersphinx", "optimize", "offline"}


class Tagged:
    """A YAML tag kept as written (python/name, !relative...): MkDocs resolves it, not us."""

    def __init__(self, tag: str, value: Any) -> None:
        self.tag, self.value = tag, value


class _Loader(yaml.SafeLoader):
    pass


def _tagged(loader: _Loader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        value: Any = loader.construct_mapping(node, deep=True)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_scalar(node)
    if suffix == "!ENV":
        items = value if isinstance(value, list) else [value]
        return items[-1] if len(items) > 1 else None
    return Tagged(suffix, value)


_Loader.add_multi_constructor("", _tagged)


class _Dumper(yaml.SafeDumper):
    pass


def _represent(dumper: _Dumper, data: Tagged) -> yaml.Node:
    if isinstance(data.value, dict):
        return dumper.represent_mapping(data.tag, data.value)
    if isinstance(data.value, list):
        return dumper.represent_sequence(data.tag, data.value)
    return dumper.represent_scalar(data.tag, str(data.value))


_Dumper.add_representer(Tagged, _represent)


def _importable(dotted: str) -> bool:
    module = dotted.rpartition(".")[0] or dotted
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _extension_ok(name: str) -> bool:
    import markdown

    if name in NEVER_RUN or name.startswith("zensical."):  # needs Zensical's own build
        return False
    try:
        markdown.Markdown().build_extension(name, {})
    except Exception:  # noqa: BLE001 - not installed, or not an extension
        return False
    return True


def _clean(value: Any) -> Any:
    """``value`` without python names this machine cannot import; a custom fence whose
    code is not installed stays a fence, shown as code (as atlas itself reads it)."""
    if isinstance(value, Tagged):
        name = value.tag.rpartition(":")[2]
        if "python/" in value.tag and not _importable(name):
            return None
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            cleaned = _clean(v)
            if cleaned is not None or v is None:
                out[k] = cleaned
        if "name" in out and "format" not in out and "format" in value:
            out["format"] = Tagged("tag:yaml.org,2002:python/name:"
                                   "pymdownx.superfences.fence_code_format", "")
        return out
    if isinstance(value, list):
        return [c for c in (_clean(v) for v in value) if c is not None]
    return value


_CALLABLE_KEYS = ("format", "validator", "emoji_index", "emoji_generator", "slugify")


def _toml_names(value: Any) -> Any:
    """zensical.toml writes a Python name as a plain string: tag it as mkdocs.yml would."""
    if isinstance(value, dict):
        return {k: Tagged(f"tag:yaml.org,2002:python/name:{v}", "")
                if k in _CALLABLE_KEYS and isinstance(v, str) else _toml_names(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_toml_names(v) for v in value]
    return value


def _toml_extensions(node: dict[str, Any], prefix: str = "") -> list[Any]:
    out: list[Any] = []
    for key, value in node.items():
        name = f"{prefix}{key}"
        if not isinstance(value, dict):
            continue
        if _extension_ok(name) or not any(isinstance(v, dict) for v in value.values()):
            out.append({name: _toml_names(value)} if value else name)
        else:
            out.extend(_toml_extensions(value, name + "."))
    return out


def read_config(path: Path) -> dict[str, Any]:
    if path.suffix == ".toml":
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {})
        project["markdown_extensions"] = _toml_extensions(
            project.get("markdown_extensions", {}))
        return dict(project)
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506
    return data if isinstance(data, dict) else {}


def reduce_config(data: dict[str, Any], root: Path) -> tuple[dict[str, Any], list[str]]:
    """The corpus's configuration as this machine can build it, and what was left out."""
    left: list[str] = []
    kept: list[Any] = []
    for item in data.get("markdown_extensions") or []:
        name, cfg = (item, None) if isinstance(item, str) else next(iter(item.items()))
        if not _extension_ok(name):
            left.append(name)
            continue
        cfg = _clean(cfg) if isinstance(cfg, dict) else cfg
        if isinstance(cfg, dict) and name == "pymdownx.snippets":
            cfg.pop("auto_append", None)
            cfg["check_paths"] = False
        if isinstance(cfg, dict) and name == "pymdownx.emoji":
            cfg = {k: v for k, v in cfg.items() if isinstance(v, Tagged)}
        kept.append({name: cfg} if cfg else name)
    theme = data.get("theme")
    theme_name = theme.get("name") if isinstance(theme, dict) else theme
    out = {
        "site_name": str(data.get("site_name") or root.name),
        "docs_dir": str(data.get("docs_dir") or "docs"),
        "use_directory_urls": data.get("use_directory_urls", True) is not False,
        "theme": {"name": theme_name if theme_name in ("material", "mkdocs", "readthedocs")
                  else "material"},
        "markdown_extensions": kept,
        "plugins": ["search"],
        "validation": STRICT,
    }
    if isinstance(data.get("nav"), list):
        out["nav"] = data["nav"]
    plugins = data.get("plugins") or []
    names = [p if isinstance(p, str) else next(iter(p)) for p in plugins] \
        if isinstance(plugins, list) else list(plugins)
    left += [f"plugin {n}" for n in names if n != "search"]
    left += [f"hook {h}" for h in data.get("hooks") or []]
    return out, left


def fetch(project: str, version: str, cache: Path, into: Path) -> Path:
    """The sdist of ``project==version`` unpacked in ``into``; its top folder."""
    cache.mkdir(parents=True, exist_ok=True)
    stem = project.replace("-", "_").lower()
    found = [p for p in cache.glob("*.tar.gz")
             if p.name.lower().replace("-", "_").startswith(f"{stem}_{version}.")]
    if not found:
        # The project's sdist (its build backend may come as a wheel: only its metadata
        # is prepared, never built from source).
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", project, f"{project}=={version}", "-d", str(cache)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return fetch(project, version, cache, into)
    with tarfile.open(found[0]) as tar:
        tar.extractall(into, filter="data")
    return next(p for p in into.iterdir() if p.is_dir())


REPEAT = 3


def timed(argv: list[str], cwd: Path, before: Any = None, server: str | None = None,
          repeat: int | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    """The best wall time of ``repeat`` (default REPEAT) runs of ``argv`` (``before()``
    ahead of each), and the last run's result: the machine is shared, and the best run is
    the least disturbed. ``server``: the socket of a command server to run atlas through
    (ATLAS_SERVER)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
    if server:
        env["ATLAS_SERVER"] = server
    best = float("inf")
    for _ in range(repeat or REPEAT):
        if before is not None:
            before()
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
        best = min(best, time.perf_counter() - start)
    return best, proc


def mkdocs_warnings(root: Path, out: Path, config: str = "mkdocs.yml",
                    ) -> tuple[float, set[tuple[str, str]], str]:
    # -P: the corpus's own folder is not put on sys.path (Material's sources hold a
    # `material/` folder that would hide the installed theme).
    wall, proc = timed([sys.executable, "-P", "-m", "mkdocs", "build", "-f", config, "-d",
                        str(out)], root)
    found = {(m["page"], m["link"]) for m in WARNING_RE.finditer(proc.stderr)}
    return wall, found, proc.stderr if proc.returncode else ""


def atlas_findings(root: Path, docs: Path, warm: bool = False, server: str | None = None,
                   repeat: int | None = None,
                   ) -> tuple[float, set[tuple[str, str]], list[str]]:
    # Run from outside the corpus: `python -m` puts its folder first on sys.path, and a
    # project that is itself a Markdown extension (pymdown-extensions) must not be imported
    # from its own sources (atlas refuses to run a project's own code).
    def cold() -> None:  # the renderings kept (in the user's cache folder) go
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        shutil.rmtree(cache / "atlas-files" / "links", ignore_errors=True)

    wall, proc = timed([sys.executable, "-m", "atlas_files", "check", "--links-only",
                        "--json", str(docs)], root.parent, None if warm else cold,
                       server, repeat)
    found: set[tuple[str, str]] = set()
    warnings: list[str] = []
    for f in json.loads(proc.stdout)["findings"]:
        if f["severity"] != "error":
            warnings.append(f"{f['code']} {f['message']}")
            continue
        page = Path(f["path"])
        page = page if page.is_absolute() else root.parent / page
        quoted = QUOTED_RE.search(f["message"])
        link = quoted.group(1) if quoted else f["message"]
        try:
            page_uri = page.relative_to(docs).as_posix()
        except ValueError:
            page_uri = page.as_posix()
        found.add((page_uri, link))
    return wall, found, warnings


def served_findings(root: Path, docs: Path,
                    ) -> tuple[float, float, set[tuple[str, str]], set[tuple[str, str]]]:
    """atlas cold through a command server: the best first run of a new server (one that
    has only what it imports at its start), and the best later run of one that ran this
    check once before (and, idle since, imported what that run imported: preload.py);
    the errors each found."""
    first = float("inf")
    first_found: set[tuple[str, str]] = set()
    for _ in range(REPEAT):
        with command_server(clean_env()) as served:
            wall, first_found, _ = atlas_findings(root, docs, server=served["ATLAS_SERVER"],
                                                  repeat=1)
        first = min(first, wall)
    with command_server(clean_env()) as served:
        atlas_findings(root, docs, server=served["ATLAS_SERVER"], repeat=1)
        time.sleep(1)  # the server learns while idle
        later, later_found, _ = atlas_findings(root, docs, server=served["ATLAS_SERVER"])
    return first, later, first_found, later_found


def _offline(value: Any) -> Any:
    """A plugin's configuration without what fetches from the network."""
    if isinstance(value, dict):
        return {k: _offline(v) for k, v in value.items() if k != "inventories"}
    if isinstance(value, list):
        return [_offline(v) for v in value]
    return value


def with_plugins(data: dict[str, Any], reduced: dict[str, Any],
                 ) -> tuple[dict[str, Any], list[str], list[str]]:
    """``reduced`` with the project's own plugins that can run here; those kept, those
    left out."""
    from importlib.metadata import entry_points

    here = {e.name for e in entry_points(group="mkdocs.plugins")}
    plugins = data.get("plugins") or []
    items = [(p, {}) if isinstance(p, str) else next(iter(p.items())) for p in plugins] \
        if isinstance(plugins, list) else list(plugins.items())
    kept: list[Any] = []
    names: list[str] = []
    left: list[str] = []
    for name, cfg in items:
        short = str(name).split("/")[-1]
        if short in PLUGINS_NEVER or not ({name, f"material/{short}"} & here):
            left.append(str(name))
            continue
        cfg = _offline(_clean(cfg)) if isinstance(cfg, dict) else {}
        kept.append({name: cfg} if cfg else name)
        names.append(str(name))
    site = {k: _clean(data[k]) for k in ("site_url", "repo_url", "repo_name", "edit_uri",
                                          "site_description", "site_author") if k in data}
    return {**reduced, **site, "plugins": kept or ["search"]}, names, left


def _git_init(root: Path) -> None:
    if (root / ".git").exists():
        return
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 [*git, "commit", "-q", "--no-verify", "-m", "corpus"]):
        subprocess.run(argv, cwd=root, check=True, capture_output=True)


def _named(p: Any) -> str:
    return str(p if isinstance(p, str) else next(iter(p)))


def buildable(root: Path, config: dict[str, Any], names: list[str], left: list[str],
              name: str = "mkdocs-plugins.yml") -> str | None:
    """Write ``config`` as ``name`` with the plugins that let the site build here (a
    plugin may fail on what the corpus lacks: a module a macro or griffe extension names,
    an example package; the one whose absence lets it build is left out, or the last ones
    until it builds); None, or why it cannot be built."""
    def write(plugins: list[Any]) -> None:
        (root / name).write_text(yaml.dump({**config, "plugins": plugins}, Dumper=_Dumper,
                                           sort_keys=False))

    plugins = list(config["plugins"])
    argv = [sys.executable, "-P", "-m", "mkdocs", "build", "-q", "-f", name, "-d",
            str(root.parent / f"{root.name}-probe")]
    while True:
        write(plugins)
        tried = subprocess.run(argv, cwd=root, capture_output=True, text=True)
        if tried.returncode == 0:
            config["plugins"] = plugins
            return None
        droppable = [p for p in plugins if _named(p) != "search"]
        if not droppable:
            lines = tried.stderr.strip().splitlines() or ["?"]
            return f"the build fails here ({lines[-1][:160]})"
        culprit = droppable[-1]
        for candidate in droppable:
            write([p for p in plugins if p is not candidate])
            if subprocess.run(argv, cwd=root, capture_output=True).returncode == 0:
                culprit = candidate
                break
        plugins.remove(culprit)
        if _named(culprit) in names:
            names.remove(_named(culprit))
        left.append(f"{_named(culprit)} (fails here)")


def _without_code(root: Path, config: dict[str, Any]) -> Path:
    """A copy of the corpus whose build runs no code of its own: no hooks, no macros
    module (its main.py or package removed)."""
    bare = root.parent / f"{root.name}-nocode"
    shutil.rmtree(bare, ignore_errors=True)
    shutil.copytree(root, bare, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    for plugin in config["plugins"]:
        if _named(plugin) == "macros":
            module = (plugin.get("macros") or {}).get("module_name", "main") \
                if isinstance(plugin, dict) else "main"
            for found in (bare / f"{module}.py", bare / module):
                if found.is_dir():
                    shutil.rmtree(found)
                else:
                    found.unlink(missing_ok=True)
    (bare / "mkdocs-plugins.yml").write_text(yaml.dump(
        {k: v for k, v in config.items() if k != "hooks"}, Dumper=_Dumper, sort_keys=False))
    return bare


def _causes(warnings: list[str]) -> tuple[int, int]:
    """(warnings, the largest number said of one cause)."""
    seen: dict[str, int] = {}
    for message in warnings:
        cause = re.sub(r"'[^']*'|\d+", "", message)
        seen[cause] = seen.get(cause, 0) + 1
    return len(warnings), max(seen.values(), default=0)


def fetch_git(repo: str, tag: str, mirror: Path | None, into: Path) -> Path:
    """The tree of ``repo`` at ``tag`` in ``into``: from ``mirror`` (OWNER+NAME/repo git
    folders), else cloned from GitHub."""
    dest = into / f"{repo.replace('/', '+')}-{tag}"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    local = mirror / repo.replace("/", "+") / "repo" if mirror else None
    if local is not None and local.exists():
        tar = subprocess.run(["git", "--git-dir", str(local), "archive", tag],
                             check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    else:
        subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", tag,
                        f"https://github.com/{repo}", str(dest)], check=True)
        shutil.rmtree(dest / ".git")
    return dest


def accept_code(root: Path) -> bool:
    """Accept the corpus's own code (hooks, macros module) as its owner would, with
    `atlas check accept`; the acceptance goes to the bench's own config folder (main).
    False (said) where there is none to accept."""
    proc = subprocess.run([sys.executable, "-m", "atlas_files", "check", "accept", "--yes",
                           str(root / "mkdocs.yml")], cwd=root.parent, capture_output=True,
                          text=True, env=clean_env())
    if "no code of its own" in proc.stderr:
        print("    (no code of its own to accept: judged once)")
    elif proc.returncode:
        print(f"    its code was not accepted: {proc.stderr.strip()[:300]}")
    return proc.returncode == 0


def bench_plugins(kind: str, project: str, version: str, sub: str, cache: Path, work: Path,
                  mirror: Path | None, verbose: bool) -> None:
    """One site judged as its project builds it (see the module's docstring)."""
    label = f"{project} {version}" + (f" ({sub})" if sub else "")
    top = fetch_git(project, version, mirror, work / "git") if kind == "git" \
        else fetch(project, version, cache, work / f"{project}-plugins")
    root = top / sub if sub else top
    found = configured(root, label)
    if found is None:
        return
    data, reduced, left = found
    config, names, left_plugins = with_plugins(data, reduced)
    left += left_plugins
    hooks = [h for h in data.get("hooks") or [] if isinstance(h, str) and (root / h).is_file()]
    if hooks:
        config["hooks"] = hooks
    theme = data.get("theme")
    custom = theme.get("custom_dir") if isinstance(theme, dict) else None
    if isinstance(custom, str) and (root / custom).is_dir():  # templates its hooks render
        config["theme"] = {**config["theme"], "custom_dir": custom}
    for key in ("exclude_docs", "draft_docs", "not_in_nav", "extra"):
        if key in data:
            config[key] = _clean(data[key])
    if not ({n.split("/")[-1] for n in names} - {"search"}) and not hooks:
        print(f"{label}: none of its plugins or hooks can run here; skipped")
        return
    for name in CONFIGS:
        (root / name).unlink(missing_ok=True)
    why = buildable(root, config, names, left)
    if why is not None:
        print(f"{label}: {why}")
        return
    (root / "mkdocs.yml").write_text((root / "mkdocs-plugins.yml").read_text())
    _git_init(top)
    docs = root / config["docs_dir"]
    bare = _without_code(root, config)
    m_wall, with_code, _ = mkdocs_warnings(root, work / f"{root.name}-built")
    _, without_code, _ = mkdocs_warnings(bare, work / f"{root.name}-bare", "mkdocs-plugins.yml")
    truth = with_code & without_code
    results = {}
    for accepted in (False, True):
        if accepted and not accept_code(root):
            break
        wall, errors, warnings = atlas_findings(root, docs)
        w_wall, _, _ = atlas_findings(root, docs, warm=True)
        judged = with_code if accepted else truth
        hit = errors & judged
        results[accepted] = (len(hit) / len(judged) if judged else 1.0,
                             len(errors & with_code) / len(errors) if errors else 1.0,
                             wall, w_wall, errors, warnings)
    # A warm check through a command server, as a pre-commit hook run with ATLAS_SERVER
    # set makes it: the server has run this check once before (and learned its imports).
    with command_server(clean_env()) as served:
        atlas_findings(root, docs, warm=True, server=served["ATLAS_SERVER"], repeat=1)
        time.sleep(1)  # the server learns while idle
        s_wall, s_errors, _ = atlas_findings(root, docs, warm=True,
                                             server=served["ATLAS_SERVER"])
    pages = sum(1 for _ in docs.rglob("*.md"))
    print(f"{label} ({pages} pages; plugins {', '.join(names)}"
          f"{'; hooks ' + ', '.join(hooks) if hooks else ''}): MkDocs {len(with_code)} link "
          f"warnings ({len(with_code) - len(truth)} depend on the repository's code; "
          f"{len(without_code)} with that code not run)")
    last = max(results)
    for accepted, (recall, precision, wall, w_wall, errors, warnings) in results.items():
        said, most = _causes(warnings)
        print(f"    {'its code accepted' if accepted else 'its code not accepted'}: recall "
              f"{recall:.2f}  precision {precision:.2f}  ({len(errors)} errors, {said} "
              f"warnings, at most {most} of one cause)  |  mkdocs build {m_wall:6.2f} s  "
              f"atlas {wall:5.2f} s ({m_wall / wall:4.1f}x), warm {w_wall:5.2f} s "
              f"({m_wall / w_wall:4.1f}x)")
        if accepted == last:
            print(f"    warm through a command server: {s_wall:5.2f} s "
                  f"({m_wall / s_wall:4.1f}x)"
                  + ("" if s_errors == errors else "; THE SERVER SAID OTHERWISE"))
        if verbose:
            judged = with_code if accepted else truth
            for page, link in sorted(judged - errors):
                print(f"        missed:      {page}: {link}")
            for page, link in sorted(errors - with_code):
                print(f"        not MkDocs': {page}: {link}")
            for warning in warnings:
                print(f"        warning:     {warning[:300]}")
    if verbose:
        print(f"    left out for this machine: {', '.join(left) or 'nothing'}")


def configured(root: Path, label: str) -> tuple[dict[str, Any], dict[str, Any], list[str]] | None:
    """The corpus's configuration, as this machine can build it, and what was left out;
    None (said) if it has none."""
    config = next((root / c for c in CONFIGS if (root / c).is_file()), None)
    if config is None:
        print(f"{label}: no MkDocs configuration; skipped")
        return None
    data = read_config(config)
    reduced, left = reduce_config(data, root)
    return data, reduced, left


def bench(project: str, version: str, cache: Path, work: Path, verbose: bool) -> None:
    root = fetch(project, version, cache, work / project)
    found = configured(root, f"{project} {version}")
    if found is None:
        return
    data, reduced, left = found
    config = next(root / c for c in CONFIGS if (root / c).is_file())
    for name in CONFIGS:
        (root / name).unlink(missing_ok=True)
    (root / "mkdocs.yml").write_text(yaml.dump(reduced, Dumper=_Dumper, sort_keys=False))
    docs = root / reduced["docs_dir"]
    pages = sum(1 for _ in docs.rglob("*.md"))
    m_wall, truth, failed = mkdocs_warnings(root, work / f"{project}-site")
    if failed and reduced["theme"]["name"] != "mkdocs":
        # The theme installed here may lack what the pages ask of it (an icon set): the
        # theme makes no link, so build with MkDocs' own.
        left.append(f"theme {reduced['theme']['name']}")
        reduced["theme"] = {"name": "mkdocs"}
        (root / "mkdocs.yml").write_text(yaml.dump(reduced, Dumper=_Dumper, sort_keys=False))
        m_wall, truth, failed = mkdocs_warnings(root, work / f"{project}-site")
    if failed:
        print(f"{project} {version}: mkdocs build failed:\n{failed[-1500:]}")
        return
    a_wall, errors, warnings = atlas_findings(root, docs)
    w_wall, warm_errors, _ = atlas_findings(root, docs, warm=True)
    s_wall, l_wall, served_errors, learned_errors = served_findings(root, docs)
    plain = work / f"{project}-plain"
    shutil.copytree(docs, plain)
    p_wall, _ = timed([sys.executable, "-m", "atlas_files", "check", "--links-only", "--json",
                       str(plain)], work)
    hit = truth & errors
    recall = len(hit) / len(truth) if truth else 1.0
    precision = len(hit) / len(errors) if errors else 1.0
    print(f"{project} {version} ({config.name}, {pages} pages): MkDocs {len(truth)} link "
          f"warnings, atlas {len(errors)} errors (+{len(warnings)} warnings)"
          + ("" if warm_errors == errors else "; A WARM RUN SAID OTHERWISE")
          + ("" if served_errors == learned_errors == errors
             else "; THE COMMAND SERVER SAID OTHERWISE"))
    print(f"    recall {recall:.2f}  precision {precision:.2f}  |  mkdocs build {m_wall:6.2f} s"
          f"  atlas {a_wall:5.2f} s ({m_wall / a_wall:4.1f}x faster), warm {w_wall:5.2f} s "
          f"({m_wall / w_wall:4.1f}x)  atlas without mkdocs.yml {p_wall:5.2f} s")
    print(f"    through the command server (ATLAS_SERVER), cold {s_wall:5.2f} s "
          f"({m_wall / s_wall:4.1f}x faster); a later run, its imports learned "
          f"{l_wall:5.2f} s ({m_wall / l_wall:4.1f}x)")
    if verbose:
        print(f"    left out for this machine: {', '.join(left) or 'nothing'}")
        for page, link in sorted(truth - errors):
            print(f"    missed:      {page}: {link}")
        for page, link in sorted(errors - truth):
            print(f"    not MkDocs': {page}: {link}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", metavar="DIR", help="keep the downloaded sdists in DIR")
    parser.add_argument("--only", metavar="PROJECT", action="append",
                        help="bench this corpus only (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every mismatch")
    parser.add_argument("--repeat", type=int, default=REPEAT, metavar="N",
                        help=f"time each command N times, keep the best (default {REPEAT})")
    parser.add_argument("--plugins", action="store_true",
                        help="judge the sites with their own plugins and hooks (see above)")
    parser.add_argument("--mirror", metavar="DIR",
                        help="git mirrors of the git corpora (DIR/OWNER+NAME/repo)")
    args = parser.parse_args()
    globals()["REPEAT"] = max(1, args.repeat)
    work = Path(tempfile.mkdtemp(prefix="atlas-bench-links-"))
    cache = Path(args.cache) if args.cache else work / "sdists"
    mirror = Path(args.mirror) if args.mirror else None
    try:
        if args.plugins:
            # The sites' code is accepted in a config folder of the bench's own (accept_code).
            (work / "config").mkdir(mode=0o700)
            os.environ["XDG_CONFIG_HOME"] = str(work / "config")
            for kind, project, version, sub in PLUGIN_CORPORA:
                if not args.only or project in args.only or f"{project}@{version}" in args.only:
                    bench_plugins(kind, project, version, sub, cache, work, mirror,
                                  args.verbose)
            return
        for project, version in CORPORA:
            if args.only and project not in args.only:
                continue
            bench(project, version, cache, work, args.verbose)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
