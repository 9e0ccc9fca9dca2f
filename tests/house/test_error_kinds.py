"""An error's `kind` is one fact, its class's: for every AtlasError subclass in the package
the CLI's error document (`--json`) and an MCP tool's `_meta` are the same document, with a
kind DESIGN.md allows and the class's exit code."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any

import pytest
from support.mcp_client import call, seed
from support.runner import run_atlas

import atlas_files
from atlas_files.api import core
from atlas_files.facts.errors import KINDS, AtlasError
from atlas_files.mcp.results import ERROR_META


def every_error_class() -> list[type[AtlasError]]:
    """AtlasError and its subclasses, every module of the package imported first."""
    for module in pkgutil.walk_packages(atlas_files.__path__, "atlas_files."):
        importlib.import_module(module.name)
    found: dict[type[AtlasError], None] = {}
    todo: list[type[AtlasError]] = [AtlasError]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("atlas_files") and cls not in found:
            found[cls] = None
            todo += cls.__subclasses__()
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


CLASSES = every_error_class()


def test_every_error_class_is_found() -> None:
    names = {cls.__name__ for cls in CLASSES}
    assert {"AtlasError", "DamagedFile", "GitFailed", "RowNotWritten", "SyncRefused",
            "UnsafeContent", "NotAccepted", "Busy", "Unreadable"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_failure_has_the_same_kind_from_the_cli_and_from_mcp(
        cls: type[AtlasError], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = seed(tmp_path / "rec").root

    def fails(*args: Any, **kwargs: Any) -> Any:
        # Made as the base class makes it: a subclass's own arguments (the feed items of
        # NotMarked) are beside the point here, which is its kind.
        exc = cls.__new__(cls)
        AtlasError.__init__(exc, f"a {cls.__name__} for the test", hint="what to do next")
        raise exc

    monkeypatch.setattr(core, "get", fails)  # the one library call both front ends make
    code, out, _ = run_atlas("get", "plan", "--json", record=root, identity="alice")
    from_cli = json.loads(out)
    result = call(root, "get", {"name": "plan"})
    assert result.is_error
    assert (result.meta or {})[ERROR_META] == from_cli  # the CLI's document, whole
    assert from_cli["error"]["kind"] == cls.kind and cls.kind in KINDS
    assert code == from_cli["error"]["exit_code"] == cls.exit_code

