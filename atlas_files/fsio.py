"""The three storage primitives every record file is written with.

* ``publish_exclusive``: a new immutable file (a version, an entry, a lease generation).
  Temp file in the same folder, fsync, then ``os.link`` onto the final name, which fails
  if the name exists. Exactly one writer can create a given name; a plain rename would
  silently overwrite, which is why it is never used here.
* ``replace_atomic``: a live row (telemetry, receipts). Temp file, fsync, ``os.replace``.
* ``fsync_dir``: make the new directory entry itself durable.

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
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from atlas_files import layout

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX: portalocker does the locking
    fcntl = None  # type: ignore[assignment]
from atlas_files.errors import DamagedFile

TEMP_PREFIX = layout.TEMP_PREFIX
# Debris from another host (whose processes we cannot see) is removed only when old.
FOREIGN_TEMP_AGE_S = 3600.0
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
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
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "it is a folder, not a file", str(path))
        raise NotAFile(errno.EINVAL, f"it is {_what_is(st.st_mode)}, not a file", str(path))
    return st


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
            "made by hand; raise body_limit in atlas.yaml to read it, or run `atlas check`",
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
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # some platforms cannot open a folder; nothing more to make durable
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_temp(folder: Path, data: bytes, mode: int, durable: bool = True) -> Path:
    tmp = folder / _temp_name()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fchmod(fd, mode)
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


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


def publish_exclusive(path: Path, data: bytes, *, mode: int = 0o444) -> Path:
    """Create ``path`` with ``data`` if and only if it does not exist yet.

    Raises FileExistsError when another writer created it first; nothing is changed then.
    The published file is read-only (``mode``) so an editor warns before an in-place edit.
    """
    folder = path.parent
    for attempt in (1, 2):
        tmp = _write_temp(folder, data, mode)
        try:
            try:
                os.link(tmp, path)
            except FileExistsError:
                # Over NFS a LINK whose reply was lost is retried and reports "exists" for
                # the link it made itself: then the name is ours, not another writer's.
                if not os.path.samefile(tmp, path):
                    raise
            except FileNotFoundError:
                # Our temp file was taken for debris by a cleaner that misjudged it;
                # write it again, once.
                if attempt == 2 or not folder.is_dir():
                    raise
                continue
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        break
    fsync_dir(folder)
    paths = getattr(_journal, "paths", None)
    if paths is not None:
        paths.append(path)
    return path


def replace_atomic(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True) -> Path:
    """Replace the live row at ``path``: a reader sees the old file or the new, never part.

    ``durable=False`` skips the fsyncs: a process crash still leaves the old row or the new
    one, but a power cut may lose the update (or, on some file systems, empty the row).
    Only for rows whose loss errs on the safe side, such as read receipts.
    """
    folder = path.parent
    tmp = _write_temp(folder, data, mode, durable)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(folder)
    return path


def read_nofollow(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of the plain file at ``path``, refusing to follow a symlink in its last part.

    A record never follows a symlink; folders are checked by Record.path, and every record
    file is opened through here. Raises FileNotFoundError; OSError (ELOOP) for a symlink;
    IsADirectoryError or NotAFile (both naming the path) for anything but a plain file;
    FileTooLarge when the file is over ``limit`` bytes, judged before reading any of it.
    ``damage`` turns any of these into the DamagedFile a user sees.
    """
    fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
    try:
        st = _require_file(fd, path)
        if limit is not None and st.st_size > limit:
            raise FileTooLarge(path, st.st_size, limit)
        # Read at most one byte past the limit: a file that grows after the stat above
        # is still refused, and never read whole.
        cap = None if limit is None else limit + 1
        chunks = []
        total = 0
        while cap is None or total < cap:
            chunk = os.read(fd, 1 << 20 if cap is None else min(1 << 20, cap - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        data = b"".join(chunks)
        if limit is not None and total > limit:
            raise FileTooLarge(path, total, limit)
        return data
    finally:
        os.close(fd)


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


def temp_is_debris(path: Path, *, max_age_s: float = FOREIGN_TEMP_AGE_S) -> bool:
    """True if the temp file at ``path`` cannot belong to a write still in flight."""
    rest = path.name[len(TEMP_PREFIX):]
    host, _, tail = rest.partition("-")
    pid_text = tail.partition("-")[0]
    try:
        age = time.time() - path.lstat().st_mtime
    except FileNotFoundError:
        return False
    if age > max_age_s:
        return True
    if host == _host_tag() and pid_text.isdigit():
        return not _pid_alive(int(pid_text))
    return False


def clean_debris(folder: Path, names: list[str] | None = None) -> list[Path]:
    """Remove temp files in ``folder`` left by crashed writers; returns what was removed.

    ``names`` is the folder's listing when the caller has just read it.
    """
    removed: list[Path] = []
    if names is None:
        try:
            names = os.listdir(folder)
        except OSError:
            return removed
    for name in names:
        if is_temp(name):
            p = folder / name
            if temp_is_debris(p):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)
                    removed.append(p)
    return removed


@contextlib.contextmanager
def locked(lock_path: Path, wait_s: float | None = None) -> Iterator[None]:
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
    try:
        # Never through a symlink: a planted link would make the lock create an empty
        # file wherever it points.
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | _OPEN_FLAGS, 0o644)
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
