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
import ssl
import threading
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from typing import Any, Generic, TypeVar, Unpack

import anyio
import httpx

from .browser import RedirectHandler
from .errors import AuthorizationError, SsrfBlocked
from .flow import Attempt, EngineOptions, Fetch, Flow, OAuthEngine, UserAuthorization
from .grants import (
    AssertionSource,
    AuthorizationCodeGrant,
    ClientCredentials,
    ClientCredentialsGrant,
    Grant,
    IdJagGrant,
    IdJagSettings,
    JwtBearerGrant,
    OptionalClient,
    Registration,
    SubjectSource,
    TokenExchangeGrant,
)
from .ssrf import UrlPolicy, guarded_async_client, guarded_client, next_hop
from .store import InMemoryTokenStore

__all__ = [
    "AuthOptions",
    "ClientCredentialsAuth",
    "ClientCredentialsOptions",
    "EnterpriseAuth",
    "EnterpriseOptions",
    "JwtBearerAuth",
    "JwtBearerOptions",
    "OAuthAuth",
    "OAuthClientAuth",
    "OAuthClientOptions",
    "TokenExchangeAuth",
]

T = TypeVar("T")
#: What the one exchange asks its driver to do (see ``OAuthAuth._exchange``).
_Op = httpx.Request | httpx.Response | Flow[Any]
#: What running a grant's flow asks its driver to do (see ``OAuthAuth._io``).
_Io = httpx.Request | UserAuthorization


class AuthOptions(EngineOptions, total=False):
    """Every ``OAuthAuth``'s options beside its grant: the engine's, the MCP server's
    ``server_url`` (default: the URL of the first request) and ``verify`` (TLS
    verification of the discovery and token requests, as httpx takes it)."""

    server_url: str | None
    verify: ssl.SSLContext | bool


class OAuthClientOptions(Registration, EngineOptions, total=False):
    """:class:`OAuthClientAuth`'s keywords: the client's registration and the options
    (``server_url`` is its first argument)."""

    verify: ssl.SSLContext | bool


class ClientCredentialsOptions(ClientCredentials, AuthOptions, total=False):
    """:class:`ClientCredentialsAuth`'s keywords: the credentials and the options."""


class TokenExchangeOptions(ClientCredentialsOptions, total=False):
    """:class:`TokenExchangeAuth`'s keywords: the client's own, and ``audience`` (the
    exchanged tokens' audience, default: none asked for) and ``max_subjects`` (callers
    whose tokens are kept, default 1024)."""

    audience: str | None
    max_subjects: int


class JwtBearerOptions(OptionalClient, AuthOptions, total=False):
    """:class:`JwtBearerAuth`'s keywords: the optional client and the options."""


class EnterpriseOptions(IdJagSettings, AuthOptions, total=False):
    """:class:`EnterpriseAuth`'s keywords: the IdP and client settings and the options."""


class _Driven(Generic[T]):
    """A generator driven one step at a time: :meth:`next` sends the previous step's
    outcome and returns the next step, or None once it returned (its value: ``result``)."""

    def __init__(self, steps: Generator[Any, Any, T]) -> None:
        self._steps = steps
        self.result: T | None = None

    def next(self, reply: Any = None) -> Any:
        try:
            return self._steps.send(reply)
        except StopIteration as stop:
            self.result = stop.value
            return None


class OAuthAuth(httpx.Auth):
    """Bearer/DPoP tokens for one MCP server, obtained and renewed through ``grant``."""

    requires_request_body = True  # a request may be sent again after authorization
    requires_response_body = False  # MCP responses may be SSE streams: never buffer them

    def __init__(
        self,
        grant: Grant,
        *,
        server_url: str | None = None,
        verify: ssl.SSLContext | bool = True,
        **options: Unpack[EngineOptions],
    ) -> None:
        self.grant = grant
        self.policy = options.get("policy") or UrlPolicy()
        self.verify = verify
        self._options: EngineOptions = {**options, "policy": self.policy}
        self._engine: OAuthEngine | None = None
        if server_url is not None:
            self._engine = OAuthEngine(grant, server_url=server_url, **self._options)
        self._thread_lock = threading.Lock()
        self._async_lock: anyio.Lock | None = None

    def _with_grant(
        self,
        options: Mapping[str, Any],
        settings: Any,
        make: Callable[..., Grant],
        *args: Any,
        **own: Any,
    ) -> dict[str, Any]:
        """Start as the auth of the grant ``make(*args, **its settings)``: the keywords of
        ``options`` that the TypedDict ``settings`` names are the grant's, the others (and
        ``own``) this auth's :class:`AuthOptions`.  Returns the grant's keywords."""
        names = settings.__required_keys__ | settings.__optional_keys__
        mine = {k: v for k, v in options.items() if k in names}
        rest = {k: v for k, v in options.items() if k not in names}
        OAuthAuth.__init__(self, make(*args, **mine), **rest, **own)
        return mine

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

    def _io(self, flow: Flow[T]) -> Generator[_Io, Any, T]:
        """A grant's flow down to its I/O, written once for both drivers below: yields a
        request for the guarded client (the reply is its response, or the ``httpx``
        error it raised, which goes on into the flow) or a :class:`UserAuthorization`
        (the reply is the redirect's parameters).  Redirects are followed here."""
        reply: Any = None
        while True:
            try:
                error = reply if isinstance(reply, httpx.HTTPError) else None
                step = flow.throw(error) if error is not None else flow.send(reply)
            except StopIteration as stop:
                result: T = stop.value
                return result
            if isinstance(step, UserAuthorization):
                reply = yield step
            else:
                reply = yield from self._fetch(step)

    def _fetch(self, step: Fetch) -> Generator[_Io, Any, Any]:
        """One :class:`Fetch`, following the redirects it allows: the final response, or
        the ``httpx`` error that ended it."""
        request = step.request
        for _ in range(self.policy.max_redirects + 1):
            response = yield request
            if isinstance(response, httpx.HTTPError):
                return response
            hop = self._hop(step, response)
            if hop is None:
                return response
            request = hop
        return SsrfBlocked(f"too many redirects fetching {step.request.url}")

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
        ops, reply = _Driven(self._exchange(request)), None
        while (op := ops.next(reply)) is not None:
            if isinstance(op, httpx.Request):
                reply = yield op
            elif isinstance(op, httpx.Response):
                reply = None
                await op.aread()
            else:
                async with self._async_lock:
                    reply = await self._arun(op)

    async def _arun(self, flow: Flow[T]) -> T | None:
        async with guarded_async_client(self.policy, verify=self.verify) as client:
            io = _Driven(self._io(flow))
            reply: Any = None
            while (step := io.next(reply)) is not None:
                try:
                    if isinstance(step, httpx.Request):
                        reply = await client.send(step)
                    else:
                        reply = await self._aauthorize(step)
                except httpx.HTTPError as exc:
                    reply = exc
            return io.result

    @staticmethod
    async def _aauthorize(step: UserAuthorization) -> Mapping[str, str]:
        answer = step.handler.authorize(step.url)
        if inspect.isawaitable(answer):
            answer = await answer
        return _parameters(answer)

    # ------------------------------------------------------------------ sync driver
    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        ops, reply = _Driven(self._exchange(request)), None
        while (op := ops.next(reply)) is not None:
            if isinstance(op, httpx.Request):
                reply = yield op
            elif isinstance(op, httpx.Response):
                reply = None
                op.read()
            else:
                with self._thread_lock:
                    reply = self.run_flow(op)

    def run_flow(self, flow: Flow[T], client: httpx.Client | None = None) -> T | None:
        """Run one of the engine's flows (discovery, registration, a grant, a refresh) to
        its end in this thread: its requests go through ``client`` (default: a guarded
        client of this auth's policy, closed afterwards; a caller's client stays open),
        redirects are followed as the flow allows and the user is taken to the
        authorization URL by the grant's redirect handler.  Errors of the flow propagate."""
        if client is None:
            with guarded_client(self.policy, verify=self.verify) as own:
                return self.run_flow(flow, own)
        io = _Driven(self._io(flow))
        reply: Any = None
        while (step := io.next(reply)) is not None:
            try:
                reply = (
                    client.send(step) if isinstance(step, httpx.Request) else self._authorize(step)
                )
            except httpx.HTTPError as exc:
                reply = exc
        return io.result

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
        return _parameters(answer)


def _parameters(answer: object) -> Mapping[str, str]:
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
        **options: Unpack[OAuthClientOptions],
    ) -> None:
        grant = AuthorizationCodeGrant
        self._with_grant(options, Registration, grant, redirect_handler, server_url=server_url)


class ClientCredentialsAuth(OAuthAuth):
    """Machine-to-machine: the client_credentials grant, authenticated as
    :class:`~mcpkit.auth.client.grants.ClientCredentials` says (``client_secret`` or
    ``private_key``)."""

    def __init__(self, client_id: str, **options: Unpack[ClientCredentialsOptions]) -> None:
        self._with_grant(options, ClientCredentials, ClientCredentialsGrant, client_id)


class JwtBearerAuth(OAuthAuth):
    """Workload identity federation: exchange a platform-issued JWT (``assertion``: a
    string or a callable returning a fresh one) with the RFC 7523 JWT bearer grant."""

    def __init__(self, assertion: AssertionSource, **options: Unpack[JwtBearerOptions]) -> None:
        self._with_grant(options, OptionalClient, JwtBearerGrant, assertion)


class EnterpriseAuth(OAuthAuth):
    """Enterprise-managed authorization (ID-JAG): the user's IdP ID token is exchanged at
    the IdP for an identity assertion grant, which the MCP server's AS turns into a token
    (settings: :class:`~mcpkit.auth.client.grants.IdJagSettings`)."""

    def __init__(self, **options: Unpack[EnterpriseOptions]) -> None:
        self._with_grant(options, IdJagSettings, IdJagGrant)


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
        self, subject_token: SubjectSource, client_id: str, **options: Unpack[TokenExchangeOptions]
    ) -> None:
        audience = options.pop("audience", None)
        self.max_subjects = options.pop("max_subjects", 1024)
        grant = ClientCredentialsGrant
        credentials = self._with_grant(options, ClientCredentials, grant, client_id)
        self.subject_token = subject_token
        self.exchange = TokenExchangeGrant(
            subject_token, client_id, audience=audience, **credentials
        )
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
            options: EngineOptions = {**self._options, "store": InMemoryTokenStore()}
            engine = OAuthEngine(self.exchange, server_url=own.server_url, **options)
            self._subjects[key] = engine
            while len(self._subjects) > self.max_subjects:
                self._subjects.popitem(last=False)
        else:
            self._subjects.move_to_end(key)
        if engine.as_meta is None and own.as_meta is not None:
            engine.adopt(own)
        return engine
