"""The files of the person running atlas, outside the record: ``~/.config/atlas/``.

What a person trusts cannot live in the record, since anyone who can write the record (or
push to its remote) could change it there. Their own probes, their approvals of probe
commands, their acceptances of a record's ``sync:`` block and of a site's own code live in
their own config folder instead, and each file there is used only while it is safer than
the record (or the repository): not inside it, not owned by another user, and not writable
by others.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from atlas_files.facts import privatepath, timeutil
from atlas_files.facts.errors import BadInput, DamagedFile
from atlas_files.storage import fsio

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


def refuse_unsafe(path: Path, record_root: str, what: str, where: str = "record") -> None:
    """BadInput if the file at ``path`` (or the folder holding it) is no safer than the
    record (or the repository: ``where``) at ``record_root`` (a real path): inside it,
    writable by other users, or owned by someone else."""
    if _inside(path, record_root) or _inside(path.parent, record_root):
        raise BadInput(
            f"{what} {path} is inside the {where} at {record_root}: anyone who can write the "
            f"{where} could change it, so it cannot say what you trust",
            hint=f"move it out of the {where}, e.g. to {config_dir() or '~/.config/atlas'}",
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


def read_accepted(path: Path, root: str, what: str, again: str, where: str = "record",
                  ) -> list[dict[str, Any]]:
    """The ``accepted`` list of the acceptances file at ``path`` ([] while there is none),
    used only while it is safer than ``root`` (refuse_unsafe); DamagedFile, saying to
    ``again``, for one atlas did not write."""
    try:
        data = read_small(path, what)
    except FileNotFoundError:
        return []
    refuse_unsafe(path, root, what, where)
    try:
        doc = json.loads(data)
    except ValueError:
        raise DamagedFile(f"the {what} {path} is not JSON", hint=f"delete it, then {again}"
                          ) from None
    entries = doc.get("accepted") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise DamagedFile(f"the {what} {path} has no `accepted` list",
                          hint=f"delete it, then {again}")
    return [e for e in entries if isinstance(e, dict)]


def write_accepted(path: Path, root: str, what: str, again: str, key: str,
                   entry: dict[str, Any], where: str = "record") -> None:
    """Keep ``entry`` (stamped with the time) in the acceptances file at ``path`` in place
    of the one with the same ``key``, under the file's lock."""
    refuse_unsafe(path, root, what, where)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with fsio.locked(path.parent / (path.name + ".lock")):
        entries = [e for e in read_accepted(path, root, what, again, where)
                   if e.get(key) != entry[key]]
        entries.append({**entry, "accepted_at": timeutil.format_time(timeutil.now())})
        data = json.dumps({"accepted": entries}, ensure_ascii=False, indent=1) + "\n"
        fsio.replace_atomic(path, data.encode("utf-8"), mode=0o600)
