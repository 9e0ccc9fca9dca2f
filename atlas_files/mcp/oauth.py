"""`atlas mcp --oauth`: the server as its own OAuth 2.1 authorization server, so chat
products in a browser (which cannot paste a bearer token) connect through the MCP
authorization flow, and a person approves each connection and picks its identity.

Built on the SDK's pieces: :class:`Provider` is its ``OAuthAuthorizationServerProvider``
over :class:`~atlas_files.mcp.oauthstore.Store`; the SDK's handlers serve registration,
``/authorize`` and ``/token``. This module adds what real clients need that the SDK's
defaults leave out: metadata advertising public clients (``none``) and client ID metadata
documents, the protected resource metadata at both its places, the OIDC discovery alias,
``resource`` checked at the token endpoint too, revocation for public clients, and
redirect URIs limited to known chat products, loopback, and those the owner adds.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from pydantic import AnyUrl, ValidationError
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp, Receive, Scope, Send

from atlas_files.facts.errors import BadInput
from atlas_files.facts.text import escape_controls
from atlas_files.mcp.cimd import ClientDocuments, is_document_url
from atlas_files.mcp.notices import Notices
from atlas_files.mcp.oauthstore import ACCESS_S, MAX_CLIENTS, Full, Issued, Refused, Store

SCOPE = "atlas"
MCP_PATH = "/mcp"
CONSENT_PATH = "/consent"
MAX_NAME = 120
MAX_REDIRECTS = 10
MAX_URI = 1000  # a redirect URI; the chat products' callbacks are under 80 characters
MAX_SCOPE = 200
MAX_STATE = 1000  # the client's `state`, kept with its waiting request
MAX_FORM = 64 << 10  # any request body of the authorization server: registrations are ~1 KiB
# RFC 7636: an S256 challenge is 43 characters; a verifier 43 to 128 of these.
_CHALLENGE = re.compile(r"[A-Za-z0-9._~-]{43,128}")
# What a registration keeps: the fields this server uses. RFC 7591 lets a server drop or
# replace the rest (contacts, jwks, software_*, the informational URIs), which no page or
# check here reads and which would only let a stranger fill the state file.
KEPT_METADATA = frozenset({
    "client_id", "client_secret", "client_id_issued_at", "client_secret_expires_at",
    "client_name", "redirect_uris", "grant_types", "response_types",
    "token_endpoint_auth_method", "scope", "application_type"})
_GRANT_TYPES = ("authorization_code", "refresh_token")
REQUESTS_INSTEAD = "`atlas mcp pending` lists every waiting request; approve yours there"

# The callbacks of the chat products this server is meant for; a `*` stands for one path
# segment (ChatGPT gives each connector its own callback).
KNOWN_REDIRECTS = (
    "https://claude.ai/api/mcp/auth_callback",
    "https://claude.com/api/mcp/auth_callback",
    "https://chatgpt.com/connector_platform_oauth_redirect",
    "https://chatgpt.com/connector/oauth/*",
    "https://platform.openai.com/apps-manage/oauth",
)
_SEGMENT = re.compile(r"[A-Za-z0-9_-]{1,128}")

log = logging.getLogger("atlas.mcp")
T = TypeVar("T")


def public_origin(text: str) -> str:
    """``--public-url`` as issuer: ``scheme://host[:port]``, lower-cased, default port and
    trailing slash dropped, so the issuer and resource clients compare are exactly it."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        parts, port = None, None
    host = (parts.hostname or "") if parts else ""
    if parts is None or parts.scheme not in ("https", "http") or not host \
            or parts.username or parts.password or parts.query or parts.fragment \
            or parts.path not in ("", "/"):
        raise BadInput(f"--public-url {text[:120]!r} is not an address like "
                       "https://atlas.example.org",
                       hint="give the scheme and host (and port) clients reach, with no path")
    if parts.scheme == "http" and not is_loopback_host(host):
        raise BadInput(f"--public-url {text[:120]!r} is plain http: tokens would cross the "
                       "network readable",
                       hint="put TLS in front (a tunnel or reverse proxy) and give its "
                       "https:// address")
    shown = f"[{host}]" if ":" in host else host
    default = 443 if parts.scheme == "https" else 80
    return f"{parts.scheme}://{shown}" + (f":{port}" if port and port != default else "")


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class RedirectPolicy:
    """Where a code may be sent: the known chat products' callbacks, loopback (any port,
    as native apps listen), and the URIs the owner adds with --redirect-uri."""

    added: tuple[str, ...] = ()

    @classmethod
    def adding(cls, uris: tuple[str, ...]) -> RedirectPolicy:
        """The policy with the owner's URIs written as clients' URIs are compared (the
        SDK parses them: host lower-cased, an empty path made ``/``)."""
        added = []
        for uri in uris:
            try:
                parsed = AnyUrl(uri.strip())
            except ValidationError:
                parsed = None
            if parsed is None or parsed.fragment or not parsed.scheme:
                raise BadInput(f"--redirect-uri {uri[:120]!r} is not an absolute URI "
                               "without a fragment",
                               hint="give it as the client registers it, e.g. "
                               "https://tools.example.org/oauth/callback")
            added.append(str(parsed))
        return cls(tuple(added))

    def allows(self, uri: str) -> bool:
        try:
            parts = urlsplit(uri)
            parts.port  # noqa: B018 - a bad port raises here
        except ValueError:
            return False
        if uri in self.added:
            return True
        if parts.fragment or parts.username or parts.password:
            return False
        if parts.scheme == "http" and is_loopback_host(parts.hostname or ""):
            return True
        for known in KNOWN_REDIRECTS:
            if known.endswith("/*"):
                stem = known[:-1]
                if uri.startswith(stem) and _SEGMENT.fullmatch(uri[len(stem):]):
                    return True
            elif uri == known:
                return True
        return False


def same_resource(given: str | None, resource: str) -> bool:
    """RFC 8707: a ``resource`` is this server's if it names it (absent: it is implied)."""
    return given is None or given.rstrip("/") == resource


def printable(text: str, limit: int = MAX_NAME) -> str:
    """A client-supplied string fit for one terminal line."""
    text = " ".join(text.split())
    return escape_controls(text[:limit] + ("..." if len(text) > limit else ""))


class _StateProblem(Exception):
    """The state file could not be used; the owner was told, this is for the client."""


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """The SDK's authorization-server provider over the state file (the identity
    assertion grant of enterprise identity providers keeps the SDK's refusal). Every
    change of the file runs in a worker thread: a lock held by `atlas mcp approve` must
    not stall the server."""

    def __init__(self, store: Store, issuer: str, resource: str, policy: RedirectPolicy,
                 documents: ClientDocuments, notices: Notices, tokens_hint: str) -> None:
        self.store = store
        self.issuer = issuer
        self.resource = resource
        self.policy = policy
        self.documents = documents
        self.notices = notices
        self.tokens_hint = tokens_hint

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn`` in a worker thread; a state file that cannot be used is said to the
        owner, and to the client as a refusal of the token request."""
        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except Full:
            raise
        except (OSError, BadInput) as exc:
            raise _StateProblem(self._state_problem(exc)) from None

    def _read(self, fn: Callable[[str], T], key: str) -> T | None:
        """A lookup in the state; None (nothing granted) if the file cannot be used."""
        try:
            return fn(key)
        except (OSError, BadInput) as exc:
            self._state_problem(exc)
            return None

    def _allowed(self, info: OAuthClientInformationFull) -> OAuthClientInformationFull | None:
        # Applied at every lookup, so a client registered before the owner dropped a
        # --redirect-uri can no longer use it.
        uris = [u for u in info.redirect_uris or [] if self.policy.allows(str(u))]
        if not uris:
            return None
        return info.model_copy(update={"redirect_uris": uris})

    def _state_problem(self, exc: OSError | BadInput) -> str:
        """Tell the owner (once) that the state file cannot be used; the client is told
        only that the server cannot take the request now."""
        self.notices.lasting("oauth-state", state_line(exc))
        return "this server's OAuth state cannot be read now; its owner has been told"

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if is_document_url(client_id):
            info = await self.documents.client(client_id)
        else:
            try:
                stored = self.store.client(client_id)
            except (OSError, BadInput) as exc:
                self._state_problem(exc)
                return None
            try:
                info = None if stored is None else \
                    OAuthClientInformationFull.model_validate(stored)
            except ValidationError:  # a hand edit: that client is unknown, the rest stand
                info = None
        return None if info is None else self._allowed(info)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        uris = client_info.redirect_uris or []
        refused = [str(u) for u in uris if not self.policy.allows(str(u))]
        if refused or len(uris) > MAX_REDIRECTS or any(len(str(u)) > MAX_URI for u in uris):
            raise RegistrationError(
                "invalid_redirect_uri",
                f"redirect URIs not allowed here: {', '.join(refused)[:300]}; this server "
                "sends codes only to known chat products, loopback, and URIs its owner "
                "adds with --redirect-uri" if refused else
                f"at most {MAX_REDIRECTS} redirect URIs of at most {MAX_URI} characters")
        if client_info.scope is not None and len(client_info.scope) > MAX_SCOPE:
            raise RegistrationError("invalid_client_metadata",
                                    f"scope is over {MAX_SCOPE} characters; this server "
                                    f"has one scope, {SCOPE}")
        keep(client_info)
        try:
            forgotten = await self._run(self.store.register, client_info.model_dump(
                mode="json", exclude_none=True))
        except (Full, _StateProblem) as exc:
            raise RegistrationError("invalid_client_metadata", str(exc)) from None
        if forgotten:
            self.notices.say("registrations forgetting old clients",
                             f"atlas mcp: {len(forgotten)} registered client(s) that never got "
                             f"a grant forgotten to make room (at most {MAX_CLIENTS})")

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        if not same_resource(params.resource, self.resource):
            raise AuthorizeError("invalid_target",
                                 f"this server issues tokens only for {self.resource}")
        if not _CHALLENGE.fullmatch(params.code_challenge):
            raise AuthorizeError("invalid_request", "code_challenge is not an S256 PKCE "
                                 "challenge (43 to 128 characters of A-Z a-z 0-9 . _ ~ -)")
        if params.state is not None and len(params.state) > MAX_STATE:
            raise AuthorizeError("invalid_request", f"state is over {MAX_STATE} characters")
        scopes = tuple(params.scopes or [SCOPE])
        if len(" ".join(scopes)) > MAX_SCOPE:
            raise AuthorizeError("invalid_scope", f"this server has one scope, {SCOPE}")
        name = (client.client_name or client.client_id)[:MAX_NAME]
        try:
            request, otc, dropped = await self._run(lambda: self.store.open_request(
                client_id=client.client_id, client_name=name,
                redirect_uri=str(params.redirect_uri),
                redirect_explicit=params.redirect_uri_provided_explicitly, state=params.state,
                code_challenge=params.code_challenge, scopes=scopes, resource=self.resource))
        except (Full, _StateProblem) as exc:
            raise AuthorizeError("temporarily_unavailable", str(exc)) from None
        host = urlsplit(request.redirect_uri).netloc or request.redirect_uri
        self.notices.say(
            "connection requests",
            f"atlas mcp: connection request {request.id} from \"{printable(name)}\" (code "
            f"goes to {printable(host)}); approve it on its page with the one-time code "
            f"{otc}, or here: atlas mcp approve {request.id} --as NAME --tokens "
            f"{self.tokens_hint}" + (f" ({dropped} older waiting request(s) dropped to make "
                                     "room)" if dropped else ""),
            REQUESTS_INSTEAD)
        return f"{self.issuer}{CONSENT_PATH}/{request.id}"

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        code = self._read(self.store.code, authorization_code)
        if code is None or code.client_id != client.client_id:
            return None
        return AuthorizationCode(code=authorization_code, scopes=list(code.scopes),
                                 expires_at=code.expires_at, client_id=code.client_id,
                                 code_challenge=code.code_challenge,
                                 redirect_uri=AnyUrl(code.redirect_uri),
                                 redirect_uri_provided_explicitly=code.redirect_explicit,
                                 resource=code.resource, subject=code.identity)

    def _token(self, issued: Issued) -> OAuthToken:
        return OAuthToken(access_token=issued.access_token, token_type="Bearer",
                          expires_in=ACCESS_S, scope=" ".join(issued.grant.scopes),
                          refresh_token=issued.refresh_token)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        try:
            issued: Issued = await self._run(self.store.exchange, authorization_code.code)
        except (Refused, Full, _StateProblem) as exc:
            raise TokenError("invalid_grant", str(exc)) from None
        self.notices.say("connections", f"atlas mcp: {printable(issued.grant.client_name)} "
                         f"connected as {issued.grant.identity} (grant {issued.grant.id})",
                         "`atlas mcp token ls` lists every grant")
        return self._token(issued)

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        grant = self._read(self.store.refresh_grant, refresh_token)
        if grant is None or grant.client_id != client.client_id:
            return None
        return RefreshToken(token=refresh_token, client_id=grant.client_id,
                            scopes=list(grant.scopes), expires_at=int(grant.refresh_expires_at),
                            resource=grant.resource, subject=grant.identity)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        try:
            return self._token(await self._run(self.store.rotate, refresh_token.token))
        except (Refused, Full, _StateProblem) as exc:
            raise TokenError("invalid_grant", str(exc)) from None

    def access(self, token: str) -> AccessToken | None:
        """For :class:`~atlas_files.mcp.tokens.TokenVerifier`: the access a token grants."""
        grant = self.store.access_grant(token)
        problem = self.store.problem
        self.notices.lasting("oauth-state", None if problem is None else state_line(problem))
        if grant is None:
            return None
        return AccessToken(token=token, client_id=grant.client_id, subject=grant.identity,
                           scopes=list(grant.scopes), expires_at=int(grant.access_expires_at),
                           resource=grant.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        grant = (self.store.access_grant(token.token) if isinstance(token, AccessToken)
                 else self._read(self.store.refresh_grant, token.token))
        if grant is not None:
            with contextlib.suppress(_StateProblem, Full):
                await self._run(self.store.revoke_grant, grant.id)

    def redirect_with_code(self, request_uri: str, code: str, state: str | None) -> str:
        # RFC 9207: the issuer travels with the code, so a client talking to two servers
        # cannot be sent one's code for the other.
        return construct_redirect_uri(request_uri, code=code, state=state, iss=self.issuer)

    def redirect_with_error(self, request_uri: str, error: str, description: str,
                            state: str | None) -> str:
        return construct_redirect_uri(request_uri, error=error, error_description=description,
                                      state=state, iss=self.issuer)


def state_line(exc: OSError | BadInput) -> str:
    """The owner's line for a state file that cannot be used: what, and what to do."""
    hint = getattr(exc, "hint", None)
    return (f"atlas mcp: every OAuth token, registration and connection request is refused: "
            f"{exc}" + (f"; {hint}" if hint else ""))


def keep(info: OAuthClientInformationFull) -> None:
    """Drop from a registration what this server does not use (the answer to the client
    then shows what was registered), and bound what it keeps."""
    for name in type(info).model_fields:
        if name not in KEPT_METADATA:
            setattr(info, name, None)
    if info.client_name and len(info.client_name) > MAX_NAME:
        info.client_name = info.client_name[:MAX_NAME]
    info.grant_types = [g for g in dict.fromkeys(info.grant_types) if g in _GRANT_TYPES]
    info.response_types = ["code"]


def metadata(issuer: str) -> dict[str, Any]:
    """Authorization server metadata (RFC 8414): the SDK's model, with public clients
    and client ID metadata documents advertised, and the issuer exactly as given."""
    methods = ["none", "client_secret_post", "client_secret_basic"]
    doc = OAuthMetadata.model_validate({
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/token",
        "registration_endpoint": f"{issuer}/register",
        "revocation_endpoint": f"{issuer}/revoke",
        "revocation_endpoint_auth_methods_supported": methods,
        "scopes_supported": [SCOPE],
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": methods,
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": True,
        "authorization_response_iss_parameter_supported": True,
    })
    return doc.model_dump(mode="json", exclude_none=True)


def resource_metadata(issuer: str, resource: str) -> dict[str, Any]:
    return {"resource": resource, "authorization_servers": [issuer],
            "scopes_supported": [SCOPE], "bearer_methods_supported": ["header"],
            "resource_name": "atlas record"}


class BoundedEndpoint:
    """A handler of the authorization server (or the consent page): a body past
    MAX_FORM refused unread, and a client that goes away before its body is whole simply
    gone (there is no one to answer, and nothing for the terminal). A class, not a
    closure: Starlette's Route takes a function for a handler of requests, an object for
    an ASGI app."""

    def __init__(self, handler: Callable[[Request], Awaitable[Response]]) -> None:
        self.inner = RequestBodyLimitMiddleware(request_response(handler), MAX_FORM)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.inner(scope, receive, send)
        except ClientDisconnect:
            return


def _endpoint(handler: Callable[[Request], Awaitable[Response]], methods: list[str],
              cors: bool = True) -> ASGIApp:
    app: ASGIApp = BoundedEndpoint(handler)
    if cors:  # for clients that run in a browser (the MCP Inspector); never /authorize
        app = CORSMiddleware(app, allow_origins="*", allow_methods=methods,
                             allow_headers=["mcp-protocol-version"])
    return app


def _json(doc: dict[str, Any]) -> Callable[[Request], Awaitable[Response]]:
    async def serve(request: Request) -> Response:
        return JSONResponse(doc, headers={"Cache-Control": "public, max-age=300"})
    return serve


def _token_error(status: int, error: str, description: str) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status_code=status,
                        headers={"Cache-Control": "no-store", "Pragma": "no-cache"})


def routes(provider: Provider, consent: list[Route]) -> list[Route]:
    """Every route of the authorization server, to be matched before the SDK's own."""
    issuer, resource = provider.issuer, provider.resource
    authenticator = ClientAuthenticator(provider)
    token_handler = TokenHandler(provider, authenticator)
    registration = RegistrationHandler(provider, ClientRegistrationOptions(
        enabled=True, default_scopes=[SCOPE]))

    async def token(request: Request) -> Response:
        # The SDK's handler does not look at `resource` on /token (RFC 8707 section 2.2).
        form = await request.form()
        given = form.get("resource")
        if isinstance(given, str) and not same_resource(given, resource):
            return _token_error(400, "invalid_target",
                                f"this server issues tokens only for {resource}")
        answer: Response = await token_handler.handle(request)
        return answer

    async def revoke(request: Request) -> Response:
        # RFC 7009, for public clients too (the SDK's handler wants a client_secret field).
        try:
            client = await authenticator.authenticate_request(request)
        except AuthenticationError as exc:
            return _token_error(401, "invalid_client", exc.message)
        form = await request.form()
        presented = form.get("token")
        if not isinstance(presented, str) or not presented:
            return _token_error(400, "invalid_request", "no token to revoke")
        found: AccessToken | RefreshToken | None = provider.access(presented)
        if found is None:
            found = await provider.load_refresh_token(client, presented)
        if found is not None and found.client_id == client.client_id:
            await provider.revoke_token(found)
        return Response(status_code=200, headers={"Cache-Control": "no-store"})

    prm = _json(resource_metadata(issuer, resource))
    asm = _json(metadata(issuer))
    read = ["GET", "OPTIONS"]
    return [
        Route("/.well-known/oauth-protected-resource", _endpoint(prm, read), methods=read),
        Route(f"/.well-known/oauth-protected-resource{MCP_PATH}", _endpoint(prm, read),
              methods=read),
        Route("/.well-known/oauth-authorization-server", _endpoint(asm, read), methods=read),
        Route("/.well-known/openid-configuration", _endpoint(asm, read), methods=read),
        Route("/authorize", _endpoint(AuthorizationHandler(provider).handle, [], cors=False),
              methods=["GET", "POST"]),
        Route("/token", _endpoint(token, ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"]),
        Route("/register", _endpoint(registration.handle, ["POST", "OPTIONS"]),
              methods=["POST", "OPTIONS"]),
        Route("/revoke", _endpoint(revoke, ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"]),
        *consent,
    ]


def check_setup(public_url: str | None, host: str) -> None:
    """Refuse an issuer clients could not use: off loopback, only an https public URL."""
    if public_url is None and not is_loopback_host(host):
        raise BadInput(f"--oauth on {host} needs --public-url: the address browsers and "
                       "chat products reach (https, through a tunnel or a reverse proxy)",
                       hint="bind 127.0.0.1 behind the proxy and pass --public-url "
                       "https://atlas.example.org")

