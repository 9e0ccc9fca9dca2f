"""The files of the person running atlas, outside the record: ``~/.config/atlas/``.

What a person trusts cannot live in the record, since anyone who can write the record (or
push to its remote) could change it there. Their own probes, their approvals of probe
commands and their acceptances of a record's ``sync:`` block live in their own config
folder instead, and each file there is used only while it is safer than the record: not
inside it, not owned by another user, and not writable by others.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from atlas_files import privatepath
from atlas_files.errors import BadInput

MAX_FILE_BYTES = 1 << 20  # each file is a few lines; a bigger one is not ours


def config_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """``$XDG_CONFIG_HOME/atlas`` (absolute values only, as the XDG spec says), else
    ``~/.config/atlas``; None when there is no home folder to speak of (none known, or
    one that is not there: a home is never made, as root would make `/nonexistent`)."""
    environ = os.environ if env is None else env
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "atlas"
    home = environ.get("HOME") or ""
    if not home:
        try:
            home = str(Path.home())
        except (RuntimeError, KeyError):
            return None
    if not os.path.isdir(home):
        return None
    return Path(home) / ".config" / "atlas"


def _inside(path: Path, root: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def refuse_unsafe(path: Path, record_root: str, what: str) -> None:
    """BadInput if the file at ``path`` (or the folder holding it) is no safer than the
    record at ``record_root`` (a real path): inside it, writable by other users, or owned
    by someone else."""
    if _inside(path, record_root) or _inside(path.parent, record_root):
        raise BadInput(
            f"{what} {path} is inside the record at {record_root}: anyone who can write the "
            "record could change it, so it cannot say what you trust",
            hint=f"move it out of the record, e.g. to {config_dir() or '~/.config/atlas'}",
        )
    # A folder further up that others may write could be swapped, with all below it,
    # between this look and the read.
    why = privatepath.unsafe_way(str(path))
    if why is not None:
        raise BadInput(f"the {what} {path} could be replaced by another user: {why}",
                       hint=f"keep the {what} in a folder reached only through folders of "
                       "yours or root's")
    me = os.geteuid()
    for target, word in ((path, "file"), (path.parent, "folder")):
        try:
            st = os.stat(target)
        except FileNotFoundError:
            continue
        if st.st_uid not in (me, 0):
            raise BadInput(f"the {word} of the {what}, {target}, belongs to another user "
                           f"(uid {st.st_uid}), who could change it",
                           hint=f"keep the {what} in a folder of your own")
        # A sticky folder (/tmp) lets others create files, not replace ours.
        sticky = word == "folder" and st.st_mode & stat.S_ISVTX
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky:
            raise BadInput(
                f"the {word} of the {what}, {target}, can be written by other users "
                f"(mode {stat.S_IMODE(st.st_mode):o}), who could change what you trust",
                hint=f"run `chmod go-w {target}`, then try again")


def read_small(path: Path, what: str) -> bytes:
    """The bytes of one of these files; BadInput if it is a folder, unreadable, or larger
    than such a file ever is."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except IsADirectoryError:
        raise BadInput(f"the {what} {path} is a folder, not a file") from None
    except PermissionError:
        raise BadInput(f"the {what} {path} cannot be read: permission denied") from None
    if len(data) > MAX_FILE_BYTES:
        raise BadInput(f"the {what} {path} is over {MAX_FILE_BYTES // 1024} KiB; it should "
                       "be a few lines", hint="check that it is the right file")
    return data
