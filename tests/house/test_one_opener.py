"""One opener (issue 39): every file atlas reads or writes in a work tree or a record
goes through atlas_files/storage/fsio.py, which follows no symlink, opens plain files only and
reads within a bound. A committed link at a cache's name (`.atlas-cache/sync/git-version
-> ~/.bashrc`) made a clone's first sync write outside because one module opened its own
files with Path.write_text.

The scan reads the source of every module (an AST walk, so nothing is run) and lists each
call that opens, reads, writes or touches a file by path: open(), os.open, io.open,
os.utime, os.truncate, os.mkfifo, and the Path methods read_text, read_bytes, write_text,
write_bytes, open and touch. Each one outside fsio must be in ALLOWED, keyed by module,
function and call, with the reason it is no work-tree or record file, or why it is held
to the same rules by other means. A new one fails until it goes through fsio or is
allowed here with its reason; an entry that no longer matches anything fails too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import atlas_files

PACKAGE = Path(atlas_files.__file__).parent
CALLS = {"open", "os.open", "io.open", "os.utime", "os.truncate", "os.mkfifo"}
METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "open", "touch"}
# Objects whose methods of those names are atlas's own readers, not pathlib's.
OURS = {"os", "io", "fsio", "jsonfile", "Worker"}

GIT = "git's own files in the git dir (never checked out from a commit), read bounded"
USER = ("the user's private cache or config folder (usercache/privatepath check it is "
        "the user's own, mode 0700), never the work tree")
OWN_NOFOLLOW = ("its own descriptor-relative opener with O_NOFOLLOW | O_NONBLOCK and a "
                "plain-file check, kept for speed on a hot path (a bounded prefix read)")
PROBE = ("a scratch file the volume probe made itself, O_CREAT | O_EXCL or in a folder it "
         "made (mkdtemp), never a name a commit can hold")
PACKAGE_DATA = "a file of the installed package itself (schemas, site template)"

ALLOWED: dict[tuple[str, str, str], str] = {
    ("storage/bodies.py", "read_file", "os.open"): "the file the writer named with -f, followed on "
    "purpose (the writer chose it; a pipe such as -f <(cmd) is waited on), read bounded",
    ("check/validators.py", "load", ".read_text"): PACKAGE_DATA,
    ("linkcheck/sitetheme.py", "_theme_dirs", "open"): "an installed theme's own "
    "mkdocs_theme.yml, found through its entry point in site-packages, read bounded",
    ("fast/output.py", "quiet_broken_pipe", "os.open"): "os.devnull",
    ("server/watching.py", "local", "open"): "/proc/self/mountinfo, the kernel's own list "
    "of mounts, read by the command server",
    ("cli/demo/play.py", "run_fresh", ".write_text"): "the demo's own marker in the "
    "folder `atlas demo` made (never a record it did not make)",
    ("cli/demo/check.py", "scene", ".write_bytes"): "the demo record `atlas demo` made "
    "itself a moment before, edited by hand on purpose to show the check",
    ("cli/demo/check.py", "scene", ".read_bytes"): "the demo record `atlas demo` made",
    ("linkcheck/filesources.py", "DiskSource._open", "os.open"): "the links check's source reader: "
    "O_NOFOLLOW | O_NONBLOCK, plain files only, held inside the checked repository "
    "(linkcheck/boundary.py), bounded by its reader",
    ("storage/gitcmd.py", "_read", "open"): GIT + " (the planted-repository boundary is issue 39 "
    "item 2's)",
    ("protocol/gitrefs.py", "git_dirs", "open"): GIT + " (a .git file's gitdir: line; the "
    "planted-repository boundary is issue 39 item 2's)",
    ("harness/base.py", "export_to_shell", "open"): "the file the harness names in "
    "CLAUDE_ENV_FILE/CODEX_ENV_FILE for its agent's shell, appended to on purpose",
    ("layers.py", "deferred_imports", ".read_text"): "a developer tool over atlas's own source",
    ("layers.py", "summary", ".read_text"): "a developer tool over atlas's own source",
    ("layers.py", "write", ".read_text"): "a developer tool over atlas's own docs",
    ("layers.py", "write", ".write_text"): "a developer tool over atlas's own docs",
    ("linkcheck/sitemacros.py", "cap_memory", "open"): "/proc/self/statm",
    ("mcp/limits.py", "claim_stdio", "os.open"): "os.devnull",
    ("mcp/tokens.py", "read_private", "os.open"): USER + "; O_NOFOLLOW",
    ("mcp/tokens.py", "locked", "os.open"): USER,
    ("mcp/tokens.py", "write_private", "os.open"): USER + "; O_EXCL temp file",
    ("storage/ownfiles.py", "read_small", "open"): "a file the person named as their own (checked "
    "by ownfiles: owned by them, not writable by others), read bounded",
    ("protocol/pathleases.py", "_peek", "os.open"): OWN_NOFOLLOW + "; the full read is fsio's",
    ("protocol/pathleases.py", "_load", "open"): USER,
    ("protocol/pathleases.py", "read", "os.open"): "a folder (O_DIRECTORY), listed, no file opened",
    ("storage/schemas.py", "load", ".read_text"): PACKAGE_DATA,
    ("search/index.py", "_rebuild", "os.open"): "the index's own temp file, just made by "
    "sqlite in a folder walked through Record.path, opened to fsync it",
    ("search/store.py", "_edited", "os.open"): "a folder (O_DIRECTORY), for stats that "
    "follow no symlink; no file opened",
    ("server/serve.py", "CodeStamp.changed", "os.open"): "a folder of atlas's installed "
    "code (O_DIRECTORY), for stats",
    ("server/serve.py", "_own_file", "os.open"): USER + " (the server's runtime folder); "
    "O_NOFOLLOW | O_NONBLOCK",
    ("server/wire.py", "open_log", "os.open"): USER + " (the server's log); O_NOFOLLOW",
    ("server/worker.py", "_streams", "open"): "the worker's own standard streams (fds)",
    ("sitegen/docs.py", "render_config", ".read_text"): PACKAGE_DATA,
    ("sitegen/engines.py", "verify", ".read_bytes"): "the search index the site engine "
    "just wrote into the output folder the site writer made",
    ("sitegen/files.py", "Writer._open_dir", "os.open"): "the site writer's own "
    "descriptor-walking opener of its output folder (O_NOFOLLOW)",
    ("sitegen/files.py", "Writer.read", "os.open"): "the site writer's own opener "
    "(O_NOFOLLOW, relative to a held folder)",
    ("sitegen/files.py", "Writer.replace", "os.open"): "the site writer's own temp file "
    "(O_CREAT | O_EXCL | O_NOFOLLOW in a held folder)",
    ("sitegen/files.py", "Writer.copy_tree", ".read_bytes"): PACKAGE_DATA + " (assets)",
    ("sitegen/reading.py", "read_version", "os.open"): "the site's version reader: "
    "O_NOFOLLOW | O_NONBLOCK, plain files only, bounded (as fsio.read_with_stat, plus a "
    "body cut for a huge version)",
    ("sitegen/zensical_engine.py", "write_config", ".read_text"): "the mkdocs.yml the site "
    "generator itself wrote a moment before into its own build folder",
    ("sync/gitdir.py", "_key", "open"): GIT + " and the user's git config files, read "
    "bounded (1 MiB) to see whether they include others",
    ("sync/repo.py", "read_facts", ".read_text"): GIT + " (HEAD)",
    ("sync/repo.py", "_url_in_file", ".read_text"): GIT + " (config)",
    ("sync/repo.py", "_read_refs", ".read_bytes"): GIT + " (a loose ref)",
    ("sync/repo.py", "_packed_refs", ".read_bytes"): GIT + " (packed-refs)",
    ("protocol/tasks.py", "_CacheFile.load", "open"): USER,
    ("storage/usercache.py", "write_json", "open"): USER,
    ("storage/volclock.py", "_sample", "os.open"): PROBE,
    ("protocol/volume.py", "mount_of", "open"): "/proc/self/mountinfo",
    ("protocol/volume.py", "_write", "os.open"): PROBE,
    ("protocol/volume.py", "exclusive_create", ".read_bytes"): PROBE,
    ("protocol/volume.py", "_row_reader.run", "open"): PROBE,
    ("protocol/volume.py", "folder_fsync", "os.open"): PROBE + " (a folder)",
    ("protocol/volume.py", "_lock_holder.run", "os.open"): PROBE,
    ("protocol/volume.py", "_lock_contender.run", "os.open"): PROBE,
    ("storage/yamlcache.py", "_read", "open"): USER,
}


def opens(source: str) -> list[tuple[str, str, int]]:
    """(enclosing function, call, line) of each call in ``source`` that opens a file."""
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, [*scope, child.name])
                continue
            if isinstance(child, ast.Call):
                call = _call(child.func)
                if call is not None:
                    found.append((".".join(scope) or "<module>", call, child.lineno))
            visit(child, scope)

    visit(ast.parse(source), [])
    return found


def _call(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return "open" if func.id == "open" else None
    if not isinstance(func, ast.Attribute):
        return None
    base = ast.unparse(func.value)
    if f"{base}.{func.attr}" in CALLS:
        return f"{base}.{func.attr}"
    if func.attr in METHODS and base not in OURS:
        return f".{func.attr}"
    return None


def scan() -> dict[tuple[str, str, str], list[int]]:
    seen: dict[tuple[str, str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == "storage/fsio.py":
            continue
        for scope, call, line in opens(path.read_text(encoding="utf-8")):
            seen.setdefault((module, scope, call), []).append(line)
    return seen


def test_every_file_is_opened_through_fsio_or_allowed_with_its_reason() -> None:
    seen = scan()
    new = [f"atlas_files/{m}:{lines[0]} {scope}: {call}"
           for (m, scope, call), lines in seen.items() if (m, scope, call) not in ALLOWED]
    assert new == [], ("open these through atlas_files/storage/fsio.py (read_nofollow, read_start, "
                       "read_cache, replace_atomic, keep_cache, publish_exclusive, touch, "
                       "locked), or add each to ALLOWED with the reason it is no work-tree "
                       "or record file:\n" + "\n".join(new))
    stale = sorted(key for key in ALLOWED if key not in seen)
    assert stale == [], f"ALLOWED names calls that are gone: {stale}"


def test_the_scan_sees_each_way_of_opening() -> None:
    """The scan itself: each way a module could open a work-tree file is found, and
    fsio's own and the JSON reader's are not."""
    source = (
        "import os\nfrom pathlib import Path\n"
        "def f(p: Path) -> None:\n"
        "    open(p)\n    os.open(p, 0)\n    os.utime(p)\n    p.read_text()\n"
        "    p.read_bytes()\n    p.write_text('x')\n    p.write_bytes(b'')\n"
        "    p.open()\n    p.touch()\n    (p / 'x').write_text('y')\n"
        "    fsio.read_nofollow(p)\n    jsonfile.read_bytes(p)\n    fsio.touch(p)\n")
    calls = [call for _, call, _ in opens(source)]
    assert calls == ["open", "os.open", "os.utime", ".read_text", ".read_bytes",
                     ".write_text", ".write_bytes", ".open", ".touch", ".write_text"]
    # Line numbers were checked against a real module: the sync state's opener is fsio.
    state = (PACKAGE / "sync" / "state.py").read_text(encoding="utf-8")
    assert opens(state) == []
