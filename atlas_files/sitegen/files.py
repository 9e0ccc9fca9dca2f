"""The output folder and the files in it.

The folder is ours alone: it carries a marker file, and a folder that exists, is not
empty and lacks the marker is refused, because writing the docs deletes pages that no
longer exist. It must lie outside the record (the record is never written to). Files
whose bytes did not change are not rewritten, so `atlas site serve` rebuilds only when
the record changed.

Every write and every delete stays inside the folder. The folder may sit on a volume
others write to (by default it lies beside the record), and a symlink planted in it
would turn a page write into an overwrite of the user's file, or MkDocs' cleaning of
``site/`` into the deletion of a folder elsewhere. So a folder that is a symlink, or
that holds one (or a pipe, a socket, a device), is refused before anything is written;
and files are then reached only through folder descriptors opened without following
symlinks, written to a temp file and renamed into place (a rename replaces a symlink,
it never writes through it), so one planted during the build is not followed either.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import time
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_files.facts.errors import BadInput

if TYPE_CHECKING:
    from atlas_files.storage.record import Record

MARKER = ".atlas-site"
MARKER_TEXT = (
    "This folder is written by `atlas site build`: mkdocs.yml, docs/ and overrides/ are\n"
    "generated from the record and site/ is the built site. Everything here is replaced\n"
    "on the next build; do not edit it by hand.\n"
)
TEMP_PREFIX = ".atlas-tmp-"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW
# Non-blocking: opening a named pipe for reading would otherwise wait for a writer.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW


def default_out_dir(record: Record) -> Path:
    """``<parent>/<record name>-site``: beside the record, never inside it."""
    root = Path(os.path.realpath(record.root))
    return root.parent / f"{root.name}-site"


def _link_hint(out_dir: str | os.PathLike[str]) -> str:
    return (f"remove it (everything in {out_dir} is generated and made again by the "
            "build), or pass another --out")


def prepare_out_dir(record: Record, out_dir: str | os.PathLike[str]) -> Path:
    given = Path(out_dir)
    if given.is_symlink():
        raise BadInput(
            f"{out_dir} is a symlink (to {os.readlink(given)}); the site is written only "
            "into a real folder, never through a symlink",
            hint="pass the folder itself as --out, or remove the symlink",
        )
    out = Path(os.path.realpath(out_dir))
    root = Path(os.path.realpath(record.root))
    if out == root or root in out.parents or out in root.parents:
        raise BadInput(
            f"{out_dir} {'is inside' if root in out.parents or out == root else 'holds'} "
            "the record; the site must be written outside it",
            hint=f"pass --out with a folder beside the record, e.g. {default_out_dir(record)}",
        )
    if os.path.lexists(out):
        if not out.is_dir():
            raise BadInput(f"{out_dir} exists and is not a folder", hint="choose another --out")
        marker = out / MARKER
        if marker.is_symlink():
            raise BadInput(
                f"{out_dir} holds a symlink, {MARKER} -> {os.readlink(marker)}; "
                "`atlas site build` never writes or deletes through a symlink",
                hint=_link_hint(out_dir),
            )
        if any(out.iterdir()) and not marker.is_file():
            raise BadInput(
                f"{out_dir} is not empty and was not written by `atlas site build`; "
                "building there would replace its files",
                hint="choose an empty or new folder for --out",
            )
        _refuse_strange_files(out, out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with Writer(out) as writer:
        writer.write(MARKER, MARKER_TEXT)
    return out


def _refuse_strange_files(out: Path, out_dir: str | os.PathLike[str]) -> None:
    """Refuse a folder holding a symlink or anything but files and folders. The built
    site's own contents are not walked: ``site/`` is replaced whole, never written into
    (see ``swap_site``). Each entry's type comes from its folder's listing (no stat per
    file where the file system gives it): a rebuild walks thousands of entries."""
    stack = [(str(out), "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            listing = list(os.scandir(folder))
        except OSError:  # gone since it was listed, or not a folder any more
            continue
        for entry in listing:
            rel = prefix + entry.name
            try:
                if entry.is_symlink():
                    raise BadInput(
                        f"{out_dir} holds a symlink, {rel} -> {os.readlink(entry.path)}; "
                        "`atlas site build` never writes or deletes through a symlink",
                        hint=_link_hint(out_dir),
                    )
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if rel != "site":
                    stack.append((entry.path, rel + "/"))
            elif not is_file:
                raise BadInput(
                    f"{out_dir} holds {rel}, which is neither a file nor a folder "
                    "(a pipe, socket or device); `atlas site build` never opens one",
                    hint=_link_hint(out_dir),
                )


def _refused_link(path: Path) -> BadInput:
    return BadInput(
        f"{path} became a symlink or a non-folder during the build; nothing was written "
        "through it",
        hint="something else is writing into the site's folder; stop it and build again",
    )


class Writer:
    """Writes files under ``root``, skipping unchanged ones; ``prune`` removes the rest.

    Folders are opened one component at a time without following symlinks, and kept open
    for the Writer's life (``close``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.written: set[Path] = set()
        self._fds: dict[str, int] = {}

    def _folder(self, rel: str, create: bool = True) -> int:
        """A descriptor of the folder ``rel`` ("" for the root), made if missing."""
        fd = self._fds.get(rel)
        if fd is not None:
            return fd
        if not rel:
            os.makedirs(self.root, exist_ok=True)
            fd = self._open_dir(str(self.root), None, self.root)
        else:
            parent, _, name = rel.rpartition("/")
            at = self._folder(parent, create)
            try:
                fd = self._open_dir(name, at, self.root / rel)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=at)
                fd = self._open_dir(name, at, self.root / rel)
        self._fds[rel] = fd
        return fd

    @staticmethod
    def _open_dir(name: str, at: int | None, shown: Path) -> int:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=at)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _refused_link(shown) from None
            raise

    def read(self, rel: str) -> bytes | None:
        """The bytes of the regular file ``rel``; None if it is missing or anything else."""
        folder, _, name = rel.rpartition("/")
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=self._folder(folder, create=False))
        except (OSError, BadInput):
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(fd)

    def stat(self, rel: str) -> tuple[int, int] | None:
        """(size, mtime_ns) of the regular file ``rel``; None if it is missing or else."""
        folder, _, name = rel.rpartition("/")
        try:
            st = os.stat(name, dir_fd=self._folder(folder, create=False),
                         follow_symlinks=False)
        except (OSError, BadInput):
            return None
        return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None

    def keep(self, rel: str, expect: tuple[int, int]) -> bool:
        """Keep ``rel`` as it is (``prune`` spares it) if it is still the file an earlier
        build wrote, by size and modification time; False if it is not."""
        if self.stat(rel) != expect:
            return False
        self.written.add(self.root / rel)
        return True

    def write(self, rel: str, data: str | bytes) -> None:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self.written.add(self.root / rel)
        if self.read(rel) != raw:
            self.replace(rel, raw)

    def replace(self, rel: str, raw: bytes) -> None:
        """Write ``raw`` to ``rel`` whatever is there now."""
        folder, _, name = rel.rpartition("/")
        at = self._folder(folder)
        # A temp file renamed into place: atomic for a watching `mkdocs serve`, and the
        # rename replaces whatever entry is there without following it.
        tmp = f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644,
                     dir_fd=at)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
            os.replace(tmp, name, src_dir_fd=at, dst_dir_fd=at)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=at)
            raise

    def copy_tree(self, source: Traversable, rel: str) -> None:
        for item in source.iterdir():
            if item.is_dir():
                self.copy_tree(item, f"{rel}/{item.name}")
            elif not item.name.startswith("."):
                self.write(f"{rel}/{item.name}", item.read_bytes())

    def prune(self) -> None:
        """Remove every file not written by this Writer, then the empty folders; a
        symlink is removed as a name, never followed."""
        root_fd = self._folder("")
        for folder, dirs, files, at in os.fwalk(".", topdown=False, dir_fd=root_fd):
            for name in files:
                path = self.root / os.path.normpath(os.path.join(folder, name))
                if path not in self.written:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name, dir_fd=at)
            for name in dirs:
                try:
                    os.rmdir(name, dir_fd=at)  # only succeeds when empty
                except NotADirectoryError:  # a symlink to a folder: never ours
                    os.unlink(name, dir_fd=at)
                except OSError:
                    pass

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


BUILD_PREFIX = ".atlas-build-"
DEBRIS_AGE_S = 3600.0


def new_site_dir(out: Path) -> Path:
    """A new, empty folder in ``out`` for MkDocs to build into (see ``swap_site``); the
    debris of builds that died an hour or more ago is removed first."""
    with os.scandir(out) as entries:
        for entry in entries:
            if entry.name.startswith(BUILD_PREFIX):
                with contextlib.suppress(OSError):
                    if time.time() - entry.stat(follow_symlinks=False).st_mtime > DEBRIS_AGE_S:
                        discard(Path(entry.path))
    path = out / f"{BUILD_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    os.mkdir(path)
    return path


def swap_site(out: Path, built: Path) -> Path:
    """Put the folder MkDocs just built in place of ``out/site``. MkDocs never cleans or
    writes into a folder that was there before the build, so a symlink planted in the old
    site is removed as a name, never followed."""
    site = out / "site"
    old = None
    if os.path.lexists(site):
        old = out / f"{BUILD_PREFIX}old-{os.getpid()}-{os.urandom(4).hex()}"
        os.rename(site, old)
    os.rename(built, site)
    if old is not None:
        discard(old)
    return site


def discard(path: Path) -> None:
    """Remove ``path``: a symlink or file as a name, a folder with everything in it,
    never following a symlink (shutil.rmtree works through folder descriptors)."""
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)
