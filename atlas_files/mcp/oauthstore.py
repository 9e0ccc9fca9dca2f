"""The OAuth state of `atlas mcp --oauth`: registered clients, connection requests waiting
for a person, authorization codes and grants, in one file beside the tokens file.

The file holds no usable token: codes, access and refresh tokens are kept as SHA-256
hashes, and a request's one-time code too. It follows the tokens file's rules (outside
the record, the owner's alone, written whole under a lock), so the server and a terminal
(`atlas mcp approve`) change it in turn, and it survives a restart. Every change reads
the file afresh under the lock; the server's per-request token check reads a cached copy
that is refreshed whenever the file changes.

Clients registered dynamically keep the secret the SDK minted for them in clear: the
SDK compares it as given. A secret alone grants nothing (a code also needs its PKCE
verifier, a refresh token is stored hashed).

Registration and ``/authorize`` need no credential, so what a stranger can put in the file
is bounded, and the bounds never lock a person out: a client is at most
``MAX_CLIENT_BYTES``; past ``MAX_CLIENTS`` a registration forgets the oldest client that
never got a grant; past ``MAX_PENDING_PER_CLIENT`` waiting requests of one client, or
``MAX_PENDING`` in all, a new request drops the oldest waiting one; at most ``MAX_ENDED``
answered requests are remembered. A change that would still make the file larger than
the reader accepts (``MAX_FILE``) is refused and the file is left as it was, so no
request can make the state unreadable.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from atlas_files.facts import timeutil
from atlas_files.facts.errors import BadInput, DamagedFile, NotFound
from atlas_files.facts.names import check_name
from atlas_files.mcp.tokens import digest, locked, read_private, stat_key, write_private

KIND = "atlas-mcp-oauth"
REQUEST_S = 600  # a person has ten minutes to approve a connection
KEEP_ENDED_S = 3600  # an ended request is still recognised (and said to be over) this long
CODE_S = 120  # an authorization code is exchanged at once by a working client
ACCESS_S = 3600
REFRESH_S = 30 * 86400
CLIENT_UNUSED_S = 86400  # a registered client that never got a grant is forgotten after a day
MAX_PENDING = 20  # waiting at once; a new request drops the oldest waiting one
MAX_PENDING_PER_CLIENT = 3
MAX_ENDED = 100  # answered, expired or dropped requests still recognised
MAX_CLIENTS = 200  # a new registration forgets the oldest client that never got a grant
MAX_CLIENT_BYTES = 12 << 10  # one client's metadata as stored
MAX_ATTEMPTS = 5  # wrong one-time codes before the request is denied
MAX_FILE = 4 << 20
ACCESS_PREFIX = "atlas_oa_"
REFRESH_PREFIX = "atlas_or_"

log = logging.getLogger("atlas.mcp")


def state_path(tokens: Path) -> Path:
    """The OAuth state file beside ``tokens``: ``mcp-tokens.json`` -> ``mcp-tokens.oauth.json``."""
    return tokens.with_name(tokens.name.removesuffix(".json") + ".oauth.json")


def iso(t: float) -> str:
    return timeutil.format_time(datetime.fromtimestamp(t, UTC))


class Refused(Exception):
    """A code or refresh token that yields nothing (unknown, used, expired, revoked)."""


class Full(BadInput):
    """No room for what a client asked: its metadata is too large, or every place is
    taken by what people approved. Said to the client as it is."""


class StateFull(Full):
    """A change that would make the state file larger than its reader accepts."""


class Unreadable(DamagedFile):
    """The state file is not one atlas wrote (or passed the size its reader accepts).
    Any other BadInput from reading it (a symbolic link, a file open to others) is as
    much the owner's to fix; neither names anything for a client's eyes."""


def _load(path: Path) -> State:
    data = read_private(path, MAX_FILE)
    return State() if data is None else _parse(path, data)


@dataclass(frozen=True)
class Request:
    """A connection waiting for a person: what the client asked, and where it stands."""

    id: str
    client_id: str
    client_name: str
    redirect_uri: str
    redirect_explicit: bool
    state: str | None
    code_challenge: str
    scopes: tuple[str, ...]
    resource: str
    created_at: float
    otc_sha256: str
    status: str = "pending"  # pending | approved | denied | dropped (to make room)
    identity: str | None = None
    attempts: int = 0
    delivered: bool = False  # the consent page has sent the answer to the client

    @property
    def expires_at(self) -> float:
        return self.created_at + REQUEST_S

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "client_name": self.client_name,
                "redirect_uri": self.redirect_uri, "created_at": iso(self.created_at)}


@dataclass(frozen=True)
class Code:
    """An authorization code (by hash): what it was issued for, and the grant it became."""

    sha256: str
    client_id: str
    redirect_uri: str
    redirect_explicit: bool
    code_challenge: str
    scopes: tuple[str, ...]
    resource: str
    identity: str
    client_name: str
    expires_at: float
    used_by: str | None = None


@dataclass(frozen=True)
class Grant:
    """One approved connection: the identity it acts as, its current tokens (by hash)."""

    id: str
    identity: str
    client_id: str
    client_name: str
    scopes: tuple[str, ...]
    resource: str
    created_at: float
    access_sha256: str
    access_expires_at: float
    refresh_sha256: str
    refresh_expires_at: float

    def to_json(self) -> dict[str, Any]:
        return {"identity": self.identity, "id": self.id, "created_at": iso(self.created_at),
                "client_id": self.client_id, "client_name": self.client_name,
                "refresh_expires_at": iso(self.refresh_expires_at)}


@dataclass(frozen=True)
class Issued:
    """Tokens just issued, shown to the client once."""

    access_token: str
    refresh_token: str
    grant: Grant


@dataclass
class State:
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, Request] = field(default_factory=dict)
    codes: dict[str, Code] = field(default_factory=dict)
    grants: dict[str, Grant] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        doc = {"kind": KIND, "clients": self.clients,
               "requests": [dataclasses.asdict(r) for r in self.requests.values()],
               "codes": [dataclasses.asdict(c) for c in self.codes.values()],
               "grants": [dataclasses.asdict(g) for g in self.grants.values()]}
        return json.dumps(doc, indent=1).encode() + b"\n"


def _tuples(row: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if k == "scopes" else v for k, v in row.items()}


def _parse(path: Path, data: bytes) -> State:
    try:
        doc = json.loads(data)
        if len(data) > MAX_FILE or doc.get("kind") != KIND:
            raise ValueError("not an OAuth state file")
        requests = [Request(**_tuples(r)) for r in doc["requests"]]
        codes = [Code(**_tuples(c)) for c in doc["codes"]]
        grants = [Grant(**_tuples(g)) for g in doc["grants"]]
        clients = {str(k): dict(v) for k, v in doc["clients"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise Unreadable(f"{path} is not an OAuth state file atlas wrote",
                         hint=f"move it aside (`mv {path} {path}.damaged`): static tokens "
                         "work meanwhile, and every OAuth connection then has to be "
                         "approved again") from None
    return State(clients, {r.id: r for r in requests}, {c.sha256: c for c in codes},
                  {g.id: g for g in grants})


def _otc_hash(request_id: str, code: str) -> str:
    return digest(f"{request_id}:{code}")


class Store:
    """The state file, changed under its lock; ``clock`` is seconds since the epoch."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self._seen: tuple[int, ...] | None = None
        self._cached = State()
        # Why the last token check granted nothing, if the file could not be used: the
        # verifier says it on the terminal once, not at every request.
        self.problem: OSError | BadInput | None = None

    def read(self) -> State:
        """The state as the file holds it now (a cached copy if the file is unchanged)."""
        try:
            key = stat_key(self.path)
        except FileNotFoundError:
            return State()
        if key != self._seen:
            self._cached = _load(self.path)
            self._seen = key
        return self._cached

    @contextlib.contextmanager
    def change(self) -> Iterator[State]:
        """The state read afresh under the lock, saved when the block ends without error;
        StateFull, and nothing saved, if the result would pass ``MAX_FILE``."""
        with locked(self.path):
            state = _load(self.path)
            self._purge(state)
            yield state
            data = state.to_bytes()
            if len(data) > MAX_FILE:
                raise StateFull(f"the OAuth state would grow to {len(data)} bytes, past the "
                                f"{MAX_FILE} its reader accepts; nothing was changed",
                                hint="revoke grants no longer used (`atlas mcp token ls`, "
                                "`atlas mcp token revoke NAME`)")
            write_private(self.path, data)

    def _purge(self, state: State) -> None:
        now = self.clock()
        state.requests = {k: r for k, r in state.requests.items()
                          if r.expires_at + KEEP_ENDED_S > now}
        ended = sorted((r for r in state.requests.values()
                        if r.status != "pending" or r.expires_at <= now),
                       key=lambda r: r.created_at)
        for old in ended[:max(0, len(ended) - MAX_ENDED)]:
            del state.requests[old.id]
        state.codes = {k: c for k, c in state.codes.items() if c.expires_at > now}
        state.grants = {k: g for k, g in state.grants.items() if g.refresh_expires_at > now}
        used = {g.client_id for g in state.grants.values()}
        used |= {r.client_id for r in state.requests.values()}
        state.clients = {k: c for k, c in state.clients.items()
                         if k in used or c.get("client_id_issued_at", 0) + CLIENT_UNUSED_S > now}

    # clients -----------------------------------------------------------------------

    def register(self, client: dict[str, Any]) -> list[str]:
        """Keep ``client``; the ids of clients forgotten to make room for it."""
        size = len(json.dumps(client))
        if size > MAX_CLIENT_BYTES:
            raise Full(f"the client's metadata is {size} bytes; at most "
                       f"{MAX_CLIENT_BYTES} are kept", hint="register with less")
        forgotten = []
        with self.change() as state:
            while len(state.clients) >= MAX_CLIENTS:
                oldest = self._oldest_unused(state)
                if oldest is None:
                    raise Full(f"{len(state.clients)} clients are registered already, "
                               "each holding what a person approved",
                               hint="its owner can revoke grants no longer used")
                self._forget(state, oldest)
                forgotten.append(oldest)
            state.clients[str(client["client_id"])] = client
        return forgotten

    def _oldest_unused(self, state: State) -> str | None:
        """The client registered longest ago that holds nothing a person gave it: no
        grant, no code, no approved request."""
        held = {g.client_id for g in state.grants.values()}
        held |= {c.client_id for c in state.codes.values()}
        held |= {r.client_id for r in state.requests.values() if r.status == "approved"}
        unused = [k for k in state.clients if k not in held]
        return min(unused, key=lambda k: state.clients[k].get("client_id_issued_at", 0),
                   default=None)

    def _forget(self, state: State, client_id: str) -> None:
        del state.clients[client_id]
        for request in list(state.requests.values()):
            if request.client_id == client_id and request.status == "pending":
                state.requests[request.id] = dataclasses.replace(request, status="dropped")

    def client(self, client_id: str) -> dict[str, Any] | None:
        return self.read().clients.get(client_id)

    # requests ----------------------------------------------------------------------

    def open_request(self, *, client_id: str, client_name: str, redirect_uri: str,
                     redirect_explicit: bool, state: str | None, code_challenge: str,
                     scopes: tuple[str, ...], resource: str) -> tuple[Request, str, int]:
        """A new request waiting for a person, its one-time code (shown once), and how
        many waiting requests were dropped to make room for it (the oldest of this
        client's past ``MAX_PENDING_PER_CLIENT``, then the oldest of all past
        ``MAX_PENDING``): unauthenticated requests must not keep a person's out."""
        request_id = secrets.token_hex(6)
        otc = f"{secrets.randbelow(10**8):08d}"
        otc = f"{otc[:4]}-{otc[4:]}"
        request = Request(request_id, client_id, client_name, redirect_uri, redirect_explicit,
                          state, code_challenge, scopes, resource, self.clock(),
                          _otc_hash(request_id, otc))
        with self.change() as st:
            now = self.clock()
            waiting = sorted((r for r in st.requests.values()
                              if r.status == "pending" and r.expires_at > now),
                             key=lambda r: r.created_at)
            mine = [r for r in waiting if r.client_id == client_id]
            drop = mine[:max(0, len(mine) - MAX_PENDING_PER_CLIENT + 1)]
            rest = [r for r in waiting if r not in drop]
            drop += rest[:max(0, len(rest) - MAX_PENDING + 1)]
            for old in drop:
                st.requests[old.id] = dataclasses.replace(old, status="dropped")
            st.requests[request_id] = request
        return request, otc, len(drop)

    def request(self, request_id: str) -> Request | None:
        return self.read().requests.get(request_id)

    def pending(self) -> list[Request]:
        now = self.clock()
        return sorted((r for r in self.read().requests.values()
                       if r.status == "pending" and r.expires_at > now),
                      key=lambda r: r.created_at)

    def _waiting(self, state: State, request_id: str) -> Request:
        request = state.requests.get(request_id)
        if request is None:
            raise NotFound(f"no connection request {request_id}",
                           hint="`atlas mcp pending` lists those waiting")
        if request.status == "dropped":
            raise BadInput(f"connection request {request_id} was dropped to make room for "
                           f"newer ones (at most {MAX_PENDING} wait at once, "
                           f"{MAX_PENDING_PER_CLIENT} per client)",
                           hint="start the connection again from the client")
        if request.status != "pending":
            raise BadInput(f"connection request {request_id} is {request.status} already",
                           hint="the client can ask again")
        if request.expires_at <= self.clock():
            raise BadInput(f"connection request {request_id} expired at "
                           f"{iso(request.expires_at)}",
                           hint="start the connection again from the client")
        return request

    def approve(self, request_id: str, identity: str, otc: str | None = None) -> Request:
        """Approve a waiting request as ``identity``; with ``otc`` (the consent page), only
        if it is the request's one-time code. Wrong codes count; too many deny it."""
        identity = check_name(identity, "identity")
        with self.change() as state:
            request = self._waiting(state, request_id)
            if otc is not None and not hmac.compare_digest(
                    _otc_hash(request_id, otc.strip()), request.otc_sha256):
                attempts = request.attempts + 1
                denied = attempts >= MAX_ATTEMPTS
                state.requests[request_id] = dataclasses.replace(
                    request, attempts=attempts, status="denied" if denied else "pending")
                wrong = BadInput("that is not the one-time code of this request"
                                 + ("; too many tries, it is denied" if denied else ""),
                                 hint="the server printed the code on its terminal")
            else:
                wrong = None
                state.requests[request_id] = dataclasses.replace(
                    request, status="approved", identity=identity)
        if wrong is not None:
            raise wrong
        return state.requests[request_id]

    def deny(self, request_id: str) -> Request:
        with self.change() as state:
            request = self._waiting(state, request_id)
            state.requests[request_id] = dataclasses.replace(request, status="denied")
        return state.requests[request_id]

    def collect(self, request_id: str) -> tuple[str, Request | None, str | None]:
        """What the consent page does next: ``("code", request, code)`` once for an
        approved request; ``("denied", request, None)`` once for a denied one; else
        ``("pending" | "dropped" | "expired" | "done" | "unknown", request, None)``."""
        with self.change() as state:
            request = state.requests.get(request_id)
            if request is None:
                return "unknown", None, None
            if request.delivered:
                return "done", request, None
            if request.expires_at <= self.clock():
                return "expired", request, None
            if request.status in ("pending", "dropped"):
                return request.status, request, None
            state.requests[request_id] = dataclasses.replace(request, delivered=True)
            if request.status == "denied":
                return "denied", request, None
            code = secrets.token_urlsafe(32)
            assert request.identity is not None  # approved requests carry one
            state.codes[digest(code)] = Code(
                digest(code), request.client_id, request.redirect_uri,
                request.redirect_explicit, request.code_challenge, request.scopes,
                request.resource, request.identity, request.client_name,
                self.clock() + CODE_S)
            return "code", request, code

    # codes and tokens --------------------------------------------------------------

    def code(self, code: str) -> Code | None:
        """The unused, unexpired code; a code presented again ends the grant it became
        (whoever replays a code may have stolen it)."""
        found = self.read().codes.get(digest(code))
        if found is None or found.expires_at <= self.clock():
            return None
        if found.used_by is not None:
            with self.change() as state:
                state.grants.pop(found.used_by, None)
            log.warning("atlas mcp: an authorization code was presented twice; the grant "
                        "it became is revoked")
            return None
        return found

    def _tokens(self) -> tuple[str, str, str, str]:
        access = ACCESS_PREFIX + secrets.token_urlsafe(32)
        refresh = REFRESH_PREFIX + secrets.token_urlsafe(32)
        return access, digest(access), refresh, digest(refresh)

    def exchange(self, code: str) -> Issued:
        with self.change() as state:
            found = state.codes.get(digest(code))
            if found is None or found.used_by is not None or found.expires_at <= self.clock():
                raise Refused("the authorization code is unknown, used or expired")
            access, access_hash, refresh, refresh_hash = self._tokens()
            now = self.clock()
            grant = Grant(secrets.token_hex(4), found.identity, found.client_id,
                          found.client_name, found.scopes, found.resource, now, access_hash,
                          now + ACCESS_S, refresh_hash, now + REFRESH_S)
            state.grants[grant.id] = grant
            state.codes[found.sha256] = dataclasses.replace(found, used_by=grant.id)
        return Issued(access, refresh, grant)

    def _by_refresh(self, state: State, token: str) -> Grant | None:
        wanted = digest(token)
        return next((g for g in state.grants.values() if g.refresh_sha256 == wanted
                     and g.refresh_expires_at > self.clock()), None)

    def refresh_grant(self, token: str) -> Grant | None:
        return self._by_refresh(self.read(), token)

    def rotate(self, token: str) -> Issued:
        """New access and refresh tokens for a grant; the refresh token presented is spent."""
        with self.change() as state:
            grant = self._by_refresh(state, token)
            if grant is None:
                raise Refused("the refresh token is unknown, spent, expired or revoked")
            access, access_hash, refresh, refresh_hash = self._tokens()
            now = self.clock()
            grant = dataclasses.replace(grant, access_sha256=access_hash,
                                        access_expires_at=now + ACCESS_S,
                                        refresh_sha256=refresh_hash,
                                        refresh_expires_at=now + REFRESH_S)
            state.grants[grant.id] = grant
        return Issued(access, refresh, grant)

    def access_grant(self, token: str) -> Grant | None:
        """The grant whose current access token ``token`` is, if unexpired. Fails closed:
        a state file damaged or opened to others grants nothing."""
        try:
            state = self.read()
        except (OSError, BadInput) as exc:
            self.problem = exc
            self._seen = None
            return None
        self.problem = None
        wanted = digest(token)
        return next((g for g in state.grants.values() if g.access_sha256 == wanted
                     and g.access_expires_at > self.clock()), None)

    def revoke_grant(self, grant_id: str) -> None:
        with self.change() as state:
            state.grants.pop(grant_id, None)

    def revoke_identity(self, identity: str) -> int:
        """End every grant of ``identity``; how many there were."""
        with self.change() as state:
            ended = [k for k, g in state.grants.items() if g.identity == identity]
            for key in ended:
                del state.grants[key]
        return len(ended)

    def grants(self) -> list[Grant]:
        return sorted(self.read().grants.values(), key=lambda g: g.created_at)
