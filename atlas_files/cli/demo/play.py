"""`atlas demo`: a record built from scratch, written and read by several identities,
checked, and rendered as a site. Each scene lives in its own module and prints what it
does as it happens.
"""

from __future__ import annotations

import importlib
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from atlas_files.facts.errors import BadInput
from atlas_files.storage.record import Record

Say = Callable[[str], None]

# Scenes run in this order; each is ``scene(record: Record, say: Say) -> None``.
SCENES = (
    "atlas_files.cli.demo.core",
    "atlas_files.cli.demo.leases",
    "atlas_files.cli.demo.tasks",
    "atlas_files.cli.demo.decisions",
    "atlas_files.cli.demo.telemetry",
    "atlas_files.cli.demo.check",
    "atlas_files.cli.demo.site",
)


def atlas_cli(record: Record, who: str | None, *args: str,
              body: str | None = None) -> tuple[int, str, str]:
    """Run the real `atlas` command as ``who``: (exit code, stdout, stderr).

    Scenes show some steps through the CLI because the exit code is the point.
    """

    identity = ["--as", who] if who else []
    proc = subprocess.run(
        [sys.executable, "-m", "atlas_files", "--record", str(record.root), *identity, *args],
        input=(body or "").encode(), capture_output=True,
    )
    return (proc.returncode, proc.stdout.decode("utf-8", "replace").strip(),
            proc.stderr.decode("utf-8", "replace").strip())


def run(directory: Path, say: Say) -> Record:
    record = Record.init(directory, ["web", "ml"])
    say(f"created a record at {record.root} with projects web and ml")
    for module_name in SCENES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.scene(record, say)
    return record


MARKER = ".atlas-demo"


def run_fresh(directory: str | Path, say: Say) -> Record:
    """Run the demo in ``directory``, replacing an earlier demo there but nothing else."""

    target = Path(directory).resolve()  # scenes run commands from other folders
    if target.exists():
        if not (target / MARKER).exists():
            if target.is_dir() and not any(target.iterdir()):
                target.rmdir()
            else:
                raise BadInput(
                    f"{target} exists and was not made by `atlas demo`; refusing to touch it",
                    hint="pass another DIR, e.g. `atlas demo /tmp/atlas-demo`",
                )
        else:
            shutil.rmtree(target, onerror=_force_remove)
    target.mkdir(parents=True)
    (target / MARKER).write_text("made by `atlas demo`; the next demo run replaces it\n")
    return run(target / "record", say)


def _force_remove(func: Callable[..., object], path: str, _exc: object) -> None:
    # Published versions are read-only; on some systems that blocks their removal.

    os.chmod(os.path.dirname(path), stat.S_IRWXU)
    os.chmod(path, stat.S_IRWXU)
    func(path)
