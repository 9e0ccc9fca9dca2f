"""The macros plugin's pages (mkdocs-macros), expanded as its build would, where that needs
no code of the repository.

The plugin renders each page with Jinja before MkDocs reads its Markdown: variables from
mkdocs.yml's ``extra:``, from the YAML files it ``include_yaml``s and from the page's own
front matter, and macros, filters and variables that the repository's Python module
(``main.py``, or ``module_name``) and its pluglets (``modules:``) define. atlas runs none
of that code. A page whose every name is one of those variables is expanded here, in
Jinja's sandbox (no attribute of Python's internals, no unsafe call), in a child process
with its memory capped and each page under the deadline every page a check renders has
(renderpool.py: a template is the repository's writing too, and a loop in a loop can run
for hours), no page started past ``_RUN_PAGES`` times a page's time from the first, and
then judged as the site would judge it. A page that names
anything else (a macro, ``git``, ``now()``, ``page.title``) depends on what only the build
knows: its anchors cannot be checked from source, said once per site with their number.

``{% include %}`` reads templates from ``include_dir`` (default: docs_dir), inside the
repository only, as regular files of bounded size.

What an expansion yielded is kept between runs with the renderings (rendercache.py, in
the user's own cache folder), keyed by the page's text and front matter and by a digest of
everything else it used (the marks, the variables, include_dir, Jinja's install, this
module, atlas's and Python's versions). It holds while every template it included is byte
for byte the same and every template it looked for in vain is still missing. So a warm
check (a pre-commit hook's) forks no child for pages that did not change. A page that ran
out of its time is remembered so (``ran_out``) and not expanded again while it stays the
same; one that ran out of memory, or that the run's budget left unexpanded, is not kept.
Where the repository's accepted macros module ran, the digests of its files are in the
key too, and an expansion holds only while every file of the repository the module read
(in ``define_env`` and while the page was expanded), every folder it listed and every
environment variable it read is as it was (codereads.py); one made while the module
started a program or opened a connection is not kept.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import resource
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from atlas_files import __version__
from atlas_files.facts import renderlimit
from atlas_files.linkcheck import codereads, rendercache, renderpool
from atlas_files.linkcheck.boundary import Boundary
from atlas_files.linkcheck.filesources import DiskSource
from atlas_files.linkcheck.siteconfig import SiteConfig, Unresolved, read_file, safe_load

_MEMORY = 1 << 30  # bytes of address space the expanding child may take
_RUN_PAGES = 6  # no page is started past this many pages' time from the first
_MAX_OUT = 4 << 20  # characters: a larger expansion is not believed
_MAX_TEMPLATE = 2 << 20
_DEFAULT_MARKS = ("{%", "%}", "{{", "}}", "{#", "#}")


def plain_data(value: Any, depth: int = 0) -> Any:
    """``value`` as plain data (tags left out), for a template's variables."""
    if depth > 50 or isinstance(value, Unresolved):
        return None
    if isinstance(value, dict):
        return {str(k): plain_data(v, depth + 1) for k, v in value.items()
                if not isinstance(v, Unresolved)}
    if isinstance(value, list):
        return [plain_data(v, depth + 1) for v in value if not isinstance(v, Unresolved)]
    return value if isinstance(value, str | int | float | bool | type(None)) else None


class Macros:
    """One site's macros plugin (see the module's docstring)."""

    def __init__(self, site: SiteConfig, code: Mapping[str, str] | None = None) -> None:
        self.site = site
        # The repository's code this check runs (path: digest; sitecode.py), None: none.
        self.code = dict(code) if code is not None else None
        config = site.plugin_configs.get("macros", {})
        self.config = config if isinstance(config, dict) else {}
        within = Boundary(map(Path, site.readable))
        self._within = within
        module = self.config.get("module_name", "main")
        module = module if isinstance(module, str) else "main"
        local = site.root / module
        self.has_code = bool(self.config.get("modules")) or any(
            os.path.lexists(p) for p in (local.with_suffix(".py"), local / "__init__.py"))
        self.variables: dict[str, Any] = {}
        yamls = self.config.get("include_yaml") or []
        for item in yamls if isinstance(yamls, list) else []:
            # A list of files, or of {key: file}: each file's mapping, under its key.
            named = item if isinstance(item, dict) else {None: item}
            for key, rel in named.items():
                if isinstance(rel, str):
                    self._include_yaml(key, site.root / rel)
        extra = plain_data(site.data.get("extra"))
        extra = extra if isinstance(extra, dict) else {}
        self.variables.update(extra)
        self.variables["extra"] = extra
        self.variables["config"] = plain_data(site.data)
        marks = [self.config.get(f"j2_{k}_string") for k in
                 ("block_start", "block_end", "variable_start", "variable_end",
                  "comment_start", "comment_end")]
        self.marks = tuple(m if isinstance(m, str) and m else d
                           for m, d in zip(marks, _DEFAULT_MARKS, strict=True))
        include = self.config.get("include_dir")
        self.include_dir = site.root / include if isinstance(include, str) and include \
            else site.docs_dir
        self._done: dict[str, tuple[str | None, str | None]] = {}
        self.ran_out: dict[str, float] = {}  # page: the seconds its expansion took longer than
        self._kept: ExpansionCache | None | bool = False  # False: not opened yet

    def _include_yaml(self, key: Any, path: Path) -> None:
        try:
            data = plain_data(safe_load(read_file(path, self._within, "an include_yaml file")))
        except ValueError:
            return
        if isinstance(data, dict):
            if key is None:
                self.variables.update(data)
            else:
                self.variables[str(key)] = data

    def uses(self, text: str) -> bool:
        """Whether a page of this text is one the plugin renders (it holds its marks)."""
        return any(mark in text for mark in (self.marks[0], self.marks[2]))

    def renders(self, meta: Mapping[str, Any]) -> bool:
        """Whether the plugin renders a page with this front matter."""
        if meta.get("ignore_macros") is True or meta.get("render_macros") is False:
            return False
        return self.config.get("render_by_default", True) is not False \
            or meta.get("render_macros") is True

    def expand(self, pages: Mapping[str, tuple[str, dict[str, Any]]]) -> None:
        """Expand ``pages`` (uri: text, front matter) in a capped child; each result is
        then ``result(uri)``, and a page that ran out of its time is in ``ran_out``."""
        todo = {uri: job for uri, job in pages.items() if uri not in self._done}
        kept = self._cache()
        for uri, (text, front) in list(todo.items()):
            key = ExpansionCache.expansion_key(uri, text, front)
            seconds = kept.ran_out(key) if kept is not None else None
            hit = kept.get_expansion(key) if kept is not None and seconds is None else None
            if seconds is not None:
                self.ran_out[uri] = seconds
                self._done[uri] = (None, "it took longer to expand than a check gives")
                del todo[uri]
            elif hit is not None:
                self._done[uri] = hit
                del todo[uri]
        if not todo:
            return
        expand = self._expander()
        seconds = renderlimit.check_seconds()
        got = renderpool.run_children(lambda uri: expand(uri, *todo[uri]), [list(todo)],
                                      seconds, total=seconds * _RUN_PAGES, setup=cap_memory)
        for uri, (text, front) in todo.items():
            answer = got.get(uri)
            key = ExpansionCache.expansion_key(uri, text, front)
            if isinstance(answer, renderpool.RanOut):
                self.ran_out[uri] = answer.seconds
                self._done[uri] = (None, "it took longer to expand than a check gives")
                if answer.certain and kept is not None:
                    kept.put_ran_out(key, answer.seconds)
                continue
            try:
                done, why, included, missing, keep, reads = answer  # type: ignore[misc]
            except (ValueError, TypeError):
                done, why, included, missing, keep, reads = (
                    None, "it was not expanded (the check's "
                    f"{seconds * _RUN_PAGES:g} s for expanding pages ran out first, or its "
                    "expansion ran out of memory)", (), (), False, None)
            self._done[uri] = (done, why)
            # What the repository's code gave holds only with what it read (codereads.py).
            if keep and kept is not None and (self.code is None or reads is not None):
                kept.put_expansion(key, (done, why), included, missing, reads)
        if kept is not None:
            kept.save()

    def _cache(self) -> ExpansionCache | None:
        """The expansions kept from earlier runs (None: no cache folder of this user's)."""
        if self._kept is False:
            described = json.dumps({
                "format": 1, "atlas": __version__, "python": sys.version,
                "jinja2": rendercache.package("jinja2"), "marks": self.marks,
                "variables": self.variables, "include_dir": str(self.include_dir),
                "code": self.has_code, "runs": self.code,
                "module": rendercache.stamp(__file__),
                "reads": rendercache.stamp(codereads.__file__),
            }, sort_keys=True, default=str)
            setup = "m" + hashlib.sha256(described.encode()).hexdigest()
            self._kept = ExpansionCache(self.site, setup) \
                if rendercache.folder() is not None else None
        return self._kept if isinstance(self._kept, ExpansionCache) else None

    def result(self, uri: str) -> tuple[str | None, str | None]:
        """(the expanded text, None), or (None, why it cannot be expanded here)."""
        return self._done.get(uri, (None, "it was not expanded"))

    def _expander(self) -> Callable[[str, str, dict[str, Any]], tuple[Any, ...]]:
        """What expands one page, in the child (set up there, at its first page): (the
        expanded text, why not, templates included, templates missing, whether the answer
        may be kept: one that ran out of memory may not)."""
        made: list[Callable[[str, str, dict[str, Any]], tuple[Any, ...]]] = []

        def expand(uri: str, text: str, front: dict[str, Any],
                   ) -> tuple[Any, ...]:  # pragma: no cover - child
            if not made:
                made.append(self._made_expander())
            return made[0](uri, text, front)

        return expand

    def _made_expander(self) -> Callable[[str, str, dict[str, Any]], tuple[Any, ...]
                                         ]:  # pragma: no cover - child
        from jinja2 import BaseLoader, TemplateNotFound, TemplateSyntaxError, meta  # noqa: PLC0415 - in the child only
        from jinja2.sandbox import SandboxedEnvironment  # noqa: PLC0415 - idem

        within, include_dir = self._within, self.include_dir
        included: list[tuple[str, str]] = []  # of the page being expanded
        missing: list[str] = []

        class Loader(BaseLoader):
            def get_source(self, environment: Any, template: str) -> tuple[str, str, Any]:
                path = Path(os.path.normpath(include_dir / template))
                try:
                    data, size = DiskSource(within=within).read_limited(path, _MAX_TEMPLATE)
                except OSError:
                    missing.append(str(path))
                    raise TemplateNotFound(template) from None
                if size > _MAX_TEMPLATE:
                    missing.append(str(path))  # as good as missing, while it stays so large
                    raise TemplateNotFound(template)
                included.append((str(path), hashlib.sha256(data).hexdigest()))
                return data.decode("utf-8", "replace"), str(path), lambda: False

        m = self.marks
        env = SandboxedEnvironment(
            loader=Loader(), block_start_string=m[0], block_end_string=m[1],
            variable_start_string=m[2], variable_end_string=m[3], comment_start_string=m[4],
            comment_end_string=m[5], keep_trailing_newline=True,
            # No cache of loaded templates: each page's includes must reach get_source,
            # which notes them for that page's kept expansion.
            cache_size=0)
        variables = dict(self.variables)
        failed = None
        recorder = codereads.recorder() if self.code is not None else None
        if recorder is not None:
            recorder.start(self.site.repository, self.site.readable)
            try:
                self._run_module(env, variables)
            except Exception as exc:  # noqa: BLE001 - the repository's code
                failed = f"its macros module raised {type(exc).__name__} ({exc})"[:200]
        mark = recorder.mark() if recorder is not None else None
        known = set(variables) | set(env.globals)

        def expand(uri: str, text: str, front: dict[str, Any]) -> tuple[Any, ...]:
            included.clear()
            missing.clear()
            keep = True
            if failed is not None:
                return (None, failed, [], [], False, None)
            try:
                tree = env.parse(text)
                unknown = sorted(meta.find_undeclared_variables(tree) - known - set(front))
                if unknown:
                    answer: tuple[str | None, str | None] = (
                        None, f"it uses {', '.join(unknown[:3])}"
                        + (" (and more)" if len(unknown) > 3 else "")
                        + (", which the plugin alone knows" if not self.has_code
                           else ", which the repository's own macros module does not define"
                           if self.code is not None else
                           ", which the repository's own macros module may define: "
                           "`atlas check accept` runs it on this clone, once you have read "
                           "and accepted it"))
                else:
                    done = env.from_string(text).render({**variables, **front})
                    answer = (done, None) if len(done) <= _MAX_OUT else \
                        (None, "it expands to more than any page")
            except TemplateSyntaxError as exc:
                answer = (None, f"its template does not parse ({exc.message})"[:200])
            except (MemoryError, RecursionError):
                answer = (None, "it takes more memory to expand than a check gives")
                keep = False
            except Exception as exc:  # noqa: BLE001 - the sandbox's refusals, a bad filter...
                answer = (None, f"it cannot be expanded here ({type(exc).__name__})")
            reads = recorder.since(mark) if recorder is not None and mark is not None \
                else None
            return (*answer, list(included), list(missing), keep, reads)

        return expand


    def _run_module(self, env: Any, variables: dict[str, Any],
                    ) -> None:  # pragma: no cover - the child
        """Import the repository's macros module (accepted: sitecode.py) as the plugin
        does, from the project's folder, and let it define its macros, filters and
        variables into ``env`` and ``variables``."""
        name = self.config.get("module_name", "main")
        name = name if isinstance(name, str) and name else "main"
        os.chdir(self.site.root)  # as `mkdocs build` runs, in the site's folder
        sys.path.insert(0, str(self.site.root))
        try:
            module = importlib.import_module(name.replace("/", "."))
        finally:
            sys.path.remove(str(self.site.root))
        given = _Env(env, variables, self.site, self.config)
        if hasattr(module, "define_env"):
            module.define_env(given)
        elif hasattr(module, "declare_variables"):
            module.declare_variables(given.variables, given.macro)
        variables.update(given.variables)


class _Env:  # pragma: no cover - the child
    """What the macros plugin hands the module's ``define_env``: its variables, and the
    decorators that add macros and filters."""

    def __init__(self, env: Any, variables: dict[str, Any], site: SiteConfig,
                 config: dict[str, Any]) -> None:
        self._env = env
        self.variables = _Variables(variables)
        self.conf = self.config = plain_data(site.data)
        self.project_dir = str(site.root)
        self.macros = env.globals
        self.filters = env.filters
        self.plugin_config = config

    def macro(self, fn: Any, name: str = "") -> Any:
        self._env.globals[name or fn.__name__] = fn
        return fn

    def filter(self, fn: Any, name: str = "") -> Any:
        self._env.filters[name or fn.__name__] = fn
        return fn


class _Variables(dict[str, Any]):  # pragma: no cover - the child
    """The plugin's variables: a mapping whose keys are attributes too."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


def cap_memory() -> None:  # pragma: no cover - child
    """Let the expanding child take _MEMORY more address space than it was forked with.
    A long-lived caller (a server with threads, each with its own stack and malloc arena)
    may hold more than _MEMORY already, most of it reserved and never used; a cap of
    _MEMORY in all would make every allocation of the child fail."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            held = int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        held = 0
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = held + _MEMORY
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class ExpansionCache(rendercache.RenderCache):
    """The macros plugin's expansions of one site's pages, kept with its renderings (see
    the module's docstring): the same file handling, other entries."""

    def __init__(self, site: SiteConfig, setup: str) -> None:
        super().__init__(site, setup)
        if self.problems is None:
            self.problems = []  # an expansion has no renderer whose problems are kept

    @staticmethod
    def expansion_key(uri: str, text: str, front: Mapping[str, Any]) -> str:
        described = json.dumps([uri, text, front], sort_keys=True, default=str)
        return hashlib.sha256(described.encode("utf-8", "surrogatepass")).hexdigest()

    def get_expansion(self, key: str) -> tuple[str | None, str | None] | None:
        """The expansion (text, or why not) of the page of ``key`` (expansion_key) if one
        is kept and still holds."""
        entry = self._pages.get(key)
        if entry is None:
            return None
        try:
            done, why = entry["text"], entry["why"]
            holds = self._holds(entry)
            if not (isinstance(done, str | None) and isinstance(why, str | None)):
                return None
        except (KeyError, TypeError, ValueError):
            return None
        if not holds:
            return None
        self._used.add(key)
        return done, why

    def put_expansion(self, key: str, answer: tuple[str | None, str | None],
                      included: Any, missing: Any, reads: Any = None) -> None:
        """Keep ``answer`` with the templates it included (path, digest) and missed, and
        what the repository's code read to give it (codereads.py; None: no code ran)."""
        try:
            kept_included = [[str(p), str(sha)] for p, sha in included]
            kept_missing = [str(p) for p in missing]
        except (TypeError, ValueError):
            return
        self._pages[key] = {"text": answer[0], "why": answer[1], "missing": kept_missing,
                            "included": kept_included}
        if reads is not None:
            self._pages[key]["reads"] = reads
        self._used.add(key)
        self._dirty = True
