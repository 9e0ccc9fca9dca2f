"""Whether another local user could change where a path leads.

A name is looked up in the folder that holds it, so whoever may write into a folder on
the way (or owns it, and so may chmod it) can rename, replace or add what the path finds,
at any moment between a check and a use. A path therefore leads only where its user
chose when every folder it passes through belongs to that user or to root and cannot be
written by group or others, unless the folder is sticky (the shared temp folder): there
others may add names but not rename or remove ones that are not theirs, so a name found
in it must itself be the user's or root's. A symbolic link on the way is followed as the
kernel follows it, under the same rule for the folders it leads through and for the
folder that holds the link.

Imported by the command server's client before anything else (server/wire.py), so it
uses only ``os`` and ``stat``, which every Python has loaded at start. What it reads is
the file modes and owners; access control lists are not looked at.
"""

from __future__ import annotations

import os
import stat

MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup


def _trusted(uid: int) -> bool:
    return uid in (0, os.geteuid())


def _shared(info: os.stat_result) -> bool:
    """A sticky folder others may write: they may add names, not take ours."""
    return bool(info.st_mode & stat.S_ISVTX and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _folder_unsafe(folder: str, info: os.stat_result) -> str | None:
    if not _trusted(info.st_uid):
        return f"{folder} belongs to another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        return (f"others may write to {folder} (mode {stat.S_IMODE(info.st_mode):o}), so "
                "they could rename or replace what is in it")
    return None


def unsafe_way(path: str) -> str | None:
    """Why another user could change where ``path`` leads, or None if only
    this user and root can: a folder on the way that is theirs or that they may write, a
    link they could replace, or a name of theirs in a sticky folder. The last name is
    looked up, not followed (a link there is the caller's to judge, by its own lstat);
    a name that does not exist ends the walk, since nothing is there to change yet
    (whoever makes it asks again)."""
    here = "/"
    try:
        info = os.lstat(here)
    except OSError as exc:
        return f"/ cannot be looked at ({exc.strerror})"
    why = _folder_unsafe(here, info)
    if why is not None:
        return why
    pending = [n for n in os.path.abspath(path).split("/") if n not in ("", ".")]
    links = 0
    while pending:
        name = pending.pop(0)
        if name == "..":
            here = os.path.dirname(here)  # ``here`` is a real folder already walked
            info = os.lstat(here)
            continue
        step = os.path.join(here, name)
        holder = info
        try:
            info = os.lstat(step)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"{step} cannot be looked at ({exc.strerror})"
        if _shared(holder) and not _trusted(info.st_uid):
            return (f"{step} belongs to another user (uid {info.st_uid}), in {here}, a "
                    "folder everyone may add to")
        if not pending:
            return None
        if stat.S_ISLNK(info.st_mode):
            links += 1
            if links > MAX_LINKS:
                return f"{path} passes through more than {MAX_LINKS} links"
            target = os.readlink(step)
            if target.startswith("/"):
                here = "/"
                info = os.lstat(here)
            else:
                info = holder
            pending[:0] = [n for n in target.split("/") if n not in ("", ".")]
            continue
        if not stat.S_ISDIR(info.st_mode):
            return None  # the lookup fails there: nothing is found to be changed
        why = _folder_unsafe(step, info)
        if why is not None:
            return why
        here = step
    return None
