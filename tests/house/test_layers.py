"""The house's layers: imports only point down, and the CLI's JSON is the API's."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import atlas_files
from atlas_files import layers
from atlas_files.cli.app import COMMANDS, load_command

PACKAGE = Path(atlas_files.__file__).parent



def _modules() -> dict[str, Path]:
    return layers.modules()


def _imports(module: str, path: Path, known: set[str]) -> Iterator[str]:
    """Every atlas_files module ``module`` imports, anywhere in its body (type-only
    imports too: a cycle through them is still a knot in the design)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    yield sub
                elif base in known:
                    yield base


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {m: {t for t in _imports(m, p, known) if t != m} for m, p in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _layer(module: str) -> int:
    try:
        return layers.layer_of(module)
    except LookupError as exc:
        raise AssertionError(str(exc)) from None


def test_the_import_graph_has_no_cycle() -> None:
    assert _cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_only_point_down() -> None:
    upward = []
    for module, targets in import_graph().items():
        if module == "atlas_files":
            continue
        for target in targets:
            if target != "atlas_files" and _layer(target) > _layer(module):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_the_library_never_imports_click() -> None:
    for module, path in _modules().items():
        if module == "atlas_files" or _layer(module) == len(layers.LAYERS) - 1:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                 for a in n.names}
        names |= {(n.module or "").split(".")[0] for n in ast.walk(tree)
                  if isinstance(n, ast.ImportFrom)}
        assert "click" not in names, module


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_in_the_table_loads(name: str) -> None:
    assert load_command(name).name is not None


def test_a_typo_in_the_command_table_is_loud(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COMMANDS, "ls", "atlas_files.cli.core:lss")
    with pytest.raises(RuntimeError, match="not a click command"):
        load_command("ls")
    monkeypatch.setitem(COMMANDS, "ls", "atlas_files.cli.coore:ls")
    with pytest.raises(ModuleNotFoundError):
        load_command("ls")


def test_every_module_says_what_it_is() -> None:
    assert [m for m, p in _modules().items() if not layers.summary(p)] == []


def test_the_layer_table_in_the_docs_is_generated_from_the_layers() -> None:
    doc = (PACKAGE.parent / "docs" / "index.md").read_text(encoding="utf-8")
    assert layers.render() in doc, (
        "docs/index.md's table of the code is out of date: run "
        "`python -m atlas_files.layers --write docs/index.md`")


def test_no_module_is_loose_at_the_top() -> None:
    """A new module goes into the folder of its layer, not beside the folders."""
    loose = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in layers.LOOSE)
    assert loose == [], f"put {loose} into the folder of its layer (atlas_files/layers.py)"


def test_every_top_level_package_is_a_layer_s_folder() -> None:
    named = {top for layer in layers.LAYERS for top in layer.tops}
    folders = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
    assert [f for f in folders if f not in named] == []


def test_package_faces_only_hand_names_on() -> None:
    """A package's __init__.py holds no function or class and at most 40 lines, so a leaf
    of the package imports without running the package's logic."""
    heavy = []
    for face in sorted(PACKAGE.rglob("__init__.py")):
        text = face.read_text(encoding="utf-8")
        defs = [n for n in ast.parse(text).body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
        if defs or len(text.splitlines()) > 40:
            heavy.append(str(face.relative_to(PACKAGE)))
    assert heavy == []
