"""The table of harnesses atlas's hooks speak to: setup, the session hooks, the guard,
news and the Claude Code plugin's hooks are held to it (tests/house/test_harness_table.py).

Each name is the module of the same name beside this one, loaded only when asked for: a
hook pays for its own harness's module alone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from atlas_files.harness.base import Harness

# name (as in `--hook NAME` and `atlas setup NAME`) -> the product, as its docs name it.
HARNESSES = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI",
             "cursor": "Cursor"}
NAMES = tuple(HARNESSES)
CHOICES = "|".join(NAMES)  # as a command's help shows the choice


def load(name: str) -> Harness:
    """The harness ``name`` (one of ``NAMES``; KeyError for any other)."""
    if name not in HARNESSES:
        raise KeyError(name)
    harness: Harness = importlib.import_module(f"atlas_files.harness.{name}").HARNESS
    return harness


def every() -> tuple[Harness, ...]:
    """Every harness of the table, in its order."""
    return tuple(load(name) for name in NAMES)
