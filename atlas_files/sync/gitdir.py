"""Whether git's automatic tidying could find work, read from git's own files: the same
sample git's own test takes, so a synced write starts no `git maintenance run --auto`
child after a commit that leaves nothing to tidy (bench/bench_sync.py).

git's test: more than gc.auto / 256 loose objects in the one folder objects/17, taken as a
sample of all 256 (gc.auto 0 turns it off). gc.auto is git's to say: it is asked once
(`git config --get gc.auto`), and the answer kept in the checkout's sync folder for as
long as every config file git reads is the same file, unchanged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from atlas_files.facts import environment
from atlas_files.storage import fsio
from atlas_files.storage.gitcmd import Git

_LOOSE_SAMPLE = "17"
# What git uses when gc.auto is not set.
GC_AUTO_DEFAULT = 6700


def _config_files(common_dir: Path, git_dir: Path) -> list[str]:
    """The files git reads its config from here, as git finds them."""
    env = os.environ
    files = [str(common_dir / "config"), str(git_dir / "config.worktree")]
    if "GIT_CONFIG_GLOBAL" in env:
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        home = env.get("HOME", "")
        xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
        files += [os.path.join(xdg, "git", "config")] if xdg else []
        files += [os.path.join(home, ".gitconfig")] if home else []
    if not env.get("GIT_CONFIG_NOSYSTEM"):
        files.append(env.get("GIT_CONFIG_SYSTEM", "/etc/gitconfig"))
    return files


def _key(common_dir: Path, git_dir: Path) -> str | None:
    """What the answer depends on: each config file's identity and age, and the variables;
    None when a file includes others (their changes would not show here)."""
    seen = []
    for path in _config_files(common_dir, git_dir):
        try:
            st = os.stat(path)
            with open(path, "rb") as fh:
                if b"include" in fh.read(1 << 20).lower():
                    return None
        except OSError:
            continue
        seen.append([path, st.st_ino, st.st_mtime_ns, st.st_size])
    return json.dumps([seen, [os.environ.get(v) for v in environment.GIT_CONFIG]])


def gc_auto(git: Git, common_dir: Path, git_dir: Path, cache: Path,
            within: fsio.OpenRoot | None = None) -> int:
    """git's gc.auto for this checkout (its default when unset), remembered in ``cache``
    (in the record ``within`` opened)."""
    key = _key(common_dir, git_dir)
    data = fsio.read_cache(cache, within=within) if key is not None else None
    if data is not None:
        kept_key, _, kept = data.decode("utf-8", "replace").rpartition("\t")
        if kept_key == key and kept.lstrip("-").isdigit():
            return int(kept)
    done = git.run("config", "--int", "--get", "gc.auto", ok=(0, 1))
    value = int(done.text) if done.code == 0 and done.text.lstrip("-").isdigit() \
        else GC_AUTO_DEFAULT
    if key is not None:
        fsio.keep_cache(cache, f"{key}\t{value}".encode(), within=within)
    return value


def loose_objects_due(common_dir: Path, gc_auto: int) -> bool:
    """Whether git's automatic gc (at threshold ``gc_auto``) could find work among the
    loose objects; True when the folder cannot be read, so that git is asked."""
    if gc_auto <= 0:
        return False
    try:
        with os.scandir(os.path.join(common_dir, "objects", _LOOSE_SAMPLE)) as entries:
            loose = sum(1 for e in entries if len(e.name) >= 38)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return loose > (gc_auto + 255) // 256
