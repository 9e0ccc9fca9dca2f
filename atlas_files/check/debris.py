"""Crash debris: temp files (``.atlas-tmp-*``) that no write in flight can still own.

A temp file younger than an hour may belong to a write happening right now (on this
machine or another one sharing the folder), so it is never reported or removed; an older
one is debris. Readers ignore temp files either way, so debris is a warning, and
``--fix`` removes it.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from atlas_files.check.context import CheckRun
from atlas_files.storage import fsio

MAX_AGE_S = fsio.FOREIGN_TEMP_AGE_S


def check_temp(ctx: CheckRun, path: Path) -> None:
    try:
        age = time.time() - path.lstat().st_mtime
    except OSError:
        return  # gone already: the write it belonged to finished
    if age <= MAX_AGE_S:
        return
    if ctx.fix:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            ctx.report.fixed.append(f"removed crash debris {ctx.report.show(path)}")
        return
    hours = age / 3600
    ctx.report.add(path, 1, "ATL030",
                   f"temp file left by a crashed write {hours:.0f} hour"
                   f"{'' if round(hours) == 1 else 's'} ago")
