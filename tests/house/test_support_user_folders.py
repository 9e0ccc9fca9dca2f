"""The suite's own folders: no test writes into the person's real config or cache folder
(conftest.py gives each test its own, through XDG_CONFIG_HOME and XDG_CACHE_HOME)."""

from __future__ import annotations

from pathlib import Path

from conftest import STARTED_IN
from support.git import git
from support.runner import run_atlas

from atlas_files.storage import ownfiles, usercache
from atlas_files.storage.record import Record


def _state(folder: Path | None) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and change time (nothing if none)."""
    if folder is None or not folder.is_dir():
        return {}
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


def test_a_flow_leaves_the_real_config_and_cache_folders_untouched(tmp_path: Path) -> None:
    real_config = ownfiles.config_dir(STARTED_IN)
    cache = usercache.folder(env=STARTED_IN)
    real_cache = Path(cache) if cache else None
    before = (_state(real_config), _state(real_cache))
    record = Record.init(tmp_path / "rec", ["web"])
    record.update_config(lambda data: {**data, "sync": {"remote": "origin", "auto": False}})
    git(record.root, "init", "-q", "-b", "main")
    git(record.root, "remote", "add", "origin", str(tmp_path / "remote.git"))
    # Accepting a record's sync settings, a write and a read: in this process and in a
    # child, each of which keeps something in the person's own folders.
    for process in (False, True):
        done = run_atlas("sync", "accept", "--yes", record=record.root, process=process)
        assert done.returncode == 0, done.stderr
        assert run_atlas("put", "plan", "-f", "-", identity="ann", record=record.root,
                         input="x\n", process=process).returncode in (0, 3)
        assert run_atlas("ls", record=record.root, process=process).returncode == 0
    mine = ownfiles.config_dir()
    assert mine is not None and (mine / "accepted-sync.json").is_file()  # it went here
    assert (_state(real_config), _state(real_cache)) == before
