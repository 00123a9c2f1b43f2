"""Per-user upstream credentials: ``[upstream.auth] kind = "per_user"``.

Servers for SaaS APIs act as one user, so each caller of the gateway connects their own
account.  The pieces, all reusing :mod:`mcpkit.auth.client` (discovery, PKCE, refresh):

* :class:`Connections` — each caller's tokens for each upstream in the gateway's state
  backend, sealed with the server keyring for that principal and upstream (AES-GCM, the
  principal and upstream the additional data): nothing in Redis or SQLite reads as a
  token, and a record copied to another principal's key does not open.
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
  A grant in progress lives in the process that redirected the user (the callback must
  reach it: one gateway, or sticky routing for ``/connect``).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, quote, urlsplit

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx

from ..auth.client import InMemoryTokenStore, OAuthAuth, TokenSet, UrlPolicy
from ..auth.client.flow import Flow, OAuthEngine
from ..auth.client.grants import AuthorizationCodeGrant, ClientCredentialsGrant
from ..auth.client.metadata import AuthServerMetadata, canonical_resource
from ..protocol.negotiation import client_has
from ..protocol.sealing import InvalidState, Keyring
from ..server.mrtr import input_required_result
from ..state.base import StateBackend
from ..types.codec import decode, encode
from ..types.errors import McpError
from .config import UpstreamConfig, UpstreamOAuth

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
#: How long a connect link opens, and how long a started sign-in waits for its callback.
LINK_TTL_S = 600.0
#: How long a stored connection opens (its refresh token may outlive the access token).
CONNECTION_TTL_S = 365 * 24 * 3600.0
#: The ``inputRequests`` key prefix of the gateway's own connect rounds.
CONNECT_KEY = "mcpkit-connect/"
_LINK_BINDING = "mcpkit-gateway-connect-link\0"
_CONNECTION_BINDING = "mcpkit-gateway-connection\0"
_CONNECTION_KEY = "gateway-connection:"
_USED_LINK_KEY = "gateway-connect-used:"


class Sealed(Protocol):
    """Where the keyring and the state backend come from (the running gateway server)."""

    @property
    def keyring(self) -> Keyring: ...

    @property
    def state(self) -> StateBackend: ...


@dataclass(frozen=True, slots=True)
class Sealing:
    """A keyring and a state backend as such a source (outside a running gateway)."""

    keyring: Keyring
    state: StateBackend


@dataclass(frozen=True, slots=True)
class Connection:
    """One caller's account at one upstream."""

    upstream: str
    tokens: TokenSet
    connected_at: float

    def describe(self) -> dict[str, Any]:
        """What the caller may see of it (never a token)."""
        return {
            "upstream": self.upstream,
            "connectedAt": int(self.connected_at),
            "expiresAt": int(self.tokens.expires_at) if self.tokens.expires_at else None,
            "scopes": list(self.tokens.scopes),
            "refreshable": bool(self.tokens.refresh_token),
        }


def _binding(principal: str, upstream: str) -> str:
    return f"{_CONNECTION_BINDING}{principal}\0{upstream}"


class Connections:
    """Callers' sealed tokens per upstream in the state backend."""

    def __init__(self, source: Sealed) -> None:
        self.source = source

    @staticmethod
    def key(principal: str, upstream: str) -> str:
        """The record's key: a hash, so the backend does not list who connected what."""
        digest = hashlib.sha256(f"{principal}\0{upstream}".encode()).hexdigest()
        return _CONNECTION_KEY + digest

    async def get(self, principal: str, upstream: str) -> Connection | None:
        raw = await self.source.state.get(self.key(principal, upstream))
        if raw is None:
            return None
        try:
            sealed = decode(raw)
            body = self.source.keyring.open(sealed, _binding(principal, upstream))
            tokens = TokenSet.from_dict(body["tokens"])
            return Connection(upstream, tokens, float(body["at"]))
        except (InvalidState, KeyError, TypeError, ValueError):
            log.warning("a stored connection to %r does not open: ignored", upstream)
            return None

    async def put(self, principal: str, upstream: str, tokens: TokenSet) -> None:
        body = {"tokens": tokens.to_dict(), "at": time.time()}
        sealed = self.source.keyring.seal(body, _binding(principal, upstream), CONNECTION_TTL_S)
        await self.source.state.set(
            self.key(principal, upstream), encode(sealed), ttl_s=CONNECTION_TTL_S
        )

    async def delete(self, principal: str, upstream: str) -> bool:
        return await self.source.state.delete(self.key(principal, upstream))

    async def of(self, principal: str, upstreams: Sequence[str]) -> list[Connection]:
        """The caller's connections among ``upstreams``."""
        found = [await self.get(principal, name) for name in upstreams]
        return [c for c in found if c is not None]


# ---------------------------------------------------------------------------- links


def connect_link(keyring: Keyring, oauth: UpstreamOAuth, upstream: str, principal: str) -> str:
    """A one-use, short-lived URL of the connect page, sealed for ``principal``."""
    nonce = secrets.token_urlsafe(16)
    sealed = keyring.seal({"p": principal, "n": nonce}, _LINK_BINDING + upstream, LINK_TTL_S)
    return f"{oauth.public_url}/connect/{quote(upstream, safe='')}?link={sealed}"


class LinkRefused(Exception):
    """A connect link that does not open, is used up, or is another caller's."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


async def redeem_link(
    source: Sealed, upstream: str, link: str | None, caller: str | None
) -> tuple[str, str]:
    """The principal a link was made for and its nonce, marked used.  ``caller``: who
    presented it, when the request carried credentials (must be the link's principal)."""
    try:
        body = source.keyring.open(link, _LINK_BINDING + upstream)
        principal, nonce = str(body["p"]), str(body["n"])
    except (InvalidState, KeyError):
        raise LinkRefused(400, "this connect link is not valid (expired or altered)") from None
    if caller is not None and caller != principal:
        raise LinkRefused(403, "this connect link was made for another caller")
    if not await source.state.add(_USED_LINK_KEY + nonce, b"1", ttl_s=LINK_TTL_S):
        raise LinkRefused(409, "this connect link was used already; call the tool again")
    return principal, nonce


# ---------------------------------------------------------------------------- grants


class PinnedCodeGrant(AuthorizationCodeGrant):
    """The authorization code grant, held to the configured ``issuer`` and
    ``token_endpoint`` the way the client-credentials kind is (the same checks)."""

    def __init__(self, handler: Any, oauth: UpstreamOAuth) -> None:
        super().__init__(handler, client_id=oauth.client_id, client_secret=oauth.client_secret)
        # The pinning checks of the client-credentials grant, without its credentials
        # (this grant's client may be public): only the two pins are set.
        self.pin = ClientCredentialsGrant.__new__(ClientCredentialsGrant)
        self.pin.issuer, self.pin.token_endpoint = oauth.issuer, oauth.token_endpoint

    def choose_issuer(self, servers: Sequence[str]) -> str:
        return self.pin.choose_issuer(servers)

    def check_destination(self, as_meta: AuthServerMetadata) -> None:
        self.pin.check_destination(as_meta)


def callback_uri(oauth: UpstreamOAuth, upstream: str) -> str:
    """The redirect URI registered at the upstream's authorization server."""
    return f"{oauth.public_url}/connect/{quote(upstream, safe='')}/callback"


def _policy(oauth: UpstreamOAuth) -> UrlPolicy:
    return UrlPolicy.local_development() if oauth.allow_loopback else UrlPolicy()


def _auth(upstream: UpstreamConfig, handler: Any, store: InMemoryTokenStore) -> OAuthAuth:
    oauth = upstream.oauth
    assert oauth is not None and upstream.url is not None
    return OAuthAuth(
        PinnedCodeGrant(handler, oauth),
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
        link = connect_link(self.keyring, self.upstream.oauth, name, principal)
        message = f"Connect your {name} account to continue"
        if ctx.meta.era == "legacy":
            elicitation_id = secrets.token_urlsafe(12)
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


class ParkedRedirect:
    """The redirect handler of a connect page: the authorization URL is handed to the
    page (which redirects the user there), the callback's parameters come back later."""

    def __init__(self, redirect_uri: str) -> None:
        self._redirect_uri = redirect_uri
        self.url: str | None = None
        self.url_ready = anyio.Event()
        self.answer: dict[str, str] = {}
        #: Set from the event loop; waited for in the grant's worker thread.
        self.answered = threading.Event()

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    def authorize(self, url: str) -> Mapping[str, str]:
        """(In the grant's worker thread.)"""
        self.url = url
        anyio.from_thread.run_sync(self.url_ready.set)
        if not self.answered.wait(LINK_TTL_S):
            raise TimeoutError("the sign-in was not finished in time")
        return self.answer


@dataclass
class Pending:
    """A sign-in in progress: redirected to the authorization server, not yet back."""

    principal: str
    upstream: str
    handler: ParkedRedirect
    done: anyio.Event = field(default_factory=anyio.Event)
    error: Exception | None = None


class ConnectFlows:
    """The sign-ins the ``/connect`` pages run (see the module)."""

    def __init__(self, source: Sealed) -> None:
        self.source = source
        self.connections = Connections(source)
        #: OAuth ``state`` -> its sign-in.
        self.pending: dict[str, Pending] = {}
        self.tg: TaskGroup | None = None

    async def start(self, principal: str, upstream: UpstreamConfig) -> str:
        """Begin the grant for ``principal``: the authorization URL to send them to."""
        assert upstream.oauth is not None and self.tg is not None
        handler = ParkedRedirect(callback_uri(upstream.oauth, upstream.name))
        store = InMemoryTokenStore()
        auth = _auth(upstream, handler, store)
        engine = auth.engine
        assert engine is not None
        pending = Pending(principal, upstream.name, handler)
        self.tg.start_soon(self._run, auth, engine, pending, store)
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:

                async def first_of(event: anyio.Event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(first_of, handler.url_ready)
                tg.start_soon(first_of, pending.done)
        if handler.url is None:
            raise pending.error or RuntimeError("the sign-in ended before it began")
        state = dict(parse_qsl(urlsplit(handler.url).query)).get("state", "")
        self.pending[state] = pending
        return handler.url

    async def _run(
        self, auth: OAuthAuth, engine: OAuthEngine, pending: Pending, store: InMemoryTokenStore
    ) -> None:
        try:
            # The grant runs in a worker thread (the client's public, synchronous driver):
            # it waits there for the callback while the event loop serves it.
            await anyio.to_thread.run_sync(auth.run_flow, _grant(engine), abandon_on_cancel=True)
            tokens = store.get_tokens(engine.server_url)
            if tokens is None:
                raise RuntimeError("the authorization server issued no token")
            await self.connections.put(pending.principal, pending.upstream, tokens)
        except Exception as exc:
            log.warning("connecting %r for a caller failed: %s", pending.upstream, exc)
            pending.error = exc
        finally:
            pending.done.set()
            for state, item in list(self.pending.items()):
                if item is pending:
                    del self.pending[state]

    async def finish(self, upstream: str, params: dict[str, str]) -> Pending:
        """The authorization server's redirect back: hand it to the grant, wait for it."""
        pending = self.pending.pop(params.get("state", ""), None)
        if pending is None or pending.upstream != upstream:
            raise LookupError("no sign-in is waiting for this answer")
        pending.handler.answer = params
        pending.handler.answered.set()
        with anyio.fail_after(60):
            await pending.done.wait()
        return pending


def _grant(engine: OAuthEngine) -> Flow[None]:
    """Discover the upstream's authorization server (RFC 9728, or the pinned one), then
    run the authorization code grant."""
    yield from engine.discover(None)
    yield from engine.obtain(engine.configured_scopes)
