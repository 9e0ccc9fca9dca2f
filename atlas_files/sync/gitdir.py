"""Whether git's automatic tidying could find work, read from git's own files: the same
sample git's own test takes, so a synced write runs no `git maintenance run --auto` child
(about 3 ms) after a commit that leaves nothing to tidy.
"""

from __future__ import annotations

import os
from pathlib import Path

# git's own test for too many loose objects: more than gc.auto / 256 (6700 by default) in
# the one folder objects/17, taken as a sample of all 256.
_LOOSE_SAMPLE = "17"
_LOOSE_DUE = (6700 + 255) // 256


def loose_objects_due(common_dir: Path) -> bool:
    """Whether git's automatic gc (at its default threshold) could find work among the
    loose objects; True when the folder cannot be read, so that git is asked."""
    try:
        with os.scandir(os.path.join(common_dir, "objects", _LOOSE_SAMPLE)) as entries:
            loose = sum(1 for e in entries if len(e.name) >= 38)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return loose > _LOOSE_DUE
