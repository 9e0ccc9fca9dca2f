"""The consent page of `atlas mcp --oauth`: where a person sees who asks to connect and
approves it, with the one-time code the server printed on its terminal, as the identity
they choose (or approves it from a terminal: `atlas mcp approve`).

Everything on the page that a client supplied (its name, id, redirect URI, scopes) is
escaped with :func:`html.escape`; the page loads nothing from elsewhere, and its
Content-Security-Policy allows only its own inline style and script (by a nonce made
for that response), requests to this server, and the form's posting to this server and
to the client's own redirect origin. Its script only polls the request's state, so a
page approved from a terminal moves on by itself.
"""

from __future__ import annotations

import html
import re
import secrets
from urllib.parse import urlsplit

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from atlas_files.facts.errors import AtlasError, BadInput
from atlas_files.mcp.oauth import CONSENT_PATH, MAX_NAME, BoundedEndpoint, Provider, state_line
from atlas_files.mcp.oauthstore import REQUEST_S, StateFull, Unreadable
from atlas_files.mcp.oauthstore import Request as Waiting

_ORIGIN = re.compile(r"[a-z][a-z0-9+.-]*://([A-Za-z0-9.-]+|\[[0-9a-fA-F:.]+\])(:\d{1,5})?")
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")

STYLE = """
body{font:16px/1.45 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;
color:#1b1b1b;background:#fafafa}
h1{font-size:1.35rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem}
dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
.box{border:1px solid #ccc;border-radius:6px;padding:1rem;margin:1rem 0;background:#fff}
label{display:block;margin:.6rem 0 .2rem;font-weight:600}
input{font:inherit;padding:.35rem;width:16rem}
button{font:inherit;padding:.4rem 1rem;margin:.8rem .5rem 0 0}
.error{color:#a40000;font-weight:600}code{background:#eee;padding:0 .2rem}
"""

# Polls the request's state; when it is no longer pending, the page reloads and the
# server sends the browser on (with the code, or the refusal).
SCRIPT = """
(function () {
  var b = document.body, state = b.getAttribute("data-state-url"),
      page = b.getAttribute("data-page-url");
  function poll() {
    fetch(state, {cache: "no-store", credentials: "omit"}).then(function (r) {
      return r.json();
    }).then(function (d) {
      if (d.state !== "pending") { window.location.replace(page); }
      else { setTimeout(poll, 2000); }
    }).catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 2000);
})();
"""


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _form_target(redirect_uri: str) -> str:
    """The CSP source of the client's redirect origin: the approval's answer is a
    redirect there, which form-action must allow."""
    parts = urlsplit(redirect_uri)
    if parts.scheme in ("http", "https"):
        origin = f"{parts.scheme}://{parts.netloc}"
        return origin if _ORIGIN.fullmatch(origin) and "@" not in origin else ""
    return f"{parts.scheme}:" if _SCHEME.fullmatch(parts.scheme) else ""


def _headers(nonce: str, form_target: str = "") -> dict[str, str]:
    csp = (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
           f"connect-src 'self'; img-src 'none'; form-action 'self' {form_target}".rstrip()
           + "; frame-ancestors 'none'; base-uri 'none'")
    return {"Content-Security-Policy": csp, "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store"}


def _page(title: str, body: str, nonce: str, *, data: str = "", script: bool = False) -> str:
    run = f'<script nonce="{nonce}">{SCRIPT}</script>' if script else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f'<meta name="referrer" content="no-referrer">'
            f"<title>{_e(title)}</title><style nonce=\"{nonce}\">{STYLE}</style></head>"
            f"<body{data}>{body}{run}</body></html>")


class Consent:
    """The consent routes over one provider; ``read_only`` says what a grant allows."""

    def __init__(self, provider: Provider, read_only: bool) -> None:
        self.provider = provider
        self.store = provider.store
        self.read_only = read_only

    def routes(self) -> list[Route]:
        # The form is two short fields: a body past MAX_FORM is refused unread.
        page = BoundedEndpoint(self.page)
        return [Route(CONSENT_PATH + "/{rid:str}", page, methods=["GET", "POST"]),
                Route(CONSENT_PATH + "/{rid:str}/state", self.state, methods=["GET"])]

    def _allows(self) -> str:
        if self.read_only:
            return ("reading everything the record holds, as the identity you choose; this "
                    "server is read-only, so nothing can be written")
        return ("acting as the identity you choose through every tool this server offers: "
                "reading everything the record holds, and writing statuses, topics, "
                "decisions, corrections and leases in that name")

    def render(self, waiting: Waiting, message: str = "", status: int = 200) -> Response:
        nonce = secrets.token_urlsafe(16)
        host = urlsplit(waiting.redirect_uri).netloc or waiting.redirect_uri
        left = max(0, int(waiting.expires_at - self.store.clock()))
        page_url = f"{CONSENT_PATH}/{waiting.id}"
        error = f'<p class="error" role="alert">{_e(message)}</p>' if message else ""
        name = waiting.client_name[:MAX_NAME]
        body = f"""
<h1>Connect {_e(name)} to this atlas record?</h1>
{error}
<div class="box"><dl>
<dt>Client</dt><dd>{_e(name)} <small>(as it names itself)</small></dd>
<dt>Client id</dt><dd><code>{_e(waiting.client_id[:300])}</code></dd>
<dt>Sends you back to</dt><dd><strong>{_e(host)}</strong><br>
<code>{_e(waiting.redirect_uri[:500])}</code></dd>
<dt>Scopes</dt><dd>{_e(" ".join(waiting.scopes))}</dd>
<dt>Request</dt><dd><code>{_e(waiting.id)}</code>, expires in {left // 60} min
{left % 60} s</dd>
</dl></div>
<p>Approving grants {_e(self._allows())}, until you revoke it
(<code>atlas mcp token revoke NAME</code>). Approve only a request you started yourself.</p>
<form method="post" action="{_e(page_url)}" class="box">
<label for="as">Act as (identity)</label>
<input id="as" name="as" required maxlength="100" autocomplete="off" spellcheck="false">
<label for="code">One-time code (printed on the server's terminal)</label>
<input id="code" name="code" required maxlength="20" autocomplete="one-time-code"
inputmode="numeric">
<br><button type="submit" name="action" value="approve">Approve</button>
<button type="submit" name="action" value="deny" formnovalidate>Deny</button>
</form>
<p>Or approve it from a terminal on the server's machine:<br>
<code>atlas mcp approve {_e(waiting.id)} --as NAME --tokens FILE</code><br>
This page moves on by itself once it is approved.</p>
<noscript><p>Without scripts, reload this page after approving from a terminal.</p></noscript>
"""
        data = (f' data-state-url="{_e(page_url)}/state" data-page-url="{_e(page_url)}"')
        return HTMLResponse(_page(f"Connect {name}?", body, nonce, data=data, script=True),
                            status_code=status,
                            headers=_headers(nonce, _form_target(waiting.redirect_uri)))

    def ended(self, title: str, text: str, status: int) -> Response:
        nonce = secrets.token_urlsafe(16)
        body = f"<h1>{_e(title)}</h1><p>{_e(text)}</p>"
        return HTMLResponse(_page(title, body, nonce), status_code=status,
                            headers=_headers(nonce))

    def _unavailable(self, exc: OSError | BadInput) -> Response:
        self.provider.notices.lasting("oauth-state", state_line(exc))
        return self.ended("Not available now", "This server cannot read its connection "
                          "requests at the moment; its owner has been told. Try again "
                          "later.", 503)

    async def page(self, request: Request) -> Response:
        try:
            return await self._page(request)
        except (OSError, BadInput) as exc:
            return self._unavailable(exc)

    async def _page(self, request: Request) -> Response:
        rid = str(request.path_params["rid"])
        if request.method == "POST":
            refused = await self._submit(request, rid)
            if refused is not None:
                return refused
        waiting = self.store.request(rid)
        if waiting is not None and waiting.status != "pending" and not waiting.delivered:
            outcome, waiting, code = await anyio.to_thread.run_sync(self.store.collect, rid)
            if outcome == "code" and waiting is not None and code is not None:
                return RedirectResponse(self.provider.redirect_with_code(
                    waiting.redirect_uri, code, waiting.state), status_code=302,
                    headers={"Cache-Control": "no-store"})
            if outcome == "denied" and waiting is not None:
                return RedirectResponse(self.provider.redirect_with_error(
                    waiting.redirect_uri, "access_denied", "the person denied this connection",
                    waiting.state), status_code=302, headers={"Cache-Control": "no-store"})
        return self._show(waiting)

    def _show(self, waiting: Waiting | None) -> Response:
        if waiting is None:
            return self.ended("No such request", "This connection request is unknown here. "
                              "Start the connection again from the client.", 404)
        if waiting.expires_at <= self.store.clock():
            return self.ended("This request expired", "Connection requests wait "
                              f"{REQUEST_S // 60} minutes for a person. Start the connection "
                              "again from the client.", 410)
        if waiting.status == "dropped":
            return self.ended("This request was dropped", "Newer connection requests took "
                              "its place (only a few wait at once). Start the connection "
                              "again from the client.", 410)
        if waiting.status != "pending":
            return self.ended("This request is over", "It was answered already. Start the "
                              "connection again from the client if you need to.", 410)
        return self.render(waiting)

    async def _submit(self, request: Request, rid: str) -> Response | None:
        form = await request.form()
        action = form.get("action")
        identity, otc = form.get("as"), form.get("code")
        try:
            if action == "deny":
                await anyio.to_thread.run_sync(self.store.deny, rid)
            elif isinstance(identity, str) and isinstance(otc, str):
                await anyio.to_thread.run_sync(self.store.approve, rid, identity.strip(), otc)
            else:
                return self._retry(rid, "give the identity and the one-time code")
        except (Unreadable, StateFull) as exc:
            return self._unavailable(exc)
        except AtlasError as exc:
            return self._retry(rid, exc.message)
        # See Other: the browser fetches the page with GET, which sends it on.
        return RedirectResponse(f"{CONSENT_PATH}/{rid}", status_code=303,
                                headers={"Cache-Control": "no-store"})

    def _retry(self, rid: str, message: str) -> Response:
        waiting = self.store.request(rid)
        if waiting is None or waiting.status != "pending" \
                or waiting.expires_at <= self.store.clock():
            return self._show(waiting)
        return self.render(waiting, message, status=400)

    async def state(self, request: Request) -> Response:
        try:
            waiting = self.store.request(str(request.path_params["rid"]))
        except (OSError, BadInput):
            return JSONResponse({"state": "unavailable"}, status_code=503,
                                headers={"Cache-Control": "no-store"})
        if waiting is None:
            state = "unknown"
        elif waiting.delivered:
            state = "done"
        elif waiting.expires_at <= self.store.clock():
            state = "expired"
        else:
            state = waiting.status
        return JSONResponse({"state": state}, headers={"Cache-Control": "no-store"})
