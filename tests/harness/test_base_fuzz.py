"""Whatever a harness (or anyone) sends as a tool call, reading which files it would edit
never fails and gives absolute paths only: fuzzed."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from support.hookevents import events

from atlas_files.harness import base
from atlas_files.harness.registry import NAMES, load


@given(harness=st.sampled_from(NAMES), event=events)
def test_edit_targets_never_fails_and_gives_absolute_paths(harness: str,
                                                           event: dict[str, Any]) -> None:
    for path in base.edit_targets(load(harness), event):
        assert os.path.isabs(path) and "\0" not in path
