"""A git repository planted inside a record, as anyone who writes the record's folder can
make one (a shared volume, a folder several people sync), and the git commands that would
run the programs its config names.

Threat model: the planter controls every byte under the record's root, so a folder there
(``notes/``) may hold its own ``.git`` whose config names a program for each way a git
command can be made to run one: a promisor remote with an object removed (any command that
reads the object fetches it, which runs ``remote.origin.uploadpack``), the upload-pack
itself (any fetch), a remote helper (``ext::``, allowed by ``protocol.ext.allow``),
``core.fsmonitor`` (a status), ``log.showSignature`` with ``gpg.program`` (a log of a
signed commit), ``diff.external`` (a patch) and ``core.hooksPath`` (a ref update). They
control nothing else: not the user's own repositories or git config, nor which commands
the user runs. Each program creates its own file in the markers folder, so a test holds
atlas to leaving that folder empty.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import NamedTuple

from support.git import git, git_env

# The file each planted program creates in the markers folder.
UPLOAD_PACK, EXT, FSMONITOR, GPG, EXTERNAL_DIFF, HOOK = (
    "upload-pack", "ext", "fsmonitor", "gpg", "external-diff", "hook")

SIGNATURE = """\
-----BEGIN PGP SIGNATURE-----

iQEzBAABCAAdFiEEplanted0000000000000000000000000000000000000000000000
=AAAA
-----END PGP SIGNATURE-----"""


class Case(NamedTuple):
    """A git command (as atlas might run it) and the planted program it would run."""

    name: str
    argv: tuple[str, ...]
    marker: str


# Each command, run by plain git in the planted repository, runs the program named.
CASES = [
    Case("lazy-fetch", ("log", "--all", "--name-only", "-z", "--no-show-signature", "--",
                        "todo.md"), UPLOAD_PACK),
    Case("fetch", ("fetch", "--quiet", "--no-tags", "origin"), UPLOAD_PACK),
    Case("remote-helper", ("ls-remote", "evil"), EXT),
    Case("fsmonitor", ("status", "--porcelain=v1", "-z"), FSMONITOR),
    Case("signature", ("log", "-1", "--format=%H"), GPG),
    Case("external-diff", ("diff",), EXTERNAL_DIFF),
    Case("hook", ("update-ref", "refs/heads/other", "HEAD"), HOOK),
]


class Planted(NamedTuple):
    repo: Path
    markers: Path

    def fired(self) -> list[str]:
        """The planted programs that ran since the last ``clear``."""
        return sorted(os.listdir(self.markers))

    def clear(self) -> None:
        for name in os.listdir(self.markers):
            os.unlink(self.markers / name)


def _program(path: Path, marker: Path) -> Path:
    path.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    path.chmod(0o755)
    return path


def plant(repo: Path, markers: Path) -> Planted:
    """A repository at ``repo`` (a folder of a record, typically), its programs' markers
    in ``markers`` (outside it, created empty). Its history: todo.md in two commits, the
    first one's tree missing (a partial clone's), then a signed commit on top; todo.md is
    changed in the work tree."""
    env = git_env()
    markers.mkdir(parents=True, exist_ok=True)
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main", env=env)
    (repo / "todo.md").write_text("one\n")
    git(repo, "add", "todo.md", env=env)
    git(repo, "commit", "-q", "-m", "one", env=env)
    gone = git(repo, "rev-parse", "HEAD^{tree}", env=env)
    (repo / "todo.md").write_text("two\n")
    git(repo, "commit", "-q", "-am", "two", env=env)
    now = int(time.time())  # recent, as the guard's window asks
    tree, parent = git(repo, "rev-parse", "HEAD^{tree}", "HEAD", env=env).split()
    signed = (f"tree {tree}\nparent {parent}\n"
              f"author m <m@example.invalid> {now} +0000\n"
              f"committer m <m@example.invalid> {now} +0000\n"
              "gpgsig " + SIGNATURE.replace("\n", "\n ") + "\n\nsigned\n")
    head = git(repo, "hash-object", "-t", "commit", "-w", "--stdin", input=signed, env=env)
    git(repo, "update-ref", "refs/heads/main", head, env=env)
    (repo / "todo.md").write_text("three\n")
    os.unlink(repo / ".git" / "objects" / gone[:2] / gone[2:])
    tools = repo / ".git" / "tools"
    hooks = repo / ".git" / "planted-hooks"
    tools.mkdir()
    hooks.mkdir()
    gpg = _program(tools / GPG, markers / GPG)
    diff = _program(tools / EXTERNAL_DIFF, markers / EXTERNAL_DIFF)
    _program(hooks / "reference-transaction", markers / HOOK)
    settings = [
        ("core.repositoryFormatVersion", "1"),
        ("extensions.partialClone", "origin"),
        ("remote.origin.url", str(repo)),
        ("remote.origin.promisor", "true"),
        ("remote.origin.uploadpack", f"touch '{markers / UPLOAD_PACK}'; git-upload-pack"),
        ("remote.evil.url", f"ext::sh -c touch% {markers / EXT}"),
        ("protocol.ext.allow", "always"),
        ("core.fsmonitor", f"touch '{markers / FSMONITOR}'; false"),
        ("log.showSignature", "true"),
        ("gpg.program", str(gpg)),
        ("diff.external", str(diff)),
        ("core.hooksPath", str(hooks)),
    ]
    for key, value in settings:
        git(repo, "config", key, value, env=env)
    return Planted(repo, markers)
