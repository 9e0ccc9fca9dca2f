"""privatepath.unsafe_way: whether another local user could change where a path leads.
Real folders, links and owners (other owners need root to make: skipped elsewhere)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from atlas_files.facts.privatepath import unsafe_way

OTHER = 61999  # a uid no one has: root can give it files


@pytest.fixture
def base() -> Iterator[Path]:
    """A private folder in /tmp (sticky, root's), outside pytest's own folders."""
    folder = Path(tempfile.mkdtemp(prefix="atlas-pp-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")


def test_private_folders_and_the_shared_temp_folder_are_safe(base: Path) -> None:
    (base / "a" / "b").mkdir(parents=True)
    assert unsafe_way(str(base / "a" / "b" / "c.sock")) is None
    assert unsafe_way(str(base / "missing" / "deeper")) is None  # nothing there to change
    assert unsafe_way("/tmp") is None


def test_a_folder_others_may_write_on_the_way_is_unsafe_unless_sticky(base: Path) -> None:
    (base / "open" / "mine").mkdir(parents=True)
    os.chmod(base / "open", 0o777)
    why = unsafe_way(str(base / "open" / "mine" / "s.sock"))
    assert why is not None and f"others may write to {base / 'open'} (mode 777)" in why
    os.chmod(base / "open", 0o1777)
    assert unsafe_way(str(base / "open" / "mine" / "s.sock")) is None
    os.chmod(base / "open", 0o775)  # group-writable: as open as others-writable
    assert unsafe_way(str(base / "open" / "mine" / "s.sock")) is not None
    # The last name is looked up, never judged: it is the caller's.
    os.chmod(base / "open", 0o755)
    os.chmod(base / "open" / "mine", 0o777)
    assert unsafe_way(str(base / "open" / "mine")) is None


def test_another_users_folder_or_name_in_a_sticky_folder_is_unsafe(base: Path) -> None:
    _as_root()
    (base / "theirs" / "inner").mkdir(parents=True)
    os.chown(base / "theirs", OTHER, OTHER)
    why = unsafe_way(str(base / "theirs" / "inner" / "s.sock"))
    assert why == f"{base / 'theirs'} belongs to another user (uid {OTHER})"
    sticky = base / "tmp"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    (sticky / "link").symlink_to(base)
    os.lchown(sticky / "link", OTHER, OTHER)  # theirs to replace, sticky or not
    why = unsafe_way(str(sticky / "link" / "x"))
    assert why == (f"{sticky / 'link'} belongs to another user (uid {OTHER}), in {sticky}, "
                   "a folder everyone may add to")
    os.lchown(sticky / "link", 0, 0)
    assert unsafe_way(str(sticky / "link" / "x")) is None


def test_links_are_followed_through_the_folders_they_lead_to(base: Path) -> None:
    (base / "open" / "deep").mkdir(parents=True)
    os.chmod(base / "open", 0o777)
    (base / "safe").mkdir()
    (base / "safe" / "to-open").symlink_to(base / "open" / "deep")  # absolute
    (base / "safe" / "rel").symlink_to("../open/deep")  # relative, with ..
    (base / "safe" / "up").symlink_to("..")  # back to base, a safe folder
    for link in ("to-open", "rel"):
        why = unsafe_way(str(base / "safe" / link / "s.sock"))
        assert why is not None and str(base / "open") in why, link
    assert unsafe_way(str(base / "safe" / "up" / "safe" / "s.sock")) is None
    (base / "safe" / "loop").symlink_to("loop")
    why = unsafe_way(str(base / "safe" / "loop" / "x"))
    assert why is not None and "more than 40 links" in why
