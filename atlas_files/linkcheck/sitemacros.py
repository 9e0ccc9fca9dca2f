"""The macros plugin's pages (mkdocs-macros), expanded as its build would, where that needs
no code of the repository.

The plugin renders each page with Jinja before MkDocs reads its Markdown: variables from
mkdocs.yml's ``extra:``, from the YAML files it ``include_yaml``s and from the page's own
front matter, and macros, filters and variables that the repository's Python module
(``main.py``, or ``module_name``) and its pluglets (``modules:``) define. atlas runs none
of that code. A page whose every name is one of those variables is expanded here, in
Jinja's sandbox (no attribute of Python's internals, no unsafe call), in a child process
with its memory and time capped (a template is the repository's writing too: a loop in a
loop can run for hours), and then judged as the site would judge it. A page that names
anything else (a macro, ``git``, ``now()``, ``page.title``) depends on what only the build
knows: its anchors cannot be checked from source, said once per site with their number.

``{% include %}`` reads templates from ``include_dir`` (default: docs_dir), inside the
repository only, as regular files of bounded size.
"""

from __future__ import annotations

import os
import resource
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from atlas_files import frames
from atlas_files.filesources import DiskSource
from atlas_files.linkcheck import renderpool
from atlas_files.linkcheck.boundary import Boundary
from atlas_files.linkcheck.siteconfig import SiteConfig, Unresolved, read_file, safe_load

_MEMORY = 1 << 30  # bytes of address space the expanding child may take
_SECONDS_PAGE = 2
_SECONDS_ALL = 30
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

    def __init__(self, site: SiteConfig) -> None:
        self.site = site
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
        """Expand ``pages`` (uri: text, front matter) in one capped child; each result is
        then ``result(uri)``."""
        todo = {uri: job for uri, job in pages.items() if uri not in self._done}
        if not todo:
            return
        reader, writer = os.pipe()

        def child() -> None:
            frames.write(writer, self._expand_all(todo))

        pid = renderpool.fork_child(child, [reader], [writer])
        got: dict[str, tuple[str | None, str | None]] = {}
        data = None if pid is None else renderpool.child_answer(pid, reader)
        if data is not None:
            try:
                got = {str(k): (v[0], v[1]) for k, v in data.items()}
            except (ValueError, TypeError, IndexError, AttributeError):
                got = {}
        for uri in todo:
            self._done[uri] = got.get(uri, (None, "the expansion did not finish (it ran out of "
                                               "its time or memory)"))

    def result(self, uri: str) -> tuple[str | None, str | None]:
        """(the expanded text, None), or (None, why it cannot be expanded here)."""
        return self._done.get(uri, (None, "it was not expanded"))

    def _expand_all(self, todo: Mapping[str, tuple[str, dict[str, Any]]],
                    ) -> dict[str, tuple[str | None, str | None]]:  # pragma: no cover - child
        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY, _MEMORY))
        signal.alarm(_SECONDS_ALL)
        from jinja2 import BaseLoader, TemplateNotFound, TemplateSyntaxError, meta  # noqa: PLC0415
        from jinja2.sandbox import SandboxedEnvironment  # noqa: PLC0415

        within, include_dir = self._within, self.include_dir

        class Loader(BaseLoader):
            def get_source(self, environment: Any, template: str) -> tuple[str, str, Any]:
                path = Path(os.path.normpath(include_dir / template))
                try:
                    data, size = DiskSource(within=within).read_limited(path, _MAX_TEMPLATE)
                except OSError:
                    raise TemplateNotFound(template) from None
                if size > _MAX_TEMPLATE:
                    raise TemplateNotFound(template)
                return data.decode("utf-8", "replace"), str(path), lambda: False

        m = self.marks
        env = SandboxedEnvironment(
            loader=Loader(), block_start_string=m[0], block_end_string=m[1],
            variable_start_string=m[2], variable_end_string=m[3], comment_start_string=m[4],
            comment_end_string=m[5], keep_trailing_newline=True)
        known = set(self.variables) | set(env.globals)
        out: dict[str, tuple[str | None, str | None]] = {}

        def expired(signum: int, frame: Any) -> None:
            raise TimeoutError

        signal.signal(signal.SIGALRM, expired)
        for uri, (text, front) in todo.items():
            try:
                tree = env.parse(text)
                unknown = sorted(meta.find_undeclared_variables(tree) - known - set(front))
                if unknown:
                    out[uri] = (None, f"it uses {', '.join(unknown[:3])}"
                                + (" (and more)" if len(unknown) > 3 else "")
                                + (", which the repository's own macros module may define"
                                   if self.has_code else ", which the plugin alone knows"))
                    continue
                signal.setitimer(signal.ITIMER_REAL, _SECONDS_PAGE)
                try:
                    done = env.from_string(text).render({**self.variables, **front})
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                out[uri] = (done, None) if len(done) <= _MAX_OUT else \
                    (None, "it expands to more than any page")
            except TemplateSyntaxError as exc:
                out[uri] = (None, f"its template does not parse ({exc.message})"[:200])
            except (TimeoutError, MemoryError, RecursionError):
                out[uri] = (None, "it takes longer or more memory to expand than a check gives")
            except Exception as exc:  # noqa: BLE001 - the sandbox's refusals, a bad filter...
                out[uri] = (None, f"it cannot be expanded here ({type(exc).__name__})")
        return out
