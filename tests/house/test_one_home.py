"""Each fact of the record lives in one module (issue 41): a second home fails here.

A fact copied into a second module drifts from the first (the guard refused what the
commit check let through; two readers of ``NAME@vN`` disagreed on ``plan@v١``), so each
rule below scans every module of the package for a second spelling of one fact, and
names its one home. Each detector is also run on a planted copy of the fact, so that a
detector that stopped finding anything fails too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

import atlas_files

PACKAGE = Path(atlas_files.__file__).parent
Detector = Callable[[ast.Module], Iterator[int]]


def _modules() -> dict[str, ast.Module]:
    return {p.relative_to(PACKAGE).as_posix(): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _docstrings(tree: ast.Module) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _texts(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Every string of code (not a docstring), an f-string's values written ``{}``."""
    skip = _docstrings(tree)
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                inner.add(id(value))
                if isinstance(value, ast.Constant):
                    parts.append(str(value.value))
                else:
                    parts.append("{}")
                    if isinstance(value, ast.FormattedValue) and value.format_spec is not None:
                        inner.update(id(v) for v in ast.walk(value.format_spec))
            yield node.lineno, "".join(parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in skip and id(node) not in inner:
            yield node.lineno, node.value


def _names_in(node: ast.AST) -> set[str]:
    """The names and attribute names used anywhere under ``node``."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


def _strings_in(node: ast.AST) -> set[str]:
    return {s.value for s in ast.walk(node)
            if isinstance(s, ast.Constant) and isinstance(s.value, str)}


# -- the detectors: each yields the line of each spelling of its fact --------------------------


_VERSION_NAME = re.compile(r"\\\.v[(\[\\].*\\\.md|\.v\{\}.*\.md")


def version_file_name(tree: ast.Module) -> Iterator[int]:
    """A pattern or format of ``<name>.v<number>.md``."""
    for line, text in _texts(tree):
        if _VERSION_NAME.search(text):
            yield line


def entry_file_name(tree: ast.Module) -> Iterator[int]:
    """The entry id pattern made into a file name's (``ENTRY_ID_PATTERN`` + ``.md``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and "ENTRY_ID_PATTERN" in _names_in(node) \
                and any(".md" in s for s in _strings_in(node)):
            yield node.lineno
        elif isinstance(node, ast.JoinedStr) and "ENTRY_ID_PATTERN" in _names_in(node) \
                and any(".md" in s for s in _strings_in(node)):
            yield node.lineno


_GENERATION_NAME = re.compile(r"g\{\}\.json|g\(.*\.json")


def generation_file_name(tree: ast.Module) -> Iterator[int]:
    """A pattern or format of a lease generation's ``g<number>.json``, or the test of a
    name by its ``g`` and its ``.json``."""
    for line, text in _texts(tree):
        if _GENERATION_NAME.search(text):
            yield line
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and {"g", ".json"} <= _strings_in(node):
            yield node.lineno


_SPLITTERS = {"partition", "rpartition", "split", "rsplit", "find", "index"}
_REF_PATTERN = re.compile(r"@v[(\[\\]")


def version_ref_split(tree: ast.Module) -> Iterator[int]:
    """``NAME@vN`` taken apart: split at ``@v``, or matched by a pattern."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _SPLITTERS and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == "@v":
            yield node.lineno
    for line, text in _texts(tree):
        if _REF_PATTERN.search(text):
            yield line


_ACTING = {"ATLAS_AS", "ATLAS_RECORD", "ATLAS_PROJECT"}
_GIT_MOVERS = {"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
               "GIT_CEILING_DIRECTORIES"}


def _is_acting(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value in _ACTING


def environment_read(tree: ast.Module) -> Iterator[int]:
    """``ATLAS_AS``, ``ATLAS_RECORD`` or ``ATLAS_PROJECT`` named in code (read, set or
    handed to click), or a list of git's variables that move its repository."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(map(_is_acting, node.args)):
            yield node.lineno
        elif isinstance(node, ast.Call) and any(_is_acting(k.value) for k in node.keywords):
            yield node.lineno
        elif isinstance(node, ast.Subscript) and _is_acting(node.slice):
            yield node.lineno
        elif isinstance(node, ast.Compare) and any(map(_is_acting, [node.left,
                                                                    *node.comparators])):
            yield node.lineno
        elif isinstance(node, ast.Dict) and any(map(_is_acting, node.keys)):
            yield node.lineno
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and (
                len(_GIT_MOVERS & _strings_in(node)) >= 2 or any(map(_is_acting, node.elts))):
            yield node.lineno


def git_walk(tree: ast.Module) -> Iterator[int]:
    """A loop up the folders that looks for a ``.git``."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.While, ast.For)) and ".git" in _strings_in(node) \
                and _names_in(node) & {"parent", "parents", "dirname"}:
            yield node.lineno


_FILE_TESTS = {"is_file", "isfile", "exists", "lexists", "lstat", "is_dir"}


def record_test(tree: ast.Module) -> Iterator[int]:
    """A folder tested for an atlas.yaml: whether a record is there."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _names_in(node.func) & _FILE_TESTS \
                and ("CONFIG_NAME" in _names_in(node) or "atlas.yaml" in _strings_in(node)):
            yield node.lineno


_TOP = {"PROJECTS", "LEASES", "RECEIPTS", "SESSIONS", "TELEMETRY"}
_NAME_TESTS = {"VERSION_FILE", "version_parts", "is_entry_file", "generation_number",
               "TASK_FILE", "VERSION_FILE_RE"}


def _first_part_test(node: ast.Compare) -> bool:
    left = node.left
    if not (isinstance(left, ast.Subscript) and isinstance(left.slice, ast.Constant)
            and left.slice.value == 0):
        return False
    for c in node.comparators:
        if isinstance(c, ast.Attribute) and c.attr in _TOP:
            return True
        if isinstance(c, ast.Constant) and isinstance(c.value, str) \
                and c.value.upper() in _TOP:
            return True
    return False


def record_file_kind(tree: ast.Module) -> Iterator[int]:
    """What kind of record file a path is, judged by hand: a function that tests a path's
    first folder (``parts[0] == "projects"``) and a file name's rule together."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            tests = [c for c in ast.walk(node) if isinstance(c, ast.Compare)
                     and _first_part_test(c)]
            if tests and _names_in(node) & _NAME_TESTS:
                yield node.lineno


# Functions of a home that nothing else defines again.
_HOME_FUNCTIONS = {
    "facts/layout.py": {"version_filename", "version_parts", "entry_filename",
                        "is_entry_file", "generation_filename", "generation_number",
                        "draft_filename", "draft_version"},
    "facts/names.py": {"split_version_ref"},
    "storage/worktree.py": {"holds_git"},
    "storage/record.py": {"holds_record", "named_in_git"},
}


def _defined(tree: ast.Module, names: set[str]) -> Iterator[int]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            yield node.lineno


class Fact(NamedTuple):
    what: str
    home: str
    detector: Detector
    planted: str  # a copy of the fact, as a second module might write it


FACTS = [
    Fact("the version file name", "facts/layout.py", version_file_name,
         'import re\nV = re.compile(r"(?P<name>.+)\\.v(?P<n>[0-9]+)\\.md")\n'
         'def f(name: str, n: int) -> str:\n    return f"{name}.v{n:04d}.md"\n'),
    Fact("the entry file name", "facts/layout.py", entry_file_name,
         'import re\nfrom atlas_files.facts.names import ENTRY_ID_PATTERN\n'
         'E = re.compile(ENTRY_ID_PATTERN[:-1] + r"\\.md$")\n'),
    Fact("the lease generation file name", "facts/layout.py", generation_file_name,
         'def name(n: int) -> str:\n    return f"g{n:08d}.json"\n'
         'def newest(names: list[str]) -> list[str]:\n'
         '    return [n for n in names if n.startswith("g") and n.endswith(".json")]\n'),
    Fact("NAME@vN parsing", "facts/names.py", version_ref_split,
         'def split(ref: str) -> tuple[str, str]:\n'
         '    name, _, number = ref.partition("@v")\n    return name, number\n'),
    Fact("who is acting, the record and the project, and git's variables",
         "facts/environment.py", environment_read,
         'import os\nwho = os.environ.get("ATLAS_AS")\n'
         'MOVED = ("GIT_DIR", "GIT_WORK_TREE")\n'),
    Fact("the walk up the folders for a .git", "storage/worktree.py", git_walk,
         'import os\ndef root(folder: str) -> str | None:\n    while True:\n'
         '        if os.path.lexists(os.path.join(folder, ".git")):\n'
         '            return folder\n        parent = os.path.dirname(folder)\n'
         '        if parent == folder:\n            return None\n        folder = parent\n'),
    Fact("whether a folder is a record", "storage/record.py", record_test,
         'from pathlib import Path\nfrom atlas_files.facts import layout\n'
         'def found(folder: Path) -> bool:\n'
         '    return (folder / layout.CONFIG_NAME).is_file()\n'),
    Fact("what kind of record file a path is", "facts/layout.py", record_file_kind,
         'from atlas_files.facts import layout\n'
         'def kind(parts: list[str]) -> str | None:\n'
         '    if parts[0] == "projects" and layout.VERSION_FILE.fullmatch(parts[-1]):\n'
         '        return "version"\n    return None\n'),
]


def _elsewhere(home: str, find: Detector) -> dict[str, list[int]]:
    """The modules but ``home`` where ``find`` finds something, with the lines."""
    found = {path: sorted(set(find(tree))) for path, tree in MODULES.items() if path != home}
    return {path: lines for path, lines in found.items() if lines}


@pytest.mark.parametrize("fact", FACTS, ids=[f.what for f in FACTS])
def test_each_fact_is_spelt_only_in_its_home(fact: Fact) -> None:
    assert fact.home in MODULES, f"{fact.home} is gone: move the fact's home here too"
    found = _elsewhere(fact.home, fact.detector)
    assert not found, (f"{fact.what} is spelt again outside atlas_files/{fact.home} (at "
                       f"{found}): use the home's name for it")


@pytest.mark.parametrize("fact", FACTS, ids=[f.what for f in FACTS])
def test_each_detector_finds_a_planted_copy_of_its_fact(fact: Fact) -> None:
    assert list(fact.detector(ast.parse(fact.planted)))


@pytest.mark.parametrize("home", sorted(_HOME_FUNCTIONS))
def test_no_module_defines_a_homes_function_again(home: str) -> None:
    names = _HOME_FUNCTIONS[home]
    assert set(_defined(MODULES[home], names)), f"{home} no longer defines {names}"
    again = _elsewhere(home, lambda tree: _defined(tree, names))
    assert not again, f"{again} define one of {names} again: import it from {home}"
