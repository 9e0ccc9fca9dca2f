"""What a sync lets in from the remote: plain files under plain names, nothing git acts on.

Anyone who can push to the shared remote decides what a sync would check out here. Most
of it is data: a version, an entry, a file atlas did not write. Some of it would make git
(or a tool the person runs later in the record) do something: a symbolic link or a
submodule, a ``.gitattributes`` that names filter or merge programs of the person's own
git config (git-lfs is one), a ``.gitmodules`` that points at other repositories, a git
folder committed as plain files (its ``HEAD``, ``config`` and ``hooks/`` would rule any git
command run inside it), names a case-insensitive disk would land on one file, and an
atlas.yaml atlas cannot read (every command would then stop). A sync that finds any of
these among the remote's new commits refuses them all before anything is checked out,
and says which and why; whoever can push there removes them.

Only paths inside the record are judged: a record kept in a folder of a code repository
syncs that repository's code as `git pull` would, and that code is as trusted as the
repository it comes from.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from atlas_files.facts import layout
from atlas_files.storage.gitcmd import Git
from atlas_files.sync import repo
from atlas_files.sync.errors import UnsafeContent
from atlas_files.sync.paths import CONFIG_FILES, listing

# Modes git records for a plain file; a symbolic link is 120000, a submodule 160000.
PLAIN_MODES = ("100644", "100755")
# atlas.yaml, the README and the .gitignore are a few kilobytes; every command reads the
# config whole.
CONFIG_FILE_LIMIT = 1 << 20
# Names atlas writes: lower-case ASCII letters, digits and . _ - (and the two READMEs).
_PLAIN_NAME = re.compile(r"[a-z0-9._/-]+")
_FOLDED_CONFIG = {name.casefold(): name for name in CONFIG_FILES}
# What the record's .gitignore keeps out of git: a clone's own rows, cache and drafts. One
# pushed by hand would pose as this machine's (a forged read receipt, a planted index).
_LOCAL_FOLDERS = frozenset({layout.RECEIPTS, layout.TELEMETRY, layout.SESSIONS,
                            layout.CACHE, layout.DRAFTS})


def _why(rel: str, mode: str) -> str | None:
    """Why ``rel`` (relative to the record) may not come in, or None."""
    if mode == "120000":
        return "a symbolic link"
    if mode == "160000":
        return "a submodule"
    if mode not in PLAIN_MODES:
        return f"not a plain file (git mode {mode[:6]})"
    parts = rel.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            return "a path that climbs out of its folder"
        # git and the file systems it guards take `.GIT`, `.git.` and `git~1` for `.git`.
        if part.casefold().rstrip(". ") in (".git", "git~1"):
            return "part of a .git folder"
    if parts[0] in _LOCAL_FOLDERS or parts[-1].startswith(layout.TEMP_PREFIX) \
            or parts[-1] in (layout.LATEST_HINTS, layout.CONFIG_LOCK) \
            or parts[-1].endswith(".lock"):
        return ("one machine's own state (live rows, caches, drafts, locks), which never "
                "travels")
    base = parts[-1].casefold()
    if base == ".gitattributes":
        return "git attributes (they can make git run filter and merge programs)"
    if base == ".gitmodules":
        return "submodules (they point git at other repositories)"
    if base == "head":
        return "the marker of a git folder"
    if rel in CONFIG_FILES:
        return None
    if rel.casefold() in _FOLDED_CONFIG:
        return f"a name that a case-insensitive disk lands on {_FOLDED_CONFIG[rel.casefold()]}"
    if not _PLAIN_NAME.fullmatch(rel):
        return ("a name with capitals, spaces or letters beyond ASCII (atlas writes none, "
                "and a case-insensitive disk can land two such names on one file)")
    return None


def check_checkout(git: Git, head: str, prefix: str, to_record: Callable[[str], str | None],
                   where: str) -> list[str]:
    """UnsafeContent unless every file of the commit ``head`` inside the record (at
    ``prefix`` in the repository) is one a sync would let in: what `git clone` checked
    out is held to the rules of what a sync fetches. A symbolic link committed at one of
    atlas's own names (`git add -f .atlas-cache/sync/git-version`) would otherwise lead
    the clone's first command to a file outside. Returns the commit's paths (as git
    names them)."""
    args = ["ls-tree", "-r", "-z", head]
    if prefix:
        args += ["--", prefix]
    refused: list[str] = []
    paths: list[str] = []
    for line in git.run(*args).out.split(b"\0"):
        meta, _, name = line.partition(b"\t")
        if not name:
            continue
        paths.append(name.decode("utf-8", "surrogateescape"))
        rel = to_record(paths[-1])
        why = None if rel is None else _why(rel, meta.split(b" ", 1)[0].decode("ascii"))
        if why is not None:
            refused.append(f"{rel} ({why})")
    if refused:
        raise UnsafeContent(
            f"this checkout's commit {head[:12]} (as {where} gave it to `git clone`) holds "
            f"what a record never holds: {listing(refused, 4)}; atlas follows none of it, "
            "and nothing was integrated or pushed",
            hint=f"see who committed it (`git log {head[:12]} -- PATH`); whoever can push "
            "there should remove it (`git rm`, then push); then sync again here (or, sooner, "
            "`git rm` and `git commit` it here yourself)")
    return paths


def check(git: Git, changes: list[repo.Change], to_record: Callable[[str], str | None],
          where: str, theirs: str) -> None:
    """UnsafeContent unless every path the remote adds or changes inside the record is a
    plain file under a plain name (and the config files are of a config's size)."""
    refused: list[str] = []
    configs: list[tuple[str, repo.Change]] = []
    for c in changes:
        rel = to_record(c.path)
        if rel is None or c.xy == "D":
            continue
        why = _why(rel, c.mode)
        if why is not None:
            refused.append(f"{rel} ({why})")
        elif rel in CONFIG_FILES:
            configs.append((rel, c))
    if configs and not refused:
        sizes = repo.blob_sizes(git, [c.blob for _, c in configs])
        refused += [f"{rel} ({size} bytes; a config file is at most "
                    f"{CONFIG_FILE_LIMIT // 1024} KiB)"
                    for (rel, _), size in zip(configs, sizes, strict=True)
                    if size > CONFIG_FILE_LIMIT]
    if refused:
        raise UnsafeContent(
            f"{where} brings in what a record never holds: {listing(refused, 4)}; nothing "
            "was integrated, checked out or pushed",
            hint=f"see who pushed it (`git log {theirs[:12]} -- PATH`); whoever can push "
            f"there should remove it (`git rm`, then push), then sync again. Files atlas "
            f"writes live under {layout.PROJECTS}/, {layout.LEASES}/ and atlas.yaml")
