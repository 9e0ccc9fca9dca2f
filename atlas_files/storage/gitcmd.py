"""The `git` command line, run through subprocess: the one way atlas runs git.

No Python git library: they cost 135-255 ms to import and bypass the user's credential
helpers, ssh config, mailmap, safe.directory and `insteadOf` rules, which the command line
honours the way the user's other tools do. Every call is non-interactive (a prompt would
hang an agent forever), reads nothing from stdin unless given, is stopped past its
timeout, and speaks C locale so that the few messages parsed here read the same
everywhere. Every answer that holds paths is asked for with ``-z``, so a file name may
hold any byte git allows (a newline, a quote) and come back unquoted and whole. What git
refuses is a GitFailed (exit 2) in git's own words; a folder that is no repository (or no
git at all) is its kind NotARepository.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from atlas_files.facts import environment
from atlas_files.facts.errors import AtlasError, BadInput
from atlas_files.storage import fsio, worktree

# Paths come back as bytes; anything that is not UTF-8 is shown, never guessed at.
ENCODING = "utf-8"


class GitFailed(AtlasError):
    """git refused or could not do its part (the network, credentials, a damaged
    repository, a lock another git holds): an environment problem, not a bug."""

    exit_code = 2
    kind = "environment"


class NotARepository(BadInput, GitFailed):
    """The folder is not inside a git repository (or git is not installed): bad input,
    and a git failure to whoever catches those."""


# merge-tree --write-tree (a merge computed without touching the work tree) came in 2.38.
MIN_VERSION = (2, 38)
# Network steps (fetch, push) get this long before they are called failed; local steps
# are quick, but a huge record's status may take a while on a cold disk.
NETWORK_TIMEOUT_S = 120.0
LOCAL_TIMEOUT_S = 300.0

_ENV_OVERRIDES = {
    "GIT_TERMINAL_PROMPT": "0",  # fail instead of asking for a password on a terminal
    # A repository that says it is a partial clone fetches each object it lacks from its
    # promisor remote the moment any command reads it, through the remote's upload-pack,
    # ssh command or helper: programs its config names. atlas never fetches behind its
    # own back (git 2.39.4 and newer read this; older ones ignore it).
    "GIT_NO_LAZY_FETCH": "1",
    "LC_ALL": "C",
    "LANGUAGE": "C",
}
# A git that is only asked (a check, the guard, a repository's activity) may be asked of a
# repository someone else configured, so it runs no program that config names. It takes
# none of its optional locks, and reaches no other repository: an empty allow-list of
# protocols overrides every protocol.*.allow of the config, which leaves unreachable what
# only a transport runs (remote.*.uploadpack and .receivepack, remote.*.vcs and `ext::`
# helpers, core.sshCommand, core.gitProxy, credential helpers, url.*.insteadOf,
# core.alternateRefsCommand).
_READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0", "GIT_ALLOW_PROTOCOL": ""}
# ...and the keys that name a program some local command would run are set to run none:
# the pager (--no-pager outweighs core.pager, pager.* and GIT_PAGER), the fsmonitor (a
# status), hooks (a ref update), an external diff (a patch; it then fails instead) and
# signature checks (a log, through gpg.program). Textconv and filter drivers run only for
# a patch or for files read from the work tree, which no read-only call of atlas asks for
# (each asks for names, raw diffs or blobs).
_READ_ONLY_ARGS = ("--no-pager", "-c", "core.fsmonitor=false",
                   "-c", f"core.hooksPath={os.devnull}", "-c", "diff.external=",
                   "-c", "log.showSignature=false")
# What git says when it knows no user name or email to commit with.
_NO_IDENTITY = ("tell me who you are", "unable to auto-detect", "empty ident")
_VERSION_RE = re.compile(r"git version (\d+)\.(\d+)")
_checked: dict[str, tuple[int, int]] = {}


class Done(NamedTuple):
    """What one git command did. (A NamedTuple, like the other records of this package
    that every sync builds: a frozen dataclass costs ~0.4 ms more of each command's start.)"""

    code: int
    out: bytes
    err: str

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", "surrogateescape").strip()


def executable() -> str:
    found = _which("git")
    if found is None:
        raise NotARepository("`git` is not installed (or not on PATH); atlas runs it",
                             hint="install git (2.38 or newer for `atlas sync`)")
    return found


def _which(name: str) -> str | None:
    """``name``'s first executable file on PATH, as shutil.which finds it (shutil itself
    costs ~1.5 ms of imports, bz2 and lzma among them, on every synced command)."""
    for folder in os.get_exec_path():
        candidate = os.path.join(folder or os.curdir, name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def _binary_key(exe: str) -> str:
    st = os.stat(os.path.realpath(exe))
    return f"{exe} {st.st_mtime_ns} {st.st_size}"


def check_version(cache: Path | None = None, *,
                  within: fsio.OpenRoot | None = None) -> tuple[int, int]:
    """The installed git's (major, minor); BadInput if older than 2.38. Asked once per
    process and git binary, and remembered in ``cache`` (a file, in the record ``within``
    opened) while the binary stays the same file: a process spawn saved on every synced
    write."""
    exe = executable()
    if exe in _checked:
        return _checked[exe]
    key = _binary_key(exe)
    found = _cached(cache, key, within)
    if found is None:
        done = subprocess.run([exe, "--version"], capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=LOCAL_TIMEOUT_S, check=False)
        match = _VERSION_RE.search(done.stdout.decode("ascii", "replace"))
        if done.returncode != 0 or match is None:
            raise BadInput(f"could not tell the version of {exe} (`git --version` said "
                           f"{done.stdout[:80]!r})", hint="install git 2.38 or newer")
        found = (int(match.group(1)), int(match.group(2)))
        if cache is not None and found >= MIN_VERSION:
            fsio.keep_cache(cache, f"{key}\t{found[0]}.{found[1]}\n".encode(),
                            within=within)
    if found < MIN_VERSION:
        raise BadInput(
            f"atlas sync needs git {MIN_VERSION[0]}.{MIN_VERSION[1]} or newer (for "
            f"`git merge-tree --write-tree`); {exe} is {found[0]}.{found[1]}",
            hint="upgrade git, or put a newer git first on PATH",
        )
    _checked[exe] = found
    return found


def _cached(cache: Path | None, key: str,
            within: fsio.OpenRoot | None) -> tuple[int, int] | None:
    data = None if cache is None else fsio.read_cache(cache, within=within)
    if data is None:
        return None
    line = data.decode("utf-8", "replace").strip()
    cached_key, _, version = line.rpartition("\t")
    major, _, minor = version.partition(".")
    if cached_key != key or not (major.isdigit() and minor.isdigit()):
        return None
    return int(major), int(minor)


class Git:
    """Runs git in one folder. ``read_only``: the caller only asks (a check, a guard), so
    git takes none of its optional locks (a status would otherwise rewrite the index of a
    repository a person is working in)."""

    def __init__(self, cwd: str | os.PathLike[str], env: dict[str, str] | None = None,
                 identity: str | None = None, *, read_only: bool = False) -> None:
        self.cwd = Path(cwd)
        self.exe = executable()
        self.env = {**os.environ, **_ENV_OVERRIDES, **(_READ_ONLY if read_only else {}),
                    **(env or {})}
        self.identity = identity
        self._ident_env: dict[str, str] = {}
        self.prefix = _READ_ONLY_ARGS if read_only else ()

    def run(self, *args: str, input: bytes | None = None, ok: Sequence[int] = (0,),
            timeout: float = LOCAL_TIMEOUT_S, env: dict[str, str] | None = None) -> Done:
        """Run ``git ARGS``; GitFailed unless it exits with a code in ``ok``."""
        try:
            proc = subprocess.run(
                [self.exe, *self.prefix, *args], cwd=self.cwd, input=input, capture_output=True,
                stdin=None if input is not None else subprocess.DEVNULL,
                env={**self.env, **env} if env else self.env, timeout=timeout, check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitFailed(f"`git {args[0]}` took over {timeout:.0f} s and was stopped",
                            hint="check the network and the remote, then try again"
                            ) from None
        except NotADirectoryError:
            raise NotARepository(f"{self.cwd} is not a folder", hint="pass a folder") from None
        done = Done(proc.returncode, proc.stdout,
                    proc.stderr.decode("utf-8", "replace").strip())
        if done.code not in ok:
            raise failed(args, done)
        return done

    def committing(self, *args: str, input: bytes | None = None,
                   env: dict[str, str] | None = None) -> Done:
        """Run a command that makes a commit; where git knows no user, commit as the
        acting identity rather than fail."""
        done = self.run(*args, input=input, env={**(env or {}), **self._ident_env},
                        ok=(0, 128))
        if done.code != 0 and not self._ident_env and \
                any(m in done.err.lower() for m in _NO_IDENTITY):
            who = self.identity or "atlas"
            self._ident_env = {"GIT_COMMITTER_NAME": who, "GIT_AUTHOR_NAME": who,
                               "GIT_COMMITTER_EMAIL": f"{who}@atlas.invalid",
                               "GIT_AUTHOR_EMAIL": f"{who}@atlas.invalid"}
            done = self.run(*args, input=input, env={**(env or {}), **self._ident_env},
                            ok=(0, 128))
        if done.code != 0:
            raise failed(args, done)
        return done

    def head(self, *args: str, limit: int) -> bytes:
        """The first ``limit`` bytes ``git ARGS`` prints (all of it, if less); the rest is
        never read. GitFailed if it fails before printing that much."""
        proc = self.start(*args)
        assert proc.proc.stdout is not None
        data = proc.proc.stdout.read(limit)
        if len(data) < limit:
            proc.finish()
        else:
            proc.stop()
        return data

    def start(self, *args: str, talk: bool = False) -> Started:
        """Start ``git ARGS`` and return at once (``finish`` collects it): a fetch runs
        while the checkout's own changes are committed. ``talk``: a long-lived command
        that reads questions on stdin (its stderr is dropped, never left to fill a pipe)."""
        proc = subprocess.Popen([self.exe, *self.prefix, *args], cwd=self.cwd, env=self.env,
                                stdin=subprocess.PIPE if talk else subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL if talk else subprocess.PIPE)
        return Started(proc, args)

    def out(self, *args: str, input: bytes | None = None,
            env: dict[str, str] | None = None) -> str:
        return self.run(*args, input=input, env=env).text


class Started:
    """A git command running in the background."""

    def __init__(self, proc: subprocess.Popen[bytes], args: tuple[str, ...]) -> None:
        self.proc = proc
        self.args = args

    def finish(self, ok: Sequence[int] = (0,), timeout: float = NETWORK_TIMEOUT_S) -> Done:
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise GitFailed(f"`git {self.args[0]}` took over {timeout:.0f} s and was stopped",
                            hint="check the network and the remote, then try again"
                            ) from None
        done = Done(self.proc.returncode, out, (err or b"").decode("utf-8", "replace").strip())
        if done.code not in ok:
            raise failed(self.args, done)
        return done

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.communicate()


def failed(args: Sequence[str], done: Done) -> GitFailed:
    """git's own words as a GitFailed: its fatal and error lines (the cause), else its
    last lines."""
    lines = [line.strip() for line in done.err.splitlines() if line.strip()]
    causes = [line for line in lines if line.startswith(("fatal:", "error:"))]
    said = " / ".join(causes[:2] or lines[-3:])
    return GitFailed(f"`git {' '.join(args[:2])}` failed (exit {done.code}): "
                     f"{said or 'no message'}",
                     hint="fix what git says, then try again")


def split_z(data: bytes) -> list[str]:
    """NUL-separated output as paths (git quotes nothing with -z); bytes that are not
    UTF-8 are kept as they are (surrogate escapes), so a path goes back to git whole and
    is shown escaped, never guessed at."""
    return [p.decode(ENCODING, "surrogateescape") for p in data.split(b"\0") if p]


# -- the few questions atlas asks a code repository ------------------------------------------

class Where(NamedTuple):
    """Where a folder lies in git."""

    top: Path  # the work tree's root
    git_dir: Path  # this work tree's own git dir (a linked worktree has its own)
    common_dir: Path  # refs and objects, shared by every worktree
    prefix: str  # the folder inside the work tree, '' or 'sub/dir/'


# Where git keeps the folders of a work tree whose top is the folder asked about, read from
# the files as git's own discovery reads them: one `git rev-parse` fewer for every hook,
# guard and synced write (about 4 ms of a 45 ms synced `atlas put`; bench/bench_sync.py).
# Only the plain layouts are read so: a ``.git`` folder in the folder, or a ``.git`` file
# pointing to a linked worktree's (or a submodule's) folder. Anything git might judge
# otherwise is left to git: a folder deeper inside a repository, a ``GIT_*`` variable that
# moves the folders, a config that could move the work tree (``core.worktree``,
# ``core.bare``, includes, per-worktree config), folders owned by another user (git's
# ``safe.directory`` check), the reftable format, or a ``.git`` git would not take for a
# repository.
# Config words after which only git can say where the work tree is.
_ASK_GIT_IF = ("worktree", "bare = true", "bare=true", "include")
_SMALL = 64 * 1024
# git's own test for too many loose objects: more than gc.auto / 256 (6700 by default) in
# the one folder objects/17, taken as a sample of all 256.
_LOOSE_SAMPLE = "17"
_LOOSE_DUE = (6700 + 255) // 256


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(_SMALL + 1)
    except OSError:
        return None
    if len(data) > _SMALL:
        return None
    return data.decode("utf-8", "surrogateescape")


def _mine(path: str) -> bool:
    try:
        return os.stat(path).st_uid == os.getuid()
    except OSError:
        return False


def from_files(root: str | os.PathLike[str]) -> tuple[Path, Path, Path] | None:
    """(work tree top, its git dir, the common dir) when ``root`` is the top of a work
    tree of a plain layout; None when git must be asked."""
    if not hasattr(os, "getuid") or environment.git_moved():
        return None
    top = os.path.realpath(root)
    dotgit = os.path.join(top, ".git")
    try:
        info = os.lstat(dotgit)
    except OSError:
        return None  # no repository here: the record lies deeper in one, or in none
    if stat.S_ISDIR(info.st_mode):
        git_dir = dotgit
    elif stat.S_ISREG(info.st_mode):
        text = _read(dotgit)
        if text is None or not text.startswith("gitdir: "):
            return None
        git_dir = os.path.realpath(os.path.join(top, text[len("gitdir: "):].strip()))
    else:
        return None
    common = _read(os.path.join(git_dir, "commondir"))
    common_dir = git_dir if common is None else os.path.realpath(
        os.path.join(git_dir, common.strip()))
    config = _read(os.path.join(common_dir, "config"))
    if config is None or any(word in config.lower() for word in _ASK_GIT_IF):
        return None
    if not (all(map(_mine, (top, git_dir, common_dir)))
            and os.path.isfile(os.path.join(git_dir, "HEAD"))
            and os.path.isdir(os.path.join(common_dir, "objects"))
            and os.path.isdir(os.path.join(common_dir, "refs"))
            and not os.path.exists(os.path.join(common_dir, "reftable"))):
        return None
    return Path(top), Path(git_dir), Path(common_dir)




def locate(start: str | os.PathLike[str], git: Git | None = None) -> Where:
    """Where ``start`` lies in git: the one way atlas finds a repository's root.
    NotARepository when it lies in none, or in a bare repository."""
    where = Path(start)
    found = from_files(where)
    if found is not None:
        return Where(*found, "")
    if not where.is_dir():
        raise NotARepository(f"{where} is not a folder",
                             hint="pass the folder of a git repository (--repo DIR)")
    if not _may_lie_in_git(where):
        raise _not_inside(where)
    done = (git or Git(where, read_only=True)).run(
        "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir",
        "--git-common-dir", "--show-prefix", ok=(0, 128))
    if done.code != 0 and "must be run in a work tree" in done.err:
        raise NotARepository(f"{where.absolute()} is a bare repository, without a working tree",
                             hint="run it in a clone or a worktree")
    lines = done.out.decode(ENCODING, "surrogateescape").split("\n")
    if done.code != 0 or len(lines) < 4 or not lines[0]:
        raise _not_inside(where)
    return Where(Path(lines[0]), Path(lines[1]), Path(lines[2]), lines[3])


def _not_inside(where: Path) -> NotARepository:
    return NotARepository(
        f"{where.absolute()} is not inside a git repository (or git refuses to read it)",
        hint="run it inside the repository, or pass --repo DIR")


def _may_lie_in_git(where: Path) -> bool:
    """False when no folder from ``where`` up holds a `.git` or looks like a bare
    repository, and no variable moves git's search: git would find nothing, and asking it
    costs a process at every session start outside a repository."""
    if environment.git_moved():
        return True
    return worktree.repository_root(os.path.realpath(where), bare=True) is not None


def toplevel(start: str | os.PathLike[str]) -> Path:
    """The root of the working tree holding ``start`` (see :func:`locate`)."""
    return locate(start).top


def staged(repo: Path) -> list[str]:
    """Every path the next commit adds, changes or deletes, relative to ``repo``'s root.

    ``--no-renames``: a rename lists the old path and the new one, since moving a file out
    of a leased folder touches that folder as surely as editing it.
    """
    return split_z(Git(repo, read_only=True).run(
        "diff", "--cached", "--name-only", "--no-renames", "-z", "--no-ext-diff",
        "--ignore-submodules=none").out)


def blob(repo: Path, spec: str) -> bytes | None:
    """The bytes of the file ``spec`` names (``HEAD:path``, ``:path`` for the index, an
    object id); None when git has no such file."""
    try:
        return Git(repo, read_only=True).run("cat-file", "blob", spec).out
    except GitFailed:
        return None


def config(repo: Path, prefix: str) -> dict[str, str]:
    """Every ``git config`` value whose key starts with ``prefix`` (as ``atlas.``), keys
    lowercased as git reports them; the last value of a key repeated across files wins,
    as in git itself. One process for all of them."""
    try:
        done = Git(repo, read_only=True).run(
            "config", "-z", "--get-regexp", "^" + prefix.replace(".", "\\."))
    except GitFailed:  # exit 1: no such key anywhere (or no config git can read)
        return {}
    values: dict[str, str] = {}
    for item in done.out.split(b"\0"):
        if item:
            key, _, value = item.decode(ENCODING, "replace").partition("\n")
            values[key] = value
    return values
