"""The three storage primitives every record file is written with.

* ``publish_exclusive``: a new immutable file (a version, an entry, a lease generation).
  Temp file in the same folder, fsync, then ``os.link`` onto the final name, which fails
  if the name exists. Exactly one writer can create a given name; a plain rename would
  silently overwrite, which is why it is never used here.
* ``replace_atomic``: a live row (telemetry, receipts). Temp file, fsync, ``os.replace``.
* ``fsync_dir``: make the new directory entry itself durable.

Inside a record each of these runs in a ``Folder`` reached from the record's ``OpenRoot``,
the descriptor its command opened at the start: every name is resolved relative to a held
folder descriptor (``dir_fd``), never through the record's path again, and the record is
verified to be where it was, still holding atlas.yaml, just before the name is published.

A crash at any point leaves either nothing or a complete file, plus perhaps a temp file.
Temp files start with ``TEMP_PREFIX`` and name the host and process that made them, so a
later write can tell debris of a dead process from a write in flight.

Every file is opened here with O_NOFOLLOW and checked to be a plain file once open: a
symlink planted in the record (a lock, a version) would otherwise make a write create or a
read open a file anywhere the user can reach, and a named pipe would hang a reader.
"""

from __future__ import annotations

import binascii
import contextlib
import errno
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path, PurePath

from atlas_files.facts import layout

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX: portalocker does the locking
    fcntl = None  # type: ignore[assignment]
from atlas_files.facts.errors import DamagedFile, RecordGone

TEMP_PREFIX = layout.TEMP_PREFIX
# Debris from another host (whose processes we cannot see) is removed only when old.
FOREIGN_TEMP_AGE_S = 3600.0
# The largest cache or stamp file atlas keeps for itself (a version line, a journal).
CACHE_LIMIT = 1 << 20
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_PATH_ONLY = getattr(os, "O_PATH", 0)
# Opening a named pipe without O_NONBLOCK waits for a writer that never comes; plain files
# ignore the flag.
_OPEN_FLAGS = _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class NotAFile(OSError):
    """Something other than a plain file lies where a record file belongs."""


class FileTooLarge(OSError):
    """A record file larger than its reader agreed to load."""

    def __init__(self, path: Path | str, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, os.strerror(errno.EFBIG), str(path))
        self.size = size
        self.limit = limit


def _what_is(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a plain file"


def _require_file(fd: int, path: Path | str) -> os.stat_result:
    """The stat of the open ``fd``; raises (and closes nothing) if it is no plain file."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise not_a_file(st.st_mode, path)
    return st


def not_a_file(mode: int, path: Path | str) -> OSError:
    """What ``damage`` says of something (of ``mode``) where a plain file belongs."""
    if stat.S_ISDIR(mode):
        return IsADirectoryError(errno.EISDIR, "it is a folder, not a file", str(path))
    return NotAFile(errno.EINVAL, f"it is {_what_is(mode)}, not a file", str(path))


def damage(path: Path | str, exc: OSError, kind: str = "file") -> DamagedFile:
    """How a record file that cannot be opened as a plain file is reported, path first."""
    if exc.errno == errno.ELOOP:
        return DamagedFile(
            f"{path} is a symlink; a record {kind} is a plain file, and the record never "
            "follows a symlink (it may lead anywhere)",
            hint="replace the symlink with the file itself; `atlas check` lists such problems",
        )
    if isinstance(exc, FileTooLarge):
        return DamagedFile(
            f"{path} is {exc.size} bytes, more than this record reads in one {kind} "
            f"({exc.limit} bytes); refusing to load it",
            hint="atlas never writes a body over the record's body_limit, so this file was "
            "made by hand; raise body_limit in atlas.yaml to read it, or run `atlas check`"
            if "version" in kind else "atlas never writes a file this large, so it was "
            "made by hand; move it out of the record (`atlas check` lists such problems)",
        )
    if isinstance(exc, IsADirectoryError | NotAFile):
        reason = "it is a folder" if exc.errno == errno.EISDIR else exc.strerror
        return DamagedFile(
            f"{path} should be a {kind}, but {reason}",
            hint="move it out of the record; `atlas check` lists what else is wrong",
        )
    return DamagedFile(f"{path} cannot be read: {exc.strerror or exc}",
                       hint="check the file's permissions; run `atlas check`")


@cache
def _host_tag() -> str:
    """Who may judge a temp file's pid: the same host name, boot and pid namespace.

    Two containers can share a host name yet number their processes apart; without the
    namespace in the tag, one would take the other's write in flight for debris.
    """
    parts = [os.uname().nodename]
    with contextlib.suppress(OSError), open("/proc/sys/kernel/random/boot_id") as fh:
        parts.append(fh.read().strip())
    with contextlib.suppress(OSError):
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    # A checksum, not a digest: the tag tells machines apart, it guards nothing, and
    # hashlib's OpenSSL start (2-3 ms) is more than a read that writes a receipt costs.
    # (A tag of another scheme, from an older atlas, reads as another host's: its temp
    # files are then left alone, never taken for debris.)
    return f"{binascii.crc32('|'.join(parts).encode()):08x}"


def _temp_name() -> str:
    return f"{TEMP_PREFIX}{_host_tag()}-{os.getpid()}-{os.urandom(4).hex()}"


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | _DIRECTORY)
    except OSError:  # some platforms cannot open a folder; nothing more to make durable
        return
    try:
        _fsync_quietly(fd)
    finally:
        os.close(fd)


def _fsync_quietly(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError:  # a folder some file systems cannot fsync; nothing more to make durable
        pass


_journal = threading.local()


@contextlib.contextmanager
def journal() -> Iterator[list[Path]]:
    """The files this thread publishes (publish_exclusive) while inside, in order: what a
    synced write commits without asking git what changed (a `git status` fewer: on a
    10,000-file record, ~20 ms of every synced write)."""
    outer = getattr(_journal, "paths", None)
    paths: list[Path] = []
    _journal.paths = paths
    try:
        yield paths
    finally:
        _journal.paths = outer


class OpenRoot:
    """A record's folder as a command opened it: a descriptor held from the start.

    Every write into the record walks from this descriptor, one folder at a time
    (``openat`` with O_NOFOLLOW), or uses a folder an earlier walk reached while the path
    still names that very folder (``_held_folder``), and never goes through the record's
    path again: a record moved, deleted or replaced while the command runs cannot turn
    the write into a stray folder somewhere else, and a symlink planted mid-write cannot
    redirect it. Before each write, ``verify`` refuses (RecordGone, nothing written) when
    the folder no longer holds its ``marker`` (atlas.yaml) or when the path the record was
    opened by no longer leads to it: the reads that decided the write went through that
    path, so a write into the moved folder could act on what another folder said.
    """

    __slots__ = ("path", "fd", "marker", "_id", "_held", "_held_lock")

    # How many folders a write walked to stay open for the next write into each.
    HELD_FOLDERS = 32

    def __init__(self, path: Path, marker: str) -> None:
        """Open ``path`` (which may itself be reached through a symlink: the user named
        it). Raises FileNotFoundError, NotADirectoryError or PermissionError."""
        try:
            fd = os.open(path, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        except PermissionError:
            # A folder one may enter but not list: O_PATH still walks and creates in it.
            if not _PATH_ONLY:
                raise
            fd = os.open(path, _PATH_ONLY | _DIRECTORY | _CLOEXEC)
        self.path = path
        self.fd = fd
        self.marker = marker
        st = os.fstat(fd)
        self._id = (st.st_dev, st.st_ino)
        self._held: dict[tuple[str, ...], tuple[int, int, int]] = {}
        self._held_lock = threading.Lock()

    def __del__(self, _close: Callable[[int], None] = os.close) -> None:
        # At the interpreter's exit module globals may already be gone: only what was
        # bound at definition is used here.
        root, self.fd = getattr(self, "fd", -1), -1
        held = getattr(self, "_held", {})
        for fd in [root, *(entry[0] for entry in held.values())]:
            if fd >= 0:
                try:
                    _close(fd)
                except OSError:
                    pass
        held.clear()

    def close(self) -> None:
        self.__del__()

    def holds_marker(self) -> bool:
        """Whether the opened folder holds its marker (a file, or a symlink in its place:
        whoever reads the marker decides what a symlink there means)."""
        try:
            os.stat(self.marker, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return False
        return True

    def verify(self) -> None:
        """Refuse (RecordGone) a write into a record that is gone, moved or replaced."""
        gone = self.gone()
        if gone is not None:
            raise gone

    def gone(self) -> RecordGone | None:
        """What happened to the record since it was opened, or None if it is as it was:
        also what explains a read that failed because the record's path leads nowhere."""
        if self.fd < 0 or not self.holds_marker():
            return RecordGone(
                f"the record at {self.path} is gone: the folder this command opened no "
                f"longer holds {self.marker} (it was deleted while the command ran); nothing "
                "was written after that",
                hint="restore the record (from git, if it is kept in one), or point --record "
                "at another, then run the command again",
            )
        try:
            here = os.stat(self.path)
            same = (here.st_dev, here.st_ino) == self._id
        except OSError:
            same = False
        if same:
            return None
        now = self.lies_at()
        where = f" (it now lies at {now})" if now else ""
        return RecordGone(
            f"the record at {self.path} was moved or replaced while this command ran"
            f"{where}; nothing was written after that",
            hint="run the command again, with --record naming where the record lies now",
        )

    def lies_at(self) -> str | None:
        """Where the opened folder lies now, where the system can say (Linux)."""
        try:
            now = os.readlink(f"/proc/self/fd/{self.fd}")
        except OSError:
            return None
        return None if now.endswith(" (deleted)") or not now.startswith("/") else now

    def read(self, name: str, limit: int | None = None) -> bytes:
        """The plain file ``name`` in the record's folder itself (see ``read_nofollow``)."""
        return read_nofollow(name, limit, dir_fd=self.fd)

    def parts_of(self, path: Path | str) -> tuple[str, ...]:
        """The folders from the root down to ``path``, which must lie under it."""
        root = PurePath(self.path).parts
        parts = PurePath(path).parts
        if parts[: len(root)] != root or any(p in ("..", ".") for p in parts[len(root):]):
            raise ValueError(f"{path} does not lie in the record at {self.path}")
        return parts[len(root):]

    def open_folder(self, folder: Path | str, *, create: bool = False) -> Folder:
        """``folder`` (under the root), walked from the root's descriptor without following
        a symlink; with ``create``, each missing folder is made (and made durable) on the
        way, never outside the opened record. The record is verified before a folder is
        made and before each write in the folder (the Folder's primitives), not here:
        opening changes nothing, and each verify is two round trips on a network volume."""
        parts = self.parts_of(folder)
        if parts and not create:
            fd = self._held_folder(parts)
            if fd >= 0:
                return Folder(Path(folder), fd, self)
        fd = os.dup(self.fd) if not parts else -1
        here = self.fd
        for i, part in enumerate(parts):
            try:
                fd = _open_child(here, part, self.verify if create else None)
            except OSError as exc:
                raise _walk_failure(exc, Path(self.path, *parts[: i + 1])) from None
            finally:
                if here != self.fd:
                    os.close(here)
            here = fd
        if parts:
            self._hold(parts, fd)
        return Folder(Path(folder), fd, self)

    def _held_folder(self, parts: tuple[str, ...]) -> int:
        """A new descriptor of the folder at ``parts`` as an earlier walk opened it, if
        the path still names that very folder (-1 otherwise): one stat of the path in
        place of a walk that opens each folder on the way (on a network volume, two round
        trips a folder). A folder swapped, moved, or reached through a symlink planted
        since names another inode and is walked afresh; one reached through a symlink to
        itself is the folder that was walked, and the write lands where it would have."""
        with self._held_lock:
            held = self._held.get(parts)
            if held is None:
                return -1
            fd, dev, ino = held
            try:
                st = os.stat(os.sep.join(parts), dir_fd=self.fd, follow_symlinks=False)
                if (st.st_dev, st.st_ino) == (dev, ino):
                    return os.dup(fd)
            except OSError:
                pass
            del self._held[parts]
            os.close(fd)
            return -1

    def _hold(self, parts: tuple[str, ...], fd: int) -> None:
        st = os.fstat(fd)
        with self._held_lock:
            if parts in self._held:
                return
            if len(self._held) >= self.HELD_FOLDERS:
                oldest = next(iter(self._held))
                os.close(self._held.pop(oldest)[0])
            self._held[parts] = (os.dup(fd), st.st_dev, st.st_ino)


def _open_child(parent: int, name: str, create: Callable[[], None] | None) -> int:
    """Open the folder ``name`` in ``parent``; with ``create`` (the record's verify), make
    it if missing, once the record is verified to be where it was."""
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        if create is None:
            raise
    create()
    with contextlib.suppress(FileExistsError):  # another writer made it first
        os.mkdir(name, 0o777, dir_fd=parent)
        _fsync_quietly(parent)  # the new folder's name is durable before anything in it
    return os.open(name, flags, dir_fd=parent)


def _walk_failure(exc: OSError, path: Path) -> Exception:
    """A folder on the way down that is a symlink or a file says so, naming itself."""
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        try:
            link = stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            link = False
        if link:
            return DamagedFile(
                f"{path} is a symlink; the record never follows a symlinked folder (a "
                "write through it would land in another folder); nothing was written",
                hint="replace the symlink with a real folder (or remove it); `atlas check` "
                "lists such problems",
            )
        return NotADirectoryError(errno.ENOTDIR, "it should be a folder, but something "
                                  "else is in its place", str(path))
    exc.filename = str(path)
    return exc


class Folder:
    """One open folder: the primitives below name their files relative to its descriptor,
    so the temp file, the published name and the fsync all land in this very folder, even
    if its path changes meanwhile. Close it (or use it in ``with``) when done."""

    __slots__ = ("path", "fd", "root")

    def __init__(self, path: Path, fd: int, root: OpenRoot | None = None) -> None:
        self.path = path
        self.fd = fd
        self.root = root

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def _verify(self) -> None:
        if self.root is not None:
            self.root.verify()

    def listdir(self) -> list[str]:
        return os.listdir(self.fd)

    def fsync(self) -> None:
        _fsync_quietly(self.fd)

    def _write_temp(self, data: bytes, mode: int, durable: bool = True) -> str:
        tmp = _temp_name()
        # Made with its final mode (the data is what will be published with that mode
        # anyway) and chmodded only where the umask took bits away: the attributes of a
        # file just made are at hand, an fchmod is a round trip on a network file system.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, mode,
                     dir_fd=self.fd)
        try:
            # Asked before the data is written: a network file system answers from what
            # the create returned, where after a write it must first send the data.
            if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            self._unlink_quietly(tmp)
            raise
        os.close(fd)
        return tmp

    def _unlink_quietly(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=self.fd)

    def publish_exclusive(self, name: str, data: bytes, *, mode: int = 0o444) -> Path:
        """Create ``name`` with ``data`` if and only if it does not exist yet (see the
        module function of the same name)."""
        for attempt in (1, 2):
            tmp = self._write_temp(data, mode)
            try:
                # Checked last, once the data is safe in the folder: the smallest window.
                self._verify()
                try:
                    os.link(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd,
                            follow_symlinks=False)
                except FileExistsError:
                    # Over NFS a LINK whose reply was lost is retried and reports "exists"
                    # for the link it made itself: then the name is ours, not another's.
                    if not self._same(tmp, name):
                        raise
                except FileNotFoundError:
                    # Our temp file was taken for debris by a cleaner that misjudged it;
                    # write it again, once.
                    if attempt == 2:
                        raise
                    continue
            finally:
                self._unlink_quietly(tmp)
            break
        self.fsync()
        path = self.path / name
        paths = getattr(_journal, "paths", None)
        if paths is not None:
            paths.append(path)
        return path

    def _same(self, a: str, b: str) -> bool:
        try:
            sa = os.stat(a, dir_fd=self.fd, follow_symlinks=False)
            sb = os.stat(b, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return False
        return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)

    def replace_atomic(self, name: str, data: bytes, *, mode: int = 0o644,
                       durable: bool = True) -> Path:
        """Replace the live row ``name`` (see the module function of the same name)."""
        tmp = self._write_temp(data, mode, durable)
        try:
            self._verify()
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            self._unlink_quietly(tmp)
            raise
        if durable:
            self.fsync()
        return self.path / name

    def touch(self, name: str, times: tuple[float, float] | None = None, *,
              mode: int = 0o644) -> None:
        """Make the stamp ``name`` (empty) if missing and set its times (now by default):
        never through a symlink, never on anything but a plain file. A stamp in place of
        which lies a symlink or something else is no stamp: it is replaced by one."""
        for attempt in (1, 2):
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | _OPEN_FLAGS, mode,
                             dir_fd=self.fd)
            except OSError as exc:
                # ENXIO: a named pipe with no reader, which a non-blocking open refuses.
                if attempt == 2 or exc.errno not in (errno.ELOOP, errno.ENXIO):
                    raise
                self.replace_atomic(name, b"", mode=mode, durable=False)
                continue
            try:
                st = os.fstat(fd)
                if stat.S_ISREG(st.st_mode):
                    os.utime(fd, times)
                    return
            finally:
                os.close(fd)
            if attempt == 2:
                raise not_a_file(st.st_mode, self.path / name)
            self.replace_atomic(name, b"", mode=mode, durable=False)

    def clean_debris(self, names: list[str] | None = None) -> list[Path]:
        """Remove temp files here left by crashed writers; returns what was removed.
        ``names`` is the folder's listing when the caller has just read it."""
        removed: list[Path] = []
        if names is None:
            try:
                names = self.listdir()
            except OSError:
                return removed
        for name in names:
            if is_temp(name):
                try:
                    mtime = os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mtime
                except OSError:
                    continue
                if _is_debris(name, mtime, FOREIGN_TEMP_AGE_S):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name, dir_fd=self.fd)
                        removed.append(self.path / name)
        return removed

    @contextlib.contextmanager
    def locked(self, name: str, wait_s: float | None = None, *,
               make: bool = True) -> Iterator[None]:
        """Hold the lock file ``name`` here (see the module function ``locked``); the
        record is verified before the lock file is made, not when it is there already.
        Without ``make``, FileNotFoundError if it is not there: nothing is written."""
        with _locked_at(self.path / name, name, self.fd, wait_s,
                        self._verify if make else _refuse_to_make):
            yield


def open_folder(folder: Path | str, *, within: OpenRoot | None = None,
                create: bool = False) -> Folder:
    """``folder``, open for the primitives: walked from ``within`` (the record the command
    opened) when given, else opened by its path (made first with ``create``)."""
    if within is not None:
        return within.open_folder(folder, create=create)
    if create:
        os.makedirs(folder, exist_ok=True)
    return Folder(Path(folder), os.open(folder, os.O_RDONLY | _DIRECTORY | _CLOEXEC))


def make_folders(folder: Path | str, *, within: OpenRoot | None = None) -> Path:
    """Make ``folder`` and every missing folder above it (inside ``within``'s record)."""
    open_folder(folder, within=within, create=True).close()
    return Path(folder)


def publish_exclusive(path: Path, data: bytes, *, mode: int = 0o444,
                      within: OpenRoot | None = None) -> Path:
    """Create ``path`` with ``data`` if and only if it does not exist yet.

    Raises FileExistsError when another writer created it first; nothing is changed then.
    The published file is read-only (``mode``) so an editor warns before an in-place edit.
    With ``within``, the folder is reached from the record's held descriptor and the
    record is verified first (RecordGone).
    """
    with open_folder(path.parent, within=within) as folder:
        return folder.publish_exclusive(path.name, data, mode=mode)


def replace_atomic(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True,
                   within: OpenRoot | None = None) -> Path:
    """Replace the live row at ``path``: a reader sees the old file or the new, never part.

    ``durable=False`` skips the fsyncs: a process crash still leaves the old row or the new
    one, but a power cut may lose the update (or, on some file systems, empty the row).
    Only for rows whose loss errs on the safe side, such as read receipts.
    """
    with open_folder(path.parent, within=within) as folder:
        return folder.replace_atomic(path.name, data, mode=mode, durable=durable)


def touch(path: Path, times: tuple[float, float] | None = None, *,
          within: OpenRoot | None = None) -> None:
    """Make the stamp file ``path`` if missing and set its times (see ``Folder.touch``):
    a stamp whose only content is its time, such as when a command last looked."""
    with open_folder(path.parent, within=within) as folder:
        folder.touch(path.name, times)


def read_cache(path: Path, limit: int = CACHE_LIMIT, *,
               within: OpenRoot | None = None) -> bytes | None:
    """The bytes of the cache file at ``path``; None where there is none to believe: it
    is missing, a symlink or anything but a plain file, over ``limit`` bytes, or cannot be
    read. A cache only ever costs time: whatever lies in its place is rebuilt."""
    try:
        if within is None:
            return read_nofollow(path, limit)
        with open_folder(path.parent, within=within) as folder:
            return read_nofollow(path.name, limit, dir_fd=folder.fd)
    except (OSError, DamagedFile):
        return None


def keep_cache(path: Path, data: bytes, *, within: OpenRoot | None = None) -> None:
    """Replace the cache file at ``path`` with ``data`` (a symlink in its place is replaced,
    never followed); a cache that cannot be kept is only a cost, so nothing is raised."""
    with contextlib.suppress(OSError, DamagedFile):
        replace_atomic(path, data, durable=False, within=within)


def make_read_only(path: Path | str) -> None:
    """Take the write bits off the plain file at ``path`` (never through a symlink): how a
    published file that arrived another way than ``publish_exclusive`` (a sync's checkout)
    is left as one written here is. FileNotFoundError, ELOOP or NotAFile as read_nofollow."""
    fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
    try:
        mode = stat.S_IMODE(_require_file(fd, path).st_mode)
        if mode & 0o222:
            os.fchmod(fd, mode & ~0o222)
    finally:
        os.close(fd)


def file_mtime(path: Path | str, *, dir_fd: int | None = None) -> float | None:
    """When the plain file at ``path`` last changed; None if there is none, or a symlink
    or anything but a plain file lies there (a stamp's time is never read through one)."""
    try:
        st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return st.st_mtime if stat.S_ISREG(st.st_mode) else None


def read_nofollow(path: Path | str, limit: int | None = None, *,
                  dir_fd: int | None = None) -> bytes:
    """The bytes of the plain file at ``path``, refusing to follow a symlink in its last part.

    A record never follows a symlink; folders are checked by Record.path, and every record
    file is opened through here. Raises FileNotFoundError; OSError (ELOOP) for a symlink;
    IsADirectoryError or NotAFile (both naming the path) for anything but a plain file;
    FileTooLarge when the file is over ``limit`` bytes, judged before reading any of it.
    ``damage`` turns any of these into the DamagedFile a user sees. With ``dir_fd``,
    ``path`` is a name in that open folder.
    """
    return read_with_stat(path, limit, dir_fd=dir_fd)[0]


def read_start(path: Path | str, size: int, *, dir_fd: int | None = None) -> bytes:
    """At most the first ``size`` bytes of the plain file at ``path`` (a front matter,
    say), opened as ``read_nofollow`` opens it: the rest is never read."""
    fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS, dir_fd=dir_fd)
    try:
        _require_file(fd, path)
        return os.read(fd, size)
    finally:
        os.close(fd)


def read_with_stat(path: Path | str, limit: int | None = None, *,
                   dir_fd: int | None = None) -> tuple[bytes, os.stat_result]:
    """``read_nofollow``, with the file's stat as it was opened (one open, one fstat)."""
    fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS, dir_fd=dir_fd)
    try:
        st = _require_file(fd, path)
        if limit is not None and st.st_size > limit:
            raise FileTooLarge(path, st.st_size, limit)
        return read_upto(fd, limit, path), st
    finally:
        os.close(fd)


def read_upto(fd: int, limit: int | None, what: Path | str) -> bytes:
    """Everything ``fd`` gives until its end, but never more than ``limit`` bytes plus
    one: past the limit, FileTooLarge (naming ``what``) without reading the rest. For any
    descriptor: a file that grows while read, a pipe, stdin, a device such as /dev/zero.
    A pipe or terminal opened without O_NONBLOCK is waited on, as a reader of stdin must."""
    # Read at most one byte past the limit: a file that grows after a stat is still
    # refused, and never read whole.
    cap = None if limit is None else limit + 1
    chunks = []
    total = 0
    while cap is None or total < cap:
        try:
            chunk = os.read(fd, 1 << 20 if cap is None else min(1 << 20, cap - total))
        except BlockingIOError:  # a pipe opened non-blocking: wait for it
            _wait_readable(fd)
            continue
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if limit is not None and total > limit:
        raise FileTooLarge(what, total, limit)
    return b"".join(chunks)


def _wait_readable(fd: int) -> None:
    import select  # noqa: PLC0415 - only a non-blocking pipe needs it

    select.select([fd], [], [])


def is_temp(name: str) -> bool:
    return name.startswith(TEMP_PREFIX)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_debris(name: str, mtime: float, max_age_s: float) -> bool:
    rest = name[len(TEMP_PREFIX):]
    host, _, tail = rest.partition("-")
    pid_text = tail.partition("-")[0]
    if time.time() - mtime > max_age_s:
        return True
    if host == _host_tag() and pid_text.isdigit():
        return not _pid_alive(int(pid_text))
    return False


def temp_is_debris(path: Path, *, max_age_s: float = FOREIGN_TEMP_AGE_S) -> bool:
    """True if the temp file at ``path`` cannot belong to a write still in flight."""
    try:
        mtime = path.lstat().st_mtime
    except FileNotFoundError:
        return False
    return _is_debris(path.name, mtime, max_age_s)


def clean_debris(folder: Path, names: list[str] | None = None, *,
                 within: OpenRoot | None = None) -> list[Path]:
    """Remove temp files in ``folder`` left by crashed writers; returns what was removed.

    ``names`` is the folder's listing when the caller has just read it.
    """
    if names is not None and not any(is_temp(name) for name in names):
        return []
    try:
        where = open_folder(folder, within=within)
    except (FileNotFoundError, NotADirectoryError):
        return []
    with where:
        return where.clean_debris(names)


@contextlib.contextmanager
def locked(lock_path: Path, wait_s: float | None = None, *,
           within: OpenRoot | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (a separate lock file) for one process;
    with ``wait_s``, TimeoutError if another holds it longer than that.

    Only guards a read-modify-write of a live row (or a derived index) among processes of
    one machine; no correctness across machines rests on it (flock over NFS is
    unreliable). On POSIX this is flock directly: portalocker wraps the same call but its
    import costs about 0.1 s, which every `atlas get` would pay. Elsewhere portalocker
    does the work.
    """
    if fcntl is None:  # pragma: no cover - non-POSIX
        import portalocker  # noqa: PLC0415 - about 0.1 s at import; POSIX never needs it

        try:
            with portalocker.Lock(str(lock_path), mode="a", timeout=wait_s or 30):
                yield
        except portalocker.LockException:
            raise TimeoutError(f"{lock_path} was held for over {wait_s} s") from None
        return
    if within is None:
        with _locked_at(lock_path, str(lock_path), None, wait_s):
            yield
        return
    with open_folder(lock_path.parent, within=within) as folder, \
            folder.locked(lock_path.name, wait_s):
        yield


def _refuse_to_make() -> None:
    raise FileNotFoundError(errno.ENOENT, "no lock file yet")


@contextlib.contextmanager
def _locked_at(lock_path: Path, name: str, dir_fd: int | None, wait_s: float | None,
               before_making: Callable[[], None] | None = None) -> Iterator[None]:
    """flock ``name`` (relative to ``dir_fd`` when given); ``lock_path`` names it.
    ``before_making`` runs before the lock file is made, if it is not there yet."""
    assert fcntl is not None
    try:
        # Never through a symlink: a planted link would make the lock create an empty
        # file wherever it points.
        try:
            fd = os.open(name, os.O_RDWR | _OPEN_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if before_making is not None:
                before_making()
            fd = os.open(name, os.O_RDWR | os.O_CREAT | _OPEN_FLAGS, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR):
            raise _bad_lock(lock_path, exc) from None
        raise
    try:
        try:
            _require_file(fd, lock_path)
        except OSError as exc:
            raise _bad_lock(lock_path, exc) from None
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if deadline is None
                            else fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"{lock_path} was held for over {wait_s} s") from None
                time.sleep(0.01)
            except OSError as exc:  # pragma: no cover - interrupted system call
                if exc.errno != errno.EINTR:
                    raise
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _bad_lock(lock_path: Path, exc: OSError) -> DamagedFile:
    if exc.errno == errno.ELOOP:
        what = "is a symlink, and a lock file is never opened through one"
    else:
        reason = "it is a folder" if exc.errno == errno.EISDIR else exc.strerror
        what = f"should be a plain lock file, but {reason}"
    return DamagedFile(f"{lock_path} {what}; nothing was written",
                       hint=f"delete {lock_path.name} (atlas makes a fresh lock file)")
