"""Hostile checked repositories, generated, and a way to run atlas on one under watch.

Written from the threat model of the checked-repository boundary (docs/security.md), not
from a list of known bugs: a teammate (or a pull request) controls every byte of the
repository a check or a pre-commit hook runs on: its mkdocs.yml (tags, aliases, INHERIT
chains, huge or oddly typed values, extension names and settings, plugins, hooks), its
Markdown (snippet directives, template includes, links to anywhere), and its files
(symbolic links out of it, named pipes, devices, huge sparse files, Python modules named
like extensions). They control nothing else: not the user's home, other folders, the
network, or which programs the user runs.

A run of atlas is watched from inside (``sitecustomize``, loaded by every Python process
of the run, forked renderers included): an audit hook (``sys.addaudithook``) logs every
file opened for writing, every file opened at all outside the places a check may read,
every process started, every socket connected or name looked up, and every code object
run from a file of the repository or outside it; and the address space is capped
(RLIMIT_AS). From outside: a wall-clock limit, a listener on 127.0.0.1 that counts
connections, a marker file the hostile content tries to create, and the outside folder's
listing before and after.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from support.git import git, git_env
from support.linksites import site
from support.runner import atlas_command

MEMORY = 2 << 30  # bytes of address space a run of atlas (and each fork) may take
SECONDS = 90.0  # wall-clock limit of one command, on a loaded two-core machine
SECRET = "s3cr3t-9d2e"  # in every file outside the repository

AUDIT = r'''
import os, sys
_log = os.environ.get("HOSTILE_AUDIT_LOG")
# Only atlas is watched (not pre-commit, which runs it, nor git's helpers).
_argv = getattr(sys, "orig_argv", sys.argv)
if _log and (os.environ.get("HOSTILE_WATCH_ALL") or any(
        a == "atlas_files" or a.endswith("/atlas") for a in _argv[1:3])):
    import resource
    _limit = int(os.environ.get("HOSTILE_MEMORY", "0"))
    if _limit:
        resource.setrlimit(resource.RLIMIT_AS, (_limit, _limit))
    _fd = os.open(_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    _watched = tuple(p for p in os.environ.get("HOSTILE_WATCHED", "").split(os.pathsep) if p)
    _readable = tuple(p for p in os.environ.get("HOSTILE_READABLE", "").split(os.pathsep) if p)
    _WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    _busy = []
    # Each event's (path argument, its dir_fd argument), as CPython's audit events give them.
    _AT = {"os.mkdir": [(0, 2)], "os.rename": [(0, 2), (1, 3)], "os.replace": [(0, 2), (1, 3)],
           "os.remove": [(0, 1)], "os.rmdir": [(0, 1)], "os.link": [(0, 2), (1, 3)],
           "os.symlink": [(1, 2)], "os.truncate": [(0, None)], "shutil.rmtree": [(0, 1)]}

    def _say(*parts):
        import json
        os.write(_fd, (json.dumps([str(p) for p in parts]) + "\n").encode())

    def _path(value):
        if isinstance(value, bytes):
            value = os.fsdecode(value)
        return os.path.abspath(value) if isinstance(value, str) else None

    def _hook(event, args):
        if _busy:
            return
        _busy.append(1)
        try:
            if event == "open":
                path = _path(args[0])
                if path is None:
                    return
                mode, flags = args[1], args[2] if len(args) > 2 else 0
                writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                    isinstance(flags, int) and flags & _WRITE)
                relative = isinstance(args[0], (str, bytes)) and not os.path.isabs(args[0])
                if writing and relative:
                    # The open event does not say its dir_fd: a name atlas opens in a
                    # folder it holds (a temp file) is judged where it is published (a
                    # rename or link below names its folders), and one left in the
                    # working folder is found there after the run.
                    _say("write-relative", path)
                elif writing:
                    _say("write", path)
                elif not path.startswith(_readable):
                    _say("read", path)
            elif event in _AT:
                for at, fd_at in _AT[event]:
                    value = args[at] if at < len(args) else None
                    if not isinstance(value, (str, bytes)):
                        continue
                    fd = args[fd_at] if fd_at is not None and fd_at < len(args) else None
                    if isinstance(fd, int) and fd >= 0 and not os.path.isabs(value):
                        base = os.readlink(f"/proc/self/fd/{fd}")
                        _say("write", os.path.join(base, os.fsdecode(value)))
                    else:
                        _say("write", _path(value))
            elif event == "subprocess.Popen":
                _say("process", os.path.basename(str(args[0] or (args[1] or [""])[0])))
            elif event in ("os.system", "os.exec", "os.posix_spawn", "os.spawn",
                           "os.startfile", "pty.spawn"):
                _say("process", event, args[0])
            elif event in ("socket.connect", "socket.sendto", "socket.sendmsg",
                           "socket.getaddrinfo", "socket.gethostbyname", "urllib.Request"):
                _say("network", event, args[1] if len(args) > 1 else args[0])
            elif event in ("exec", "compile"):
                name = getattr(args[0], "co_filename", None) if event == "exec" else args[1]
                if isinstance(name, bytes):
                    name = os.fsdecode(name)
                path = _path(name) if isinstance(name, str) and not name.startswith("<") \
                    else None
                if path is not None and path.startswith(_watched):
                    _say("code", path)
        finally:
            _busy.pop()

    sys.addaudithook(_hook)
'''


@dataclass
class Watch:
    """What one watched run of atlas did (see the module's docstring)."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    events: list[list[str]]
    timed_out: bool = False

    def of(self, kind: str) -> list[list[str]]:
        return [e for e in self.events if e[0] == kind]


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections made to it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        # A closed socket does not wake a thread blocked in accept(): it looks up this often.
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


# -- the generator ------------------------------------------------------------------------

MARKER = "{M}"  # the path hostile content tries to create (substituted when written)
PORT = "{PORT}"

TAGS = [
    f"!!python/object/apply:os.system ['touch {MARKER}']",
    f"!!python/object/apply:mkdocs.utils.yaml.yaml_load "
    f"[\"!!python/object/apply:os.system ['touch {MARKER}']\"]",
    f"!!python/object/new:os.system ['touch {MARKER}']",
    f"!!python/object:os.system {{cmd: 'touch {MARKER}'}}",
    "!!python/name:os.system",
    "!!python/module:antigravity",
    f"!!python/object/apply:subprocess.check_call [[sh, -c, 'touch {MARKER}']]",
    f"!!python/object/apply:builtins.exec [\"open('{MARKER}', 'w')\"]",
    f"!!python/object/apply:pymdownx.slugs.slugify {{kwds: {{case: "
    f"!!python/object/apply:os.system ['touch {MARKER}']}}}}",
    "!!python/object/apply:pymdownx.slugs.slugify {kwds: {case: lower}}",
    "!!python/name:pymdownx.superfences.fence_code_format",
    "!!python/tuple [1, 2]",
    "!ENV [HOME, fallback]",
    "!ENV HOSTILE_NO_SUCH_VARIABLE",
    "!relative $config_dir/../outside",
    "!include ../outside/secret.yml",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!timestamp 2001-12-14",
    "!!str 5",
    "!something-else {a: 1}",
]
SCALARS = ["docs", "/", "..", "../outside", "5", "[docs]", "docs/../../outside", "''",
           "/etc", "~", "{a: b}", "null", "true", "1e999"]
EXTENSION_NAMES = [
    "toc", "attr_list", "md_in_html", "footnotes", "admonition", "pymdownx.snippets",
    "pymdownx.superfences", "pymdownx.b64", "pymdownx.details", "pymdownx.tabbed",
    "pymdownx.blocks.html", "markdown.extensions.toc", "this", "antigravity", "os",
    "webbrowser", "subprocess:run", "os:system", "pymdownx.snippets:SnippetExtension",
    "markdown.extensions.toc:TocExtension", "builtins:exec", "evil_local_ext",
    "pymdownx", "pymdownx.__init__", "pymdownx..snippets", "pymdownx.snippets.x",
    "material.extensions.preview", "mkdocs_click", "markdown_exec", "zensical.extensions.x",
    "", "~", "5",
]
SETTINGS: list[tuple[str, str]] = [
    ("pymdownx.snippets", "base_path: ['/']"),
    ("pymdownx.snippets", "base_path: ['..', '/etc', ../outside]"),
    ("pymdownx.snippets", "url_download: true"),
    ("pymdownx.snippets", "auto_append: [/etc/passwd, ../outside/secret.md, pipe.md]"),
    ("pymdownx.snippets", "restrict_base_path: false"),
    ("pymdownx.snippets", "check_paths: true"),
    ("pymdownx.snippets", "base_path: !relative $config_dir/../outside"),
    ("pymdownx.snippets:SnippetExtension", "url_download: true\n      base_path: ['/']"),
    ("pymdownx.b64", "base_path: /"),
    ("toc", "permalink: {tag}"),
    ("toc", "slugify: {tag}"),
    ("pymdownx.superfences", "custom_fences:\n        - {{name: m, class: m, format: {tag}}}"),
    ("subprocess:run", f"args: 'touch {MARKER}'\n      shell: true"),
    ("pymdownx.tabbed", "slugify: {tag}"),
]
PLUGINS = ["search", "macros", "blog", "redirects", "exclude", "autorefs", "mkdocstrings",
           "evil_plugin", "material/blog", "{macros: {module_name: ../outside/evil}}",
           "{macros: {include_yaml: [../outside/secret.yml, /etc/passwd]}}",
           "{redirects: {redirect_maps: {a.md: ../outside/secret.md}}}",
           "{exclude: {glob: ['*']}}"]
HOOKS = ["hooks.py", "../outside/hook.py", "/etc/passwd", "pipe.py", "zero.py", "docs"]
INHERITS = ["base.yml", "{outside}/secret.ini", "../outside/secret.ini", "link.yml",
            "mkdocs.yml", "pipe.yml", "zero.yml", "big.yml", "cycle-a.yml", "/etc/passwd"]

LINES = [
    f"--8<-- \"http://127.0.0.1:{PORT}/x.md\"",
    "--8<-- \"/etc/passwd\"",
    "--8<-- \"../outside/secret.md\"",
    "--8<-- \"../../outside/secret.md\"",
    "--8<-- \"pipe.md\"", "--8<-- \"zero.md\"", "--8<-- \"big.md\"", "--8<-- \"leak.md\"",
    "--8<-- \"docs/huge.md\"", "[x](huge.md#a)",
    "--8<-- \"docs/leak.md:1:3\"",
    "--8<--\n/etc/hostname\n../outside/secret.md\n--8<--",
    "[x](/etc/passwd)", "[x](../../../../../../etc/passwd#root)",
    "[x](../../outside/secret.md#deployment-keys)", "[x](../outside/secret.md#deployment)",
    "[x](leak.md#deployment-keys)", "[x](pipe.md#a)", "[x](zero.md#a)", "[x](big.md#a)",
    "[x](sub/secret.md#deployment-keys)", f"[x](http://127.0.0.1:{PORT}/)",
    f"![i](http://127.0.0.1:{PORT}/i.png)", "[x](file:///etc/passwd)", "[x](#nope)",
    "[ref]: ../../outside/secret.md#keys", "{% include \"../outside/secret.md\" %}",
    "{{ config }}", "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{% import 'os' as os %}", "::: os.system", "<div markdown>\n\n[y](#nope)\n\n</div>",
    "```text one line``` [z](#nope)", "# Heading {#deployment-keys}", "*x*{ #here }",
    "[^1]\n\n[^1]: [n](../../outside/secret.md)",
]


@dataclass
class Spec:
    """One hostile repository, as text with placeholders (``{M}``, ``{PORT}``...)."""

    config: list[str] = field(default_factory=list)  # top-level blocks of mkdocs.yml
    pages: dict[str, str] = field(default_factory=dict)
    record: bool = False
    fsmonitor: bool = False


def _laughs(depth: int, width: int) -> str:
    lines = ["  l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    for n in range(1, depth + 1):
        lines.append(f"  l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * width) + "]")
    return "extra:\n" + "\n".join(lines) + f"\nnav: *l{depth}"


@st.composite
def _extension(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        name, setting = draw(st.sampled_from(SETTINGS))
        tag = draw(st.sampled_from(TAGS))
        return f"  - {name}:\n      {setting.format(tag=tag)}"
    return f"  - {json.dumps(draw(st.sampled_from(EXTENSION_NAMES)))}"


@st.composite
def _block(draw: st.DrawFn, key: str) -> str:
    if key == "markdown_extensions":
        kind = draw(st.integers(0, 9))
        if kind == 0:
            return f"markdown_extensions: {draw(st.sampled_from(TAGS + SCALARS))}"
        items = draw(st.lists(_extension(), min_size=1, max_size=6))
        return "markdown_extensions:\n" + "\n".join(items)
    if key == "INHERIT":
        return f"INHERIT: {draw(st.sampled_from(INHERITS))}"
    if key == "docs_dir":
        return f"docs_dir: {draw(st.sampled_from(SCALARS + TAGS))}"
    if key == "plugins":
        items = draw(st.lists(st.sampled_from(PLUGINS), max_size=4))
        return "plugins:\n" + "".join(f"  - {p}\n" for p in items) if items else "plugins: []"
    if key == "hooks":
        items = draw(st.lists(st.sampled_from(HOOKS), min_size=1, max_size=3))
        return "hooks:\n" + "".join(f"  - {h}\n" for h in items)
    if key == "extra":
        kind = draw(st.integers(0, 4))
        if kind == 0:
            return _laughs(draw(st.integers(1, 9)), draw(st.integers(1, 10)))
        if kind == 1:
            return "extra: &me [*me]" if draw(st.booleans()) else "extra: &me {a: *me}"
        if kind == 2:
            return "extra: " + "x" * draw(st.integers(1, 300_000))
        if kind == 3:
            depth = draw(st.integers(1, 5000))
            return "extra: " + "[" * depth + "]" * depth
        return f"extra: {draw(st.sampled_from(TAGS))}"
    if key == "validation":
        return draw(st.sampled_from([
            "validation: warn", "validation: [1, 2]", "validation: {links: warn}",
            "validation:\n  links:\n    anchors: !!python/name:os.system",
            "validation:\n  anchors: info\n  not_found: ignore",
        ]))
    if key == "use_directory_urls":
        return f"use_directory_urls: {draw(st.sampled_from(SCALARS + TAGS))}"
    return f"{key}: {draw(st.sampled_from(TAGS + SCALARS))}"


KEYS = ["markdown_extensions", "INHERIT", "docs_dir", "plugins", "hooks", "extra",
        "validation", "use_directory_urls", "theme", "nav", "exclude_docs"]


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=len(KEYS)))
    config = ["site_name: hostile"] + [draw(_block(k)) for k in keys]
    pages = {}
    for name in draw(st.lists(st.sampled_from(["index.md", "guide.md", "sub2/deep.md"]),
                              min_size=1, max_size=3, unique=True)):
        lines = draw(st.lists(st.sampled_from(LINES), max_size=8))
        pages[name] = "# Page\n\n" + "\n\n".join(lines) + "\n"
    return Spec(config, pages, draw(st.booleans()), draw(st.booleans()))


# -- building one, and running atlas on it --------------------------------------------------


@dataclass
class Built:
    base: Path
    repo: Path
    outside: Path
    cache: Path
    marker: Path


def build(spec: Spec, base: Path, port: int) -> Built:
    """The repository ``spec`` describes, in ``base``, with its outside folder beside it,
    committed (all but the files git cannot hold) and then staged again for a commit."""
    if base.exists():
        shutil.rmtree(base)
    outside, repo, cache = base / "outside", base / "repo", base / "cache"
    for folder in (outside, repo, cache):
        folder.mkdir(parents=True)
    cache.chmod(0o700)
    marker = outside / "MARKER"
    marker_code = f"open({str(marker)!r}, 'w').close()\n"

    def fill(text: str) -> str:
        return (text.replace(MARKER, str(marker)).replace(PORT, str(port))
                .replace("{outside}", str(outside)))

    for name in ("secret.md", "secret.ini", "secret.yml"):
        (outside / name).write_text(f"# Deployment keys {SECRET}\n\n[k](gone-{SECRET}.md)\n")
    (outside / "hook.py").write_text(marker_code + "def on_page_markdown(m, **k):\n    return m\n")
    (outside / "evil.py").write_text(marker_code)
    (repo / "hooks.py").write_text(marker_code + "def on_page_markdown(m, **k):\n    return m\n")
    (repo / "evil_local_ext.py").write_text(marker_code + "def makeExtension(**k):\n    pass\n")
    (repo / "main.py").write_text(marker_code)  # the macros plugin's default module
    (repo / "base.yml").write_text("site_name: base\nmarkdown_extensions: [attr_list]\n")
    (repo / "cycle-a.yml").write_text("INHERIT: cycle-b.yml\n")
    (repo / "cycle-b.yml").write_text("INHERIT: cycle-a.yml\n")
    (repo / "link.yml").symlink_to(outside / "secret.yml")
    (repo / "zero.yml").symlink_to("/dev/zero")
    os.mkfifo(repo / "pipe.yml")
    os.mkfifo(repo / "pipe.py")
    (repo / "zero.py").symlink_to("/dev/zero")
    with open(repo / "big.yml", "wb") as f:
        f.truncate(3 << 30)  # sparse: gigabytes that take no disk
    docs = repo / "docs"
    docs.mkdir()
    (docs / "leak.md").symlink_to(outside / "secret.md")
    (docs / "zero.md").symlink_to("/dev/zero")
    os.mkfifo(docs / "pipe.md")
    with open(docs / "big.md", "wb") as f:
        f.truncate(80 << 20)  # committed: larger than any page, small enough for git
    with open(docs / "huge.md", "wb") as f:
        f.truncate(3 << 30)  # not committed (.git/info/exclude)
    (docs / "sub").symlink_to(outside, target_is_directory=True)
    site(repo, text=fill("\n".join(spec.config) + "\n"),
         pages={name: fill(text) for name, text in spec.pages.items()})
    if spec.record:
        record = repo / "rec"
        (record / "projects" / "web").mkdir(parents=True)
        (record / "atlas.yaml").write_text("schema_version: 1\nprojects: [web]\n"
                                           "default_project: web\n")
        (record / "notes.md").write_text(fill("# Notes\n\n" + "\n\n".join(LINES) + "\n"))
        (record / "leak.md").symlink_to(outside / "secret.md")
    env = git_env()
    git(repo, "init", "-q", env=env)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("big.yml\ndocs/huge.md\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "--no-verify", "-m", "hostile", env=env)
    for name, text in spec.pages.items():  # the commit being made changes the pages
        (docs / name).write_text(fill(text) + "\nMore.\n")
    git(repo, "add", "-A", env=env)
    if spec.fsmonitor:  # a program the repository's git config names (set last: git ran)
        git(repo, "config", "core.fsmonitor", f"touch {marker}; false", env=env)
    return Built(base, repo, outside, cache, marker)


def audit_folder(base: Path) -> Path:
    folder = base / "audit"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(AUDIT)
    return folder


def watched_env(built: Built, audit: Path, log: Path) -> dict[str, str]:
    """The environment that has every atlas started in it watched, logging to ``log``."""
    readable = [str(built.repo), str(built.cache), sys.prefix, sys.base_prefix,
                str(Path(__file__).resolve().parents[2]), str(audit), "/dev/null",
                "/proc/self", f"/proc/{os.getpid()}", "/usr/lib", "/usr/share/zoneinfo",
                "/etc/localtime"]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ATLAS_", "GIT_", "PYTHON"))}
    path = os.pathsep.join(filter(None, [str(audit), os.environ.get("PYTHONPATH", "")]))
    env.update(PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1", HOSTILE_AUDIT_LOG=str(log),
               HOSTILE_MEMORY=str(MEMORY), XDG_CACHE_HOME=str(built.cache),
               HOSTILE_WATCHED=os.pathsep.join([str(built.repo), str(built.outside)]),
               HOSTILE_READABLE=os.pathsep.join(readable), HOME=str(built.cache),
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    return env


def events(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line]


def run_watched(argv: list[str], built: Built, audit: Path) -> Watch:
    """``atlas`` with ``argv`` run in the repository, watched (see the module's docstring)."""
    log = built.base / f"audit-{os.getpid()}.log"
    log.unlink(missing_ok=True)
    env = watched_env(built, audit, log)
    command = atlas_command(*argv)
    try:
        proc = subprocess.run(command, cwd=built.repo, env=env, capture_output=True,
                              text=True, timeout=SECONDS, stdin=subprocess.DEVNULL)
        result = Watch(argv, proc.returncode, proc.stdout, proc.stderr, [])
    except subprocess.TimeoutExpired as exc:
        result = Watch(argv, -1, str(exc.stdout or ""), str(exc.stderr or ""), [], True)
    result.events = events(log)
    return result


COMMANDS: list[list[str]] = [
    ["check", "--links-only", "--json"],
    ["check", "--links-only", "--staged", "--json"],
    ["check", "--links-only", "--json", "--mkdocs", "mkdocs.yml", "docs"],
    ["check", "--versions-only", "--json"],
    ["check", "--versions-only", "--staged", "--json"],
    ["check", "--staged", "--json"],
]


def problems(watch: Watch, built: Built, listener: Listener) -> list[str]:
    """What ``watch`` did that a check of a hostile repository must never do."""
    out: list[str] = []
    where = " ".join(watch.argv)
    if watch.timed_out:
        out.append(f"{where}: ran past {SECONDS} s")
    elif watch.returncode not in (0, 1):
        out.append(f"{where}: exit {watch.returncode}: {watch.stderr[-800:]}")
    if "Traceback" in watch.stderr or "MemoryError" in watch.stderr:
        out.append(f"{where}: {watch.stderr[-800:]}")
    if not watch.timed_out and watch.returncode in (0, 1):
        try:
            data: Any = json.loads(watch.stdout)
            assert isinstance(data, dict) and isinstance(data["findings"], list)
        except (ValueError, AssertionError, KeyError):
            out.append(f"{where}: stdout is not one JSON document: {watch.stdout[:300]}")
    if SECRET in watch.stdout + watch.stderr:
        out.append(f"{where}: quoted a file outside the repository")
    allowed = (str(built.cache), "/dev/null")
    for event in watch.events:
        kind = event[0]
        if kind == "write" and not event[1].startswith(allowed):
            out.append(f"{where}: wrote {event[1]}")
        elif kind == "write-relative" and os.path.lexists(event[1]) \
                and not event[1].startswith(allowed):
            out.append(f"{where}: wrote {event[1]}")
        elif kind == "read" and event[1].startswith((str(built.outside), "/etc/", "/dev/",
                                                     "/home", "/root")):
            out.append(f"{where}: opened {event[1]}")
        elif kind == "process" and event[1:] != ["git"]:
            out.append(f"{where}: started {event[1:]}")
        elif kind in ("network", "code"):
            out.append(f"{where}: {kind} {event[1:]}")
    if built.marker.exists():
        out.append(f"{where}: the marker was created")
    if listener.connections:
        out.append(f"{where}: {listener.connections} connections to the listener")
    return out
