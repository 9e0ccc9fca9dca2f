"""What git says about the checkout: where the record lies in it, its branch and heads,
what changed in the work tree, and what changed between two commits."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from atlas_files.facts.errors import BadInput
from atlas_files.storage import gitcmd
from atlas_files.storage.gitcmd import Git, NotARepository, split_z

ZERO = "0" * 40
# New untracked folders named on ls-files' command line, in bytes, at most.
LIST_FOLDERS_UP_TO = 64 * 1024
# A ref file as git's files backend writes it: a SHA-1 or SHA-256 commit id and a newline.
_REF_VALUE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


class Facts(NamedTuple):
    top: Path  # the work tree's root
    prefix: str  # the record's folder inside it, '' or 'sub/dir/'
    git_dir: Path  # this work tree's own git dir (a linked worktree has its own)
    common_dir: Path  # refs and objects, shared by every worktree
    branch: str  # the local branch checked out, without refs/heads/

    def to_record(self, git_path: str) -> str | None:
        """A path git printed (relative to the top) as relative to the record; None if
        it lies outside the record."""
        if not self.prefix:
            return git_path
        return git_path[len(self.prefix):] if git_path.startswith(self.prefix) else None


def read_facts(git: Git, root: Path) -> Facts:
    try:
        where = gitcmd.locate(root, git)
    except NotARepository:
        raise BadInput(
            f"the record at {root} is not in a git work tree, so it cannot sync",
            hint="give the record its own repository (`git init` in it, then `git remote add "
            "origin URL`), or check out a dedicated branch as a worktree; see docs/sync.md",
        ) from None
    top, git_dir, common_dir, prefix = where
    # HEAD read as git writes it (`ref: refs/heads/NAME`, or a bare commit id when
    # detached): one process fewer than asking git. The reftable format keeps a dummy
    # HEAD file, so there git is asked.
    if (Path(common_dir) / "reftable").exists():
        ref = git.run("symbolic-ref", "-q", "HEAD", ok=(0, 1, 128)).text
    else:
        try:
            ref = (Path(git_dir) / "HEAD").read_text(encoding="utf-8",
                                                     errors="replace").strip()
        except OSError:
            ref = ""
        ref = ref[len("ref: "):] if ref.startswith("ref: ") else ""
    if not ref.startswith("refs/heads/"):
        raise BadInput(
            "the record's checkout is on no branch (a detached HEAD), so there is nothing "
            "to sync it to",
            hint="check out the record's branch (`git switch BRANCH`), then `atlas sync`",
        )
    return Facts(Path(top), prefix, Path(git_dir), Path(common_dir),
                 ref[len("refs/heads/"):])


# A section header of git's config naming a remote: [remote "NAME"] (the subsection is
# quoted, with \" and \\ escaped; the section name is case-insensitive).
_REMOTE_SECTION = re.compile(r'\s*\[\s*remote\s+"((?:[^"\\\n]|\\.)*)"\s*\]\s*(?:[#;].*)?',
                             re.IGNORECASE)
_SECTION = re.compile(r"\s*\[")
_URL_LINE = re.compile(r"\s*url\s*=\s*\S", re.IGNORECASE)


def _url_in_file(common_dir: Path, name: str) -> bool:
    """Whether the repository's own config file gives ``remote.NAME.url`` plainly (a
    ``[remote "NAME"]`` section with a ``url =`` line); False whenever only git can tell."""
    try:
        text = (common_dir / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    inside = False
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            return False  # a value continued on the next line: git's parser decides
        if _SECTION.match(line):
            m = _REMOTE_SECTION.fullmatch(line)
            inside = m is not None and re.sub(r"\\(.)", r"\1", m.group(1)) == name
        elif inside and _URL_LINE.match(line):
            return True
    return False


def remote_defined(git: Git, common_dir: Path, name: str) -> bool:
    """Whether this clone's git config gives the remote ``name`` a URL. git takes a remote
    name it does not know for a path or a URL, so a name from atlas.yaml must never reach
    it unchecked: the shared remote could otherwise point a push at a repository of its
    own making inside the record, whose hooks git would run. Read from the config file
    when it says so plainly (no process); otherwise git is asked."""
    return _url_in_file(common_dir, name) or remote_url(git, name) is not None


def remote_url(git: Git, name: str) -> str | None:
    """``remote.NAME.url`` as git's config gives it (every file git reads); None if unset."""
    done = git.run("config", "--get", f"remote.{name}.url", ok=(0, 1))
    return done.text if done.code == 0 and done.text else None


def heads(git: Git, common_dir: Path, refs: list[str]) -> dict[str, str]:
    """Each of ``refs`` (branches and remote-tracking refs, never symbolic) that exists,
    with the commit it points to.

    Read from the files git keeps them in (a loose ref file, else the packed-refs file),
    which spares a git process on every read; a sync reads its two refs three times.
    Anything else (the reftable format of newer gits, a symbolic ref, a file that does not
    hold a commit id) is asked of git."""
    found = _read_refs(common_dir, refs)
    if found is not None:
        return found
    out = git.run("for-each-ref", "--format=%(refname) %(objectname)", *refs).text
    found = {}
    for line in out.splitlines():
        name, _, sha = line.partition(" ")
        found[name] = sha
    return found


def _read_refs(common_dir: Path, refs: list[str]) -> dict[str, str] | None:
    """The refs as the files backend stores them; None when only git can tell."""
    if (common_dir / "reftable").exists() or not all(map(_plain_ref, refs)):
        return None
    found: dict[str, str] = {}
    packed: dict[str, str] | None = None
    for ref in refs:
        try:
            value = (common_dir / ref).read_bytes().decode("ascii").strip()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            # Not loose: packed, or absent. (git writes packed-refs before it removes
            # the loose files it packed, so a ref is never in neither.)
            if packed is None:
                packed = _packed_refs(common_dir)
                if packed is None:
                    return None
            if ref in packed:
                found[ref] = packed[ref]
            continue
        except (OSError, UnicodeDecodeError):
            return None
        if not _REF_VALUE.fullmatch(value):
            return None  # a symbolic ref, or a file being written by hand
        found[ref] = value
    return found


def _plain_ref(ref: str) -> bool:
    """A name git could keep as a file under the common dir (no '..', no hidden part):
    anything else is left for git to judge."""
    return ref.startswith("refs/") and all(
        part and not part.startswith(".") and not part.endswith(".lock")
        for part in ref.split("/"))


def _packed_refs(common_dir: Path) -> dict[str, str] | None:
    try:
        data = (common_dir / "packed-refs").read_bytes()
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    found = {}
    for line in data.decode("utf-8", "surrogateescape").splitlines():
        if line[:1] in ("#", "^", ""):
            continue  # the header, and the peeled value of the tag above
        value, _, name = line.partition(" ")
        if not _REF_VALUE.fullmatch(value):
            return None
        found[name] = value
    return found


class Change(NamedTuple):
    """One path of a work-tree status (``xy`` is git's two status letters) or of a diff
    (``xy`` is one letter: A, M, D, T), with its new blob when a diff gives one."""

    path: str
    xy: str
    mode: str = ""
    blob: str = ""
    old_blob: str = ""


def status(git: Git) -> list[Change]:
    """The work tree's changes, untracked files each listed (ignored ones never).

    Asked with untracked folders folded (`-unormal`: a third faster than `-uall` on a
    10,000-file record, and nearly every status of a sync finds no new folder); the files
    of a new folder (a new topic, project or lease) are then listed by one more call."""
    out = git.run("status", "--porcelain=v1", "-z", "--untracked-files=normal",
                  "--no-renames", "--ignore-submodules").out
    changes, folders = [], []
    for item in split_z(out):
        if item[:2] == "??" and item.endswith("/"):
            folders.append(item[3:])
        else:
            changes.append(Change(item[3:], item[:2]))
    if folders:
        # ls-files takes no --pathspec-from-file before git 2.40: the folders go on the
        # command line while they fit well within its limit, else all are listed.
        few = sum(len(f) + 1 for f in folders) <= LIST_FOLDERS_UP_TO
        listed = git.run("--literal-pathspecs", "ls-files", "-z", "--others",
                         "--exclude-standard", *(["--", *folders] if few else [])).out
        changes += [Change(path, "??") for path in split_z(listed)
                    if few or path.startswith(tuple(folders))]
    return changes


def diff(git: Git, old: str, new: str) -> list[Change]:
    """What changed from commit ``old`` to ``new``, with blob ids, no rename detection."""
    out = git.run("diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", old,
                  new).out
    items = out.split(b"\0")
    changes = []
    i = 0
    while i + 1 < len(items):
        head = items[i].decode("ascii", "replace")
        if not head.startswith(":"):
            i += 1
            continue
        _, new_mode, old_blob, new_blob, letter = head[1:].split(" ")
        path = items[i + 1].decode("utf-8", "surrogateescape")
        changes.append(Change(path, letter[:1], new_mode, new_blob, old_blob))
        i += 2
    return changes


def merge_base(git: Git, a: str, b: str) -> str | None:
    done = git.run("merge-base", a, b, ok=(0, 1))
    return done.text or None


def is_ancestor(git: Git, a: str, b: str) -> bool:
    return git.run("merge-base", "--is-ancestor", a, b, ok=(0, 1)).code == 0


def blob_bytes(git: Git, commit: str, path: str) -> bytes:
    return git.run("cat-file", "blob", f"{commit}:{path}").out


def blob_start(git: Git, commit: str, path: str, limit: int) -> bytes:
    """At most the first ``limit`` bytes of a file of ``commit``: what a remote holds is
    read only as far as it is needed (its front matter), whatever its size."""
    return git.head("cat-file", "blob", f"{commit}:{path}", limit=limit)


def blob_sizes(git: Git, blobs: list[str]) -> list[int]:
    """The size of each blob, in bytes (0 for one the object store lacks)."""
    out = git.run("cat-file", "--batch-check=%(objectsize)",
                  input="".join(f"{b}\n" for b in blobs).encode()).text
    return [int(line) if line.isdigit() else 0 for line in out.splitlines()]


def tree_of(git: Git, commit: str) -> str:
    return git.out("rev-parse", f"{commit}^{{tree}}")


def require_clean_index(changes: list[Change]) -> None:
    unmerged = [c.path for c in changes if "U" in c.xy or c.xy in ("AA", "DD")]
    if unmerged:
        raise BadInput(
            f"the checkout is in the middle of a merge ({len(unmerged)} unmerged path(s), "
            f"such as {unmerged[0]})",
            hint="finish it (`git commit`) or abort it (`git merge --abort`), then sync",
        )

