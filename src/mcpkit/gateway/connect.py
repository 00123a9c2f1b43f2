"""Per-user upstream credentials: ``[upstream.auth] kind = "per_user"``.

Servers for SaaS APIs act as one user, so each caller of the gateway connects their own
account.  The pieces, all reusing :mod:`mcpkit.auth.client` (discovery, PKCE, refresh):

* :class:`Connections` (in :mod:`.connect_records`, with the connect links) — each
  caller's tokens for each upstream in the gateway's state backend, sealed with the
  server keyring for that principal and upstream (AES-GCM, the principal and upstream
  the additional data): nothing in Redis or SQLite reads as a token, and a record
  copied to another principal's key does not open.
* :class:`PerUserAuth` — the ``httpx.Auth`` of such an upstream.  A call made for a caller
  carries that caller's access token, refreshed when it is stale or refused; a caller
  with no usable token (never connected, revoked, refused by the upstream and not
  refreshable) is asked to connect with URL elicitation in their era: an
  ``InputRequiredResult`` round (2026-07-28; the client retries the round once the user
  finished) or the ``-32042`` URL-elicitation-required error (2025-11-25; the client
  retries the call).  What the gateway does for nobody in particular (connecting,
  listing, health checks) carries its own client-credentials token when a
  ``client_secret`` is configured, else none.
* the connect link — ``{public_url}/connect/{upstream}?link=...``: a one-use token, sealed
  with the keyring for that principal and upstream, valid ``LINK_TTL_S``.  A request
  that presents the caller's bearer credentials must be that principal's; a link used
  once is refused the second time.  A browser shows no credentials: there the link
  itself (private to the caller it was elicited for, short-lived, one use) is the proof.
* :class:`ConnectFlows` — what the ``/connect`` pages run: the authorization code grant
  with PKCE against the upstream's authorization server (RFC 9728 discovery from the
  upstream, or the pinned ``issuer`` / ``token_endpoint``: credentials never go to an
  unpinned server), its callback, then the tokens stored for the link's principal.
  A sign-in in flight (its principal, PKCE verifier and ``state``) is kept in the state
  backend, sealed like the tokens and keyed by a hash of its ``state``, so the callback
  may reach any replica on that backend; it is taken out once.
* the completion — a 2025-11-25 caller was asked with an ``elicitationId`` bound into its
  link: once its sign-in finished, its session gets ``notifications/elicitation/complete``
  on its GET stream, from whichever replica ran the callback (through the backend's
  pub/sub to the replica holding that stream), and its client retries the call.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlsplit

import anyio
import anyio.to_thread
import httpx

from ..auth.client import InMemoryTokenStore, OAuthAuth, TokenSet, UrlPolicy
from ..auth.client.flow import Flow, OAuthEngine
from ..auth.client.grants import AuthorizationCodeGrant, ClientCredentialsGrant
from ..auth.client.metadata import AuthServerMetadata, canonical_resource
from ..protocol.negotiation import client_has
from ..protocol.sealing import InvalidState, Keyring
from ..server.mrtr import input_required_result
from ..transports.http.sessions import notify_session, relay_session_notes
from ..types.codec import decode, encode
from ..types.errors import McpError
from .config import UpstreamConfig, UpstreamOAuth
from .connect_records import (
    LINK_TTL_S,
    Completion,
    Connection,
    Connections,
    Sealed,
    Sealing,
    connect_link,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from anyio.abc import TaskGroup

    from ..server.context import Context

__all__ = [
    "LINK_TTL_S",
    "URL_ELICITATION_REQUIRED",
    "ConnectFlows",
    "ConnectNeeded",
    "Connection",
    "Connections",
    "PerUserAuth",
    "Sealing",
    "with_connect_rounds",
]

log = logging.getLogger("mcpkit.gateway")

#: 2025-11-25: the request needs the user to visit a URL first (``data.elicitations``).
URL_ELICITATION_REQUIRED = -32042
#: The front's refusal code (see .server: FORBIDDEN).
FORBIDDEN = -31003
#: The ``inputRequests`` key prefix of the gateway's own connect rounds.
CONNECT_KEY = "mcpkit-connect/"
_FLOW_BINDING = "mcpkit-gateway-connect-flow\0"
_FLOW_KEY = "gateway-connect-flow:"
#: What a 2025-11-25 session is sent when its caller finished connecting.
ELICITATION_COMPLETE = "notifications/elicitation/complete"


# ---------------------------------------------------------------------------- grants


class PinnedCodeGrant(AuthorizationCodeGrant):
    """The authorization code grant, held to the configured ``issuer`` and
    ``token_endpoint`` the way the client-credentials kind is (the same checks)."""

    def __init__(
        self, handler: Any, oauth: UpstreamOAuth, verifier: tuple[str, str] | None = None
    ) -> None:
        super().__init__(handler, client_id=oauth.client_id, client_secret=oauth.client_secret)
        # The pinning checks of the client-credentials grant, without its credentials
        # (this grant's client may be public): only the two pins are set.
        self.pin = ClientCredentialsGrant.__new__(ClientCredentialsGrant)
        self.pin.issuer, self.pin.token_endpoint = oauth.issuer, oauth.token_endpoint
        #: The PKCE pair in use: a fresh one made at the start (and stored with the
        #: sign-in), or the stored one when finishing a sign-in begun elsewhere.
        self.verifier = verifier

    def pkce(self) -> tuple[str, str]:
        if self.verifier is None:
            self.verifier = super().pkce()
        return self.verifier

    def choose_issuer(self, servers: Sequence[str]) -> str:
        return self.pin.choose_issuer(servers)

    def check_destination(self, as_meta: AuthServerMetadata) -> None:
        self.pin.check_destination(as_meta)


def callback_uri(oauth: UpstreamOAuth, upstream: str) -> str:
    """The redirect URI registered at the upstream's authorization server."""
    return f"{oauth.public_url}/connect/{quote(upstream, safe='')}/callback"


def _policy(oauth: UpstreamOAuth) -> UrlPolicy:
    return UrlPolicy.local_development() if oauth.allow_loopback else UrlPolicy()


def _auth(
    upstream: UpstreamConfig,
    handler: Any,
    store: InMemoryTokenStore,
    verifier: tuple[str, str] | None = None,
) -> OAuthAuth:
    oauth = upstream.oauth
    assert oauth is not None and upstream.url is not None
    return OAuthAuth(
        PinnedCodeGrant(handler, oauth, verifier),
        server_url=upstream.url,
        store=store,
        policy=_policy(oauth),
        scopes=list(oauth.scopes) or None,
    )


# ---------------------------------------------------------------------------- calls


class AskToConnect:
    """The redirect handler of a call: instead of a browser, the caller is asked (in
    their era) to visit their connect link."""

    def __init__(self, ctx: Context, upstream: UpstreamConfig, keyring: Keyring) -> None:
        self.ctx = ctx
        self.upstream = upstream
        self.keyring = keyring

    @property
    def redirect_uri(self) -> str:
        assert self.upstream.oauth is not None
        return callback_uri(self.upstream.oauth, self.upstream.name)

    async def authorize(self, url: str) -> Mapping[str, str]:
        ctx, name = self.ctx, self.upstream.name
        assert self.upstream.oauth is not None
        principal = getattr(ctx.principal, "name", str(ctx.principal))
        message = f"Connect your {name} account to continue"
        if ctx.meta.era == "legacy":
            elicitation_id = secrets.token_urlsafe(12)
            session = ctx.session
            completion = Completion(session.id, elicitation_id) if session is not None else None
            link = connect_link(self.keyring, self.upstream.oauth, name, principal, completion)
            raise McpError(
                URL_ELICITATION_REQUIRED,
                f"This request needs your {name} account: connect it at the URL, then retry",
                {
                    "elicitations": [
                        {
                            "mode": "url",
                            "elicitationId": elicitation_id,
                            "url": link,
                            "message": message,
                        }
                    ]
                },
            )
        link = connect_link(self.keyring, self.upstream.oauth, name, principal)
        key = f"{CONNECT_KEY}{name}"
        answer = (connect_answers.get() or {}).get(key)
        if isinstance(answer, dict) and answer.get("action") in ("decline", "cancel"):
            raise McpError(
                FORBIDDEN, f"Forbidden: the {name} account was not connected", {"upstream": name}
            )
        params = {"mode": "url", "message": message, "url": link}
        if not client_has(ctx.meta.client_capabilities, "elicitation.url"):
            raise McpError(
                FORBIDDEN,
                f"Forbidden: this request needs your {name} account; connect it at {link} "
                "(this client cannot be sent there: it does not declare URL elicitation)",
                {"upstream": name, "url": link},
            )
        # Not answered yet, or answered while the sign-in is unfinished: (again) a round.
        raise ConnectNeeded({key: {"method": "elicitation/create", "params": params}})


class ConnectNeeded(McpError):
    """A modern caller must connect first: the ``inputRequests`` of the round to answer
    with (see :func:`with_connect_rounds`).  An error on its way there, so that every
    layer between the upstream call and the gateway's route lets it through as it is."""

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(FORBIDDEN, "Forbidden: connect your upstream account first")
        self.requests = requests


#: The caller's answers to the gateway's own connect rounds in this request.
connect_answers: ContextVar[dict[str, Any] | None] = ContextVar(
    "mcpkit_gateway_connect", default=None
)


async def with_connect_rounds(
    ctx: Context, route: Callable[[Context], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """Run a routed 2026-07-28 request with the gateway's connect rounds: the answers to
    them (``inputResponses`` keys of :data:`CONNECT_KEY`) are taken out before the request
    is forwarded (they are not the upstream's), and a :class:`ConnectNeeded` becomes an
    ``InputRequiredResult``.  The round carries no ``requestState``: the answer says only
    that the user went to the page, and the retry finds the stored tokens (or asks again)."""
    if ctx.meta.era != "modern":
        return await route(ctx)
    given = ctx.params.get("inputResponses")
    answers: dict[str, Any] = {}
    if isinstance(given, dict) and any(k.startswith(CONNECT_KEY) for k in given):
        answers = {k: v for k, v in given.items() if k.startswith(CONNECT_KEY)}
        rest = {k: v for k, v in given.items() if k not in answers}
        params = {k: v for k, v in ctx.params.items() if k != "inputResponses"}
        if rest:
            params["inputResponses"] = rest
        ctx.params = params
    token = connect_answers.set(answers)
    try:
        return await route(ctx)
    except ConnectNeeded as need:
        return input_required_result(need.requests, None)
    finally:
        connect_answers.reset(token)


class PerUserAuth(httpx.Auth):
    """The ``httpx.Auth`` of a ``per_user`` upstream (see the module)."""

    requires_request_body = True
    requires_response_body = False

    def __init__(
        self,
        upstream: UpstreamConfig,
        caller: Callable[[], Context | None],
        own: httpx.Auth | None = None,
    ) -> None:
        self.upstream = upstream
        #: The front request's Context (its server is the gateway: the keyring and state
        #: backend the connect pages use too); None for the gateway's own requests.
        self.caller = caller
        self.own = own
        assert upstream.url is not None
        self.resource = canonical_resource(upstream.url)

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        ctx = self.caller()
        principal = getattr(getattr(ctx, "principal", None), "name", None)
        if ctx is None or not isinstance(principal, str):  # the gateway's own request
            if self.own is None:
                yield request
                return
            flow = self.own.async_auth_flow(request)
            step = await flow.__anext__()
            while True:  # (async generators cannot ``yield from``: relayed by hand)
                response = yield step
                try:
                    step = await flow.asend(response)
                except StopAsyncIteration:
                    return
        name = self.upstream.name
        source: Sealed = ctx.server
        connections = Connections(source)
        found = await connections.get(principal, name)
        before = found.tokens if found is not None else None
        store = InMemoryTokenStore()
        store.set_tokens(self.resource, before)
        auth = _auth(self.upstream, AskToConnect(ctx, self.upstream, source.keyring), store)
        flow = auth.async_auth_flow(request)
        try:
            step = await flow.__anext__()
            while True:
                response = yield step
                try:
                    step = await flow.asend(response)
                except StopAsyncIteration:
                    break
        finally:
            await _settle(connections, principal, name, before, store.get_tokens(self.resource))


async def _settle(
    connections: Connections,
    principal: str,
    upstream: str,
    before: TokenSet | None,
    after: TokenSet | None,
) -> None:
    """Keep what one call learnt: refreshed tokens are stored; tokens refused and not
    renewed are dropped, unless a concurrent call of the same caller stored newer ones
    meanwhile (it refreshed with the same, rotated, refresh token first)."""
    if after is not None and after is not before:
        await connections.put(principal, upstream, after)
    elif after is None and before is not None:
        current = await connections.get(principal, upstream)
        if current is not None and current.tokens.access_token == before.access_token:
            await connections.delete(principal, upstream)


# ---------------------------------------------------------------------------- the page


class Parked(Exception):
    """The grant reached the user's redirect: it stops there (its URL is handed over)."""

    def __init__(self, url: str) -> None:
        super().__init__("parked at the authorization redirect")
        self.url = url


class ParkedRedirect:
    """The redirect handler of a connect page.  Starting: the authorization URL stops
    the grant (:class:`Parked`), the page redirects the user there.  Finishing (``answer``
    given): the callback's parameters, with the ``state`` of this run of the grant once
    the caller has checked them against the stored sign-in's."""

    def __init__(self, redirect_uri: str, answer: Mapping[str, str] | None = None) -> None:
        self._redirect_uri = redirect_uri
        self.answer = answer

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    def authorize(self, url: str) -> Mapping[str, str]:
        if self.answer is None:
            raise Parked(url)
        state = dict(parse_qsl(urlsplit(url).query)).get("state", "")
        return {**self.answer, "state": state}


@dataclass(frozen=True, slots=True)
class Finished:
    """A sign-in's end, as the callback page reports it."""

    principal: str
    upstream: str
    error: Exception | None = None


def _flow_key(state: str) -> str:
    return _FLOW_KEY + hashlib.sha256(state.encode()).hexdigest()


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class ConnectFlows:
    """The sign-ins the ``/connect`` pages run (see the module).  Each step runs the
    client's synchronous grant driver in a worker thread: discovery, then the redirect
    (starting) or the code exchange (finishing)."""

    def __init__(self, source: Sealed) -> None:
        self.source = source
        self.connections = Connections(source)
        self._tg: TaskGroup | None = None

    @property
    def tg(self) -> TaskGroup | None:
        return self._tg

    @tg.setter
    def tg(self, tg: TaskGroup | None) -> None:
        """Set by the running gateway.  With a backend that spans processes this replica
        then also delivers the completions other replicas publish for sessions whose
        GET stream it holds."""
        self._tg = tg
        state = self.source.state
        if tg is not None and not state.url.startswith("memory"):
            tg.start_soon(relay_session_notes, state)

    async def start(
        self, principal: str, upstream: UpstreamConfig, completion: Completion | None = None
    ) -> str:
        """Begin the grant for ``principal``: the authorization URL to send them to.  The
        sign-in is stored (sealed, ``LINK_TTL_S``) for the callback, on any replica."""
        assert upstream.oauth is not None
        handler = ParkedRedirect(callback_uri(upstream.oauth, upstream.name))
        auth = _auth(upstream, handler, InMemoryTokenStore())
        engine = auth.engine
        assert engine is not None
        try:
            with anyio.fail_after(60):
                await anyio.to_thread.run_sync(
                    auth.run_flow, _grant(engine), abandon_on_cancel=True
                )
        except Parked as parked:
            url = parked.url
        else:
            raise RuntimeError("the authorization server issued tokens without a sign-in")
        state = dict(parse_qsl(urlsplit(url).query)).get("state", "")
        grant = auth.grant
        assert isinstance(grant, PinnedCodeGrant) and grant.verifier is not None and state
        body: dict[str, Any] = {"p": principal, "v": grant.verifier[0]}
        if completion is not None:
            body["s"], body["e"] = completion.session_id, completion.elicitation_id
        sealed = self.source.keyring.seal(body, _FLOW_BINDING + upstream.name, LINK_TTL_S)
        await self.source.state.set(_flow_key(state), encode(sealed), ttl_s=LINK_TTL_S)
        return url

    async def finish(self, upstream: UpstreamConfig, params: dict[str, str]) -> Finished:
        """The authorization server's redirect back: the stored sign-in of its ``state``
        (taken out: one use), the code exchanged, the tokens stored for its principal and
        a 2025-11-25 session told.  LookupError: no sign-in waits for this answer."""
        key = _flow_key(params.get("state", ""))
        raw = await self.source.state.get(key)
        if raw is None or not await self.source.state.delete(key):
            raise LookupError("no sign-in is waiting for this answer")
        try:
            body = self.source.keyring.open(decode(raw), _FLOW_BINDING + upstream.name)
            principal, verifier = str(body["p"]), str(body["v"])
        except (InvalidState, KeyError, TypeError, ValueError):
            raise LookupError("no sign-in is waiting for this answer") from None
        assert upstream.oauth is not None
        handler = ParkedRedirect(callback_uri(upstream.oauth, upstream.name), params)
        store = InMemoryTokenStore()
        auth = _auth(upstream, handler, store, (verifier, _challenge(verifier)))
        engine = auth.engine
        assert engine is not None
        try:
            with anyio.fail_after(60):
                await anyio.to_thread.run_sync(
                    auth.run_flow, _grant(engine), abandon_on_cancel=True
                )
            tokens = store.get_tokens(engine.server_url)
            if tokens is None:
                raise RuntimeError("the authorization server issued no token")
            await self.connections.put(principal, upstream.name, tokens)
        except Exception as exc:
            log.warning("connecting %r for a caller failed: %s", upstream.name, exc)
            return Finished(principal, upstream.name, exc)
        session, elicitation = body.get("s"), body.get("e")
        if isinstance(session, str) and isinstance(elicitation, str):
            params_out = {"elicitationId": elicitation}
            await notify_session(session, ELICITATION_COMPLETE, params_out, self.source.state)
        return Finished(principal, upstream.name)


def _grant(engine: OAuthEngine) -> Flow[None]:
    """Discover the upstream's authorization server (RFC 9728, or the pinned one), then
    run the authorization code grant."""
    yield from engine.discover(None)
    yield from engine.obtain(engine.configured_scopes)
