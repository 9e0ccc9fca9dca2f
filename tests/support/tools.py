"""Commands some tests run that a developer's machine may lack: the pre-commit framework,
openssl, the installed `atlas` console script. Where one is missing its tests skip, with
the reason; under ATLAS_REQUIRE_TOOLS (``.ci/run`` sets it and installs them) they run,
and fail, instead."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REQUIRE = "ATLAS_REQUIRE_TOOLS"


def needs(command: str | Path, reason: str) -> pytest.MarkDecorator:
    """Skip unless ``command`` (a name on PATH, or a path) is there, or it must be."""
    found = Path(command).exists() if isinstance(command, Path) else \
        shutil.which(command) is not None
    return pytest.mark.skipif(not found and not os.environ.get(REQUIRE), reason=reason)
