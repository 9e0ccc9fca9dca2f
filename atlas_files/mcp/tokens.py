"""Bearer tokens for `atlas mcp --http`: who a caller is, decided by the token it presents.

The tokens file lies outside the record (the record is shared, often in git) and is
refused if anyone but its owner can read or change it. It stores no token, only each
token's SHA-256 with the identity it grants; a presented token is hashed and compared
with every stored hash in constant time. `atlas mcp token add` prints a token once.

This module is the one place where a bearer token becomes an identity: a static token
of this file, or (with `--oauth`) one the server issued itself, which :class:`TokenVerifier`
asks the OAuth state for (:mod:`atlas_files.mcp.oauthstore`). The private-file rules here
(no symbolic link, readable by the owner alone, written whole, one writer at a time) hold
for that state file too.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import hmac
import json
import logging
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mcp.server.auth.provider import AccessToken

from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput, DamagedFile, NotFound
from atlas_files.facts.names import check_name
from atlas_files.storage.record import holds_record

KIND = "atlas-mcp-tokens"
PREFIX = "atlas_"
MAX_FILE = 1 << 20

log = logging.getLogger("atlas.mcp")


@dataclass(frozen=True)
class Grant:
    """One stored token: the identity it grants, its hash, when it was made."""

    identity: str
    sha256: str
    created_at: str

    @property
    def id(self) -> str:
        # Enough of the hash to tell two tokens of one identity apart; no use to a thief.
        return self.sha256[:8]

    def to_json(self) -> dict[str, Any]:
        return {"identity": self.identity, "id": self.id, "created_at": self.created_at}


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_place(path: Path, record_root: Path | None) -> None:
    """Refuse a tokens file inside a record (the one served, or any folder above the file
    holding atlas.yaml): everything there is shared."""
    where = path.resolve()
    roots = [record_root.resolve()] if record_root is not None else []
    roots += [p for p in where.parents if holds_record(p)]
    for root in roots:
        if where == root or root in where.parents:
            raise BadInput(f"the tokens file {path} lies inside the record {root}, which every "
                           "worker reads (and git may publish)",
                           hint="keep it outside the record, e.g. "
                           "~/.config/atlas/mcp-tokens.json")


def _check_private(path: Path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise DamagedFile(f"{path} is not a regular file", hint="point --tokens to a file")
    if st.st_mode & 0o077:
        raise BadInput(f"{path} can be read or changed by others (mode "
                       f"{stat.S_IMODE(st.st_mode):04o}); its tokens are refused",
                       hint=f"chmod 600 {path}, and revoke the tokens if others read it")


def read_private(path: Path, limit: int = MAX_FILE) -> bytes | None:
    """The bytes of a file only its owner may read (at most ``limit`` + 1 of them), or
    None if there is none. A symbolic link, or a file others can read, is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BadInput(f"{path} is a symbolic link; the tokens file must be a file",
                           hint="point --tokens to the file itself") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        _check_private(path, os.fstat(fd))
        return fh.read(limit + 1)


def stat_key(path: Path) -> tuple[int, ...]:
    """What changes when a file is rewritten or re-moded: its cached reading is stale.
    ctime and mode too: a chmod that opens the file to others changes neither its
    contents nor its mtime, and must still close it."""
    st = os.stat(path)
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode)


def load(path: Path) -> tuple[Grant, ...]:
    """The grants of the tokens file; NotFound if there is none."""
    data = read_private(path)
    if data is None:
        raise NotFound(f"no tokens file at {path}",
                       hint=f"create it with `atlas mcp token add NAME --tokens {path}`")
    return _parse(path, data)


def _parse(path: Path, data: bytes) -> tuple[Grant, ...]:
    try:
        doc = json.loads(data)
        if len(data) > MAX_FILE or doc.get("kind") != KIND:
            raise ValueError("not a tokens file")
        return tuple(Grant(str(g["identity"]), str(g["sha256"]), str(g["created_at"]))
                     for g in doc["tokens"])
    except (ValueError, KeyError, TypeError, AttributeError):
        raise DamagedFile(f"{path} is not a tokens file atlas wrote",
                          hint="move it aside and add the tokens again with "
                          "`atlas mcp token add`") from None


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """One rewriter of ``path`` at a time (two `token add` at once must both land)."""
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` whole with ``data``, readable by its owner alone."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _save(path: Path, grants: tuple[Grant, ...]) -> None:
    doc = {"kind": KIND, "tokens": [{"identity": g.identity, "sha256": g.sha256,
                                     "created_at": g.created_at} for g in grants]}
    write_private(path, json.dumps(doc, indent=1).encode() + b"\n")


def _folder_exists(path: Path) -> None:
    if not path.parent.is_dir():
        raise NotFound(f"no folder {path.parent} for the tokens file",
                       hint=f"create it first: mkdir -p {path.parent}")


def ensure(path: Path, record_root: Path | None = None) -> None:
    """Create an empty tokens file if there is none (`--oauth` needs no static token)."""
    check_place(path, record_root)
    _folder_exists(path)
    with locked(path):
        try:
            load(path)
        except NotFound:
            _save(path, ())


def add(path: Path, identity: str, record_root: Path | None = None) -> str:
    """Make a token for ``identity``, store its hash, and return the token (shown once)."""
    identity = check_name(identity, "identity")
    check_place(path, record_root)
    _folder_exists(path)
    token = PREFIX + secrets.token_urlsafe(32)
    with locked(path):
        try:
            grants = load(path)
        except NotFound:
            grants = ()
        grant = Grant(identity, digest(token), timeutil.format_time(timeutil.now()))
        _save(path, (*grants, grant))
    return token


def revoke(path: Path, identity: str, missing_ok: bool = False) -> int:
    """Remove every token of ``identity``; how many there were (NotFound if none, unless
    ``missing_ok``: OAuth grants of the name may be what is being revoked)."""
    identity = check_name(identity, "identity")
    with locked(path):
        grants = load(path)
        kept = tuple(g for g in grants if g.identity != identity)
        if len(kept) == len(grants):
            if missing_ok:
                return 0
            raise NotFound(f"{path} holds no token for {identity}",
                           hint=f"`atlas mcp token ls --tokens {path}` lists who has one")
        _save(path, kept)
    return len(grants) - len(kept)


class IssuedTokens(Protocol):
    """Tokens the server issued itself (OAuth): the access a presented one grants."""

    def access(self, token: str) -> AccessToken | None: ...


class TokenVerifier:
    """The SDK's token verifier over the tokens file, read again whenever it changes, so a
    token revoked while the server runs is refused from the next request on.

    With ``issued`` (`--oauth`), a token that is not in the file is looked up among those
    the server issued; ``resource`` is then the server's own address, which every token
    it accepts is for (the SDK refuses a token issued for another)."""

    def __init__(self, path: Path, *, resource: str | None = None,
                 issued: IssuedTokens | None = None) -> None:
        self.path = path
        self.resource = resource
        self.issued = issued
        self._seen: tuple[int, ...] | None = None
        self._grants: tuple[Grant, ...] = ()
        self.grants()  # refuse a missing, unreadable or too open file at start

    def grants(self) -> tuple[Grant, ...]:
        key = stat_key(self.path)
        if key != self._seen:
            self._grants = load(self.path)
            self._seen = key
        return self._grants

    def identity(self, token: str) -> str | None:
        try:
            grants = self.grants()
        except (OSError, BadInput) as exc:
            # Fail closed: a file gone, damaged or opened to others grants nothing.
            log.warning("atlas mcp: refusing every token: %s", exc)
            self._seen = None
            return None
        presented = digest(token)
        found = None
        for grant in grants:  # every hash compared, so timing does not tell which matched
            if hmac.compare_digest(presented, grant.sha256) and found is None:
                found = grant.identity
        return found

    async def verify_token(self, token: str) -> AccessToken | None:
        identity = self.identity(token)
        if identity is not None:
            return AccessToken(token=token, client_id=identity, subject=identity, scopes=[],
                               resource=self.resource)
        if self.issued is not None:
            return self.issued.access(token)
        return None
