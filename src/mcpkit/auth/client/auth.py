"""httpx ``Auth`` classes: plug OAuth into any httpx-based MCP client (``auth=...``).

They implement httpx's auth-flow protocol for both ``httpx.AsyncClient`` (asyncio or trio)
and ``httpx.Client``.  Response bodies of MCP requests are never read here (SSE streams
stay streams); discovery and token requests go through a separate, SSRF-guarded client.
Concurrent requests share one token: a lock makes sure only one of them runs discovery,
registration or a grant, and the others pick up its result.

::

    auth = OAuthClientAuth(redirect_handler=LoopbackRedirectHandler(), store=FileTokenStore(p))
    async with httpx.AsyncClient(auth=auth) as http: ...
    # or: HttpTransport(url, auth=auth)
"""

from __future__ import annotations

import hashlib
import inspect
import threading
from collections import OrderedDict
from collections.abc import AsyncGenerator, Generator, Mapping
from typing import Any, TypeVar

import anyio
import httpx

from .browser import RedirectHandler
from .errors import AuthorizationError, SsrfBlocked
from .flow import Attempt, Fetch, Flow, OAuthEngine, UserAuthorization
from .grants import (
    AssertionSource,
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    Grant,
    IdJagGrant,
    JwtBearerGrant,
    SubjectSource,
    TokenExchangeGrant,
)
from .ssrf import UrlPolicy, guarded_async_client, guarded_client, next_hop
from .store import InMemoryTokenStore, TokenStore

__all__ = [
    "ClientCredentialsAuth",
    "EnterpriseAuth",
    "JwtBearerAuth",
    "OAuthAuth",
    "OAuthClientAuth",
    "TokenExchangeAuth",
]

T = TypeVar("T")
#: What the one exchange asks its driver to do (see ``OAuthAuth._exchange``).
_Op = httpx.Request | httpx.Response | Flow[Any]


class OAuthAuth(httpx.Auth):
    """Bearer/DPoP tokens for one MCP server, obtained and renewed through ``grant``."""

    requires_request_body = True  # a request may be sent again after authorization
    requires_response_body = False  # MCP responses may be SSE streams: never buffer them

    def __init__(
        self,
        grant: Grant,
        *,
        server_url: str | None = None,
        store: TokenStore | None = None,
        policy: UrlPolicy | None = None,
        scopes: list[str] | None = None,
        dpop: bool | None = None,
        max_step_ups: int = 2,
        legacy_fallback: bool = False,
        verify: Any = True,
    ) -> None:
        self.grant = grant
        self.policy = policy or UrlPolicy()
        self.verify = verify
        self._options: dict[str, Any] = {
            "store": store,
            "policy": self.policy,
            "scopes": scopes,
            "dpop": dpop,
            "max_step_ups": max_step_ups,
            "legacy_fallback": legacy_fallback,
        }
        self._engine: OAuthEngine | None = None
        if server_url is not None:
            self._engine = OAuthEngine(grant, server_url=server_url, **self._options)
        self._thread_lock = threading.Lock()
        self._async_lock: anyio.Lock | None = None

    @property
    def engine(self) -> OAuthEngine | None:
        return self._engine

    def _engine_for(self, request: httpx.Request) -> OAuthEngine:
        if self._engine is None:
            url = request.url.copy_with(query=None, fragment=None)
            self._engine = OAuthEngine(self.grant, server_url=str(url), **self._options)
        return self._engine

    # ------------------------------------------------------------------ one exchange
    def _exchange(self, request: httpx.Request) -> Generator[_Op, Any, None]:
        """The exchange for one MCP request, written once for both drivers below.

        Yields what the driver must do: an ``httpx.Request`` to send (the reply is its
        response), an ``httpx.Response`` whose small error body to read (frees the
        connection), or a :data:`Flow` to run under the lock (the reply is its value).
        """
        engine = self._engine_for(request)
        if not engine.applies_to(request.url):
            yield request  # another origin: never show it our token
            return
        if _stale(engine):
            yield engine.before_send()
        sent = engine.authorize_request(request)
        response = yield request
        attempt = Attempt()
        while (action := engine.on_response(response, sent, attempt)) is not None:
            yield response
            yield engine.handle(action, sent, attempt)
            sent = engine.authorize_request(request)
            response = yield request

    @staticmethod
    def _next(ops: Generator[_Op, Any, None], reply: Any) -> _Op | None:
        try:
            return ops.send(reply)
        except StopIteration:
            return None

    @staticmethod
    def _step(flow: Flow[Any], value: Any, error: BaseException | None) -> tuple[bool, Any]:
        """Advance a grant's flow: (True, its result) when it ends, else (False, next step)."""
        try:
            return False, flow.throw(error) if error is not None else flow.send(value)
        except StopIteration as stop:
            return True, stop.value

    def _hop(self, step: Fetch, response: httpx.Response) -> httpx.Request | None:
        """The redirect to follow after ``response`` (None: it is the answer)."""
        target = next_hop(response, self.policy) if step.follow_redirects else None
        if target is None:
            return None
        return httpx.Request("GET", target, headers={"Accept": "application/json"})

    # ------------------------------------------------------------------ async driver
    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self._async_lock is None:
            self._async_lock = anyio.Lock()
        ops, reply = self._exchange(request), None
        while (op := self._next(ops, reply)) is not None:
            if isinstance(op, httpx.Request):
                reply = yield op
            elif isinstance(op, httpx.Response):
                reply = None
                await op.aread()
            else:
                async with self._async_lock:
                    reply = await self._arun(op)

    async def _arun(self, flow: Flow[T]) -> T:
        async with guarded_async_client(self.policy, verify=self.verify) as client:
            value: Any = None
            error: BaseException | None = None
            while not (done := self._step(flow, value, error))[0]:
                step, value, error = done[1], None, None
                try:
                    if isinstance(step, Fetch):
                        value = await self._afetch(client, step)
                    else:
                        value = await self._aauthorize(step)
                except httpx.HTTPError as exc:
                    error = exc
            result: T = done[1]
            return result

    async def _afetch(self, client: httpx.AsyncClient, step: Fetch) -> httpx.Response:
        request = step.request
        for _ in range(self.policy.max_redirects + 1):
            response = await client.send(request)
            hop = self._hop(step, response)
            if hop is None:
                return response
            request = hop
        raise SsrfBlocked(f"too many redirects fetching {step.request.url}")

    @staticmethod
    async def _aauthorize(step: UserAuthorization) -> Mapping[str, str]:
        answer = step.handler.authorize(step.url)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, Mapping):
            raise AuthorizationError("the redirect handler returned no parameters")
        return answer

    # ------------------------------------------------------------------ sync driver
    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        ops, reply = self._exchange(request), None
        while (op := self._next(ops, reply)) is not None:
            if isinstance(op, httpx.Request):
                reply = yield op
            elif isinstance(op, httpx.Response):
                reply = None
                op.read()
            else:
                with self._thread_lock:
                    reply = self._run(op)

    def _run(self, flow: Flow[T]) -> T:
        with guarded_client(self.policy, verify=self.verify) as client:
            value: Any = None
            error: BaseException | None = None
            while not (done := self._step(flow, value, error))[0]:
                step, value, error = done[1], None, None
                try:
                    value = (
                        self._fetch(client, step)
                        if isinstance(step, Fetch)
                        else (self._authorize(step))
                    )
                except httpx.HTTPError as exc:
                    error = exc
            result: T = done[1]
            return result

    def _fetch(self, client: httpx.Client, step: Fetch) -> httpx.Response:
        request = step.request
        for _ in range(self.policy.max_redirects + 1):
            response = client.send(request)
            hop = self._hop(step, response)
            if hop is None:
                return response
            request = hop
        raise SsrfBlocked(f"too many redirects fetching {step.request.url}")

    @staticmethod
    def _authorize(step: UserAuthorization) -> Mapping[str, str]:
        handler = step.handler
        sync = getattr(handler, "authorize_sync", None)
        answer = sync(step.url) if callable(sync) else handler.authorize(step.url)
        if inspect.isawaitable(answer):
            close = getattr(answer, "close", None)
            if callable(close):
                close()
            raise AuthorizationError(
                "this redirect handler is async-only: use httpx.AsyncClient, or give it an "
                "authorize_sync method"
            )
        if not isinstance(answer, Mapping):
            raise AuthorizationError("the redirect handler returned no parameters")
        return answer


def _stale(engine: OAuthEngine) -> bool:
    """Whether the token must be renewed (or, for a proactive grant, obtained) first."""
    tokens = engine.tokens
    return engine.proactive if tokens is None else tokens.expired()


class OAuthClientAuth(OAuthAuth):
    """The interactive client: authorization code + PKCE, registration, refresh, step-up.

    ``redirect_handler`` takes the user to the authorization URL and brings back the
    redirect (:class:`~mcpkit.auth.client.browser.LoopbackRedirectHandler` for people,
    :class:`~mcpkit.auth.client.browser.HeadlessRedirectHandler` for tests).  Registration:
    ``client_id``/``client_secret`` if pre-registered (for ``client_issuer`` only, when
    given), else ``client_metadata_url`` when the AS accepts Client ID Metadata Documents,
    else Dynamic Client Registration.
    """

    def __init__(
        self,
        server_url: str | None = None,
        *,
        redirect_handler: RedirectHandler,
        client_name: str = "mcpkit",
        client_id: str | None = None,
        client_secret: str | None = None,
        client_issuer: str | None = None,
        client_metadata_url: str | None = None,
        client_metadata: Mapping[str, Any] | None = None,
        request_refresh_tokens: bool = True,
        **options: Any,
    ) -> None:
        grant = AuthorizationCodeGrant(
            redirect_handler,
            client_name=client_name,
            client_id=client_id,
            client_secret=client_secret,
            client_issuer=client_issuer,
            client_metadata_url=client_metadata_url,
            client_metadata=client_metadata,
            request_refresh_tokens=request_refresh_tokens,
        )
        super().__init__(grant, server_url=server_url, **options)


class ClientCredentialsAuth(OAuthAuth):
    """Machine-to-machine: the client_credentials grant with ``client_secret`` (basic or
    post, as the AS advertises) or ``private_key`` (``private_key_jwt``; PEM, JWK dict or
    joserfc key)."""

    def __init__(
        self,
        client_id: str,
        *,
        client_secret: str | None = None,
        private_key: Any = None,
        signing_alg: str | None = None,
        auth_method: str | None = None,
        assertion_audience: str | None = None,
        server_url: str | None = None,
        **options: Any,
    ) -> None:
        grant = ClientCredentialsGrant(
            client_id,
            client_secret=client_secret,
            private_key=private_key,
            signing_alg=signing_alg,
            auth_method=auth_method,
            assertion_audience=assertion_audience,
        )
        super().__init__(grant, server_url=server_url, **options)


class JwtBearerAuth(OAuthAuth):
    """Workload identity federation: exchange a platform-issued JWT (``assertion``: a
    string or a callable returning a fresh one) with the RFC 7523 JWT bearer grant."""

    def __init__(
        self,
        assertion: AssertionSource,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        server_url: str | None = None,
        **options: Any,
    ) -> None:
        grant = JwtBearerGrant(assertion, client_id=client_id, client_secret=client_secret)
        super().__init__(grant, server_url=server_url, **options)


class EnterpriseAuth(OAuthAuth):
    """Enterprise-managed authorization (ID-JAG): the user's IdP ID token is exchanged at
    the IdP for an identity assertion grant, which the MCP server's AS turns into a token."""

    def __init__(
        self,
        *,
        id_token: AssertionSource,
        idp_token_endpoint: str,
        client_id: str,
        client_secret: str | None = None,
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
        server_url: str | None = None,
        **options: Any,
    ) -> None:
        grant = IdJagGrant(
            id_token=id_token,
            idp_token_endpoint=idp_token_endpoint,
            client_id=client_id,
            client_secret=client_secret,
            idp_client_id=idp_client_id,
            idp_client_secret=idp_client_secret,
        )
        super().__init__(grant, server_url=server_url, **options)


class TokenExchangeAuth(OAuthAuth):
    """Acting for callers (RFC 8693): each request carries a token obtained by exchanging
    the current caller's token (``subject_token()``, e.g. read from a context variable)
    for one whose audience is this server; requests made for nobody (``subject_token()``
    returns None: connecting, listing, health checks) carry the client's own token from
    the client-credentials grant.  The client authenticates at the authorization server
    as :class:`ClientCredentialsAuth` does.

    Exchanged tokens are kept in memory per caller, keyed by a SHA-256 of the caller's
    token (never the token itself), until they expire; at most ``max_subjects`` callers,
    least recently used first out.  Discovery is done once and shared by every caller.
    A refusal of the authorization server is raised as a
    :class:`~mcpkit.auth.client.TokenError` from the request that needed the token."""

    def __init__(
        self,
        subject_token: SubjectSource,
        client_id: str,
        *,
        client_secret: str | None = None,
        private_key: Any = None,
        signing_alg: str | None = None,
        auth_method: str | None = None,
        assertion_audience: str | None = None,
        audience: str | None = None,
        server_url: str | None = None,
        max_subjects: int = 1024,
        **options: Any,
    ) -> None:
        credentials: dict[str, Any] = {
            "client_secret": client_secret,
            "private_key": private_key,
            "signing_alg": signing_alg,
            "auth_method": auth_method,
            "assertion_audience": assertion_audience,
        }
        super().__init__(
            ClientCredentialsGrant(client_id, **credentials), server_url=server_url, **options
        )
        self.subject_token = subject_token
        self.exchange = TokenExchangeGrant(
            subject_token, client_id, audience=audience, **credentials
        )
        self.max_subjects = max_subjects
        self._subjects: OrderedDict[str, OAuthEngine] = OrderedDict()

    def _engine_for(self, request: httpx.Request) -> OAuthEngine:
        own = super()._engine_for(request)
        subject = self.subject_token()
        if not subject:
            return own
        key = hashlib.sha256(subject.encode()).hexdigest()
        engine = self._subjects.get(key)
        if engine is None:
            # Per-caller tokens stay in memory: never in the client's own (maybe on-disk) store.
            options = {**self._options, "store": InMemoryTokenStore()}
            engine = OAuthEngine(self.exchange, server_url=own.server_url, **options)
            self._subjects[key] = engine
            while len(self._subjects) > self.max_subjects:
                self._subjects.popitem(last=False)
        else:
            self._subjects.move_to_end(key)
        if engine.as_meta is None and own.as_meta is not None:
            engine.adopt(own)
        return engine
