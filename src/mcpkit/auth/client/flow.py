"""The OAuth client's logic, written sans-IO.

Every piece of the flow is a generator that *yields* what it needs done — a
:class:`Fetch` (an HTTP request to send through the SSRF-guarded client) or a
:class:`UserAuthorization` (take the user to a URL and bring back the redirect's
parameters) — and receives the result.  The httpx ``Auth`` classes in
:mod:`mcpkit.auth.client.auth` drive these generators with asyncio/trio or with plain
threads, so the logic exists once.

What happens on a challenge from the MCP server:

* **401** — discover Protected Resource Metadata (header, path-aware, root), check that it
  names this server, pick its authorization server, discover that server's metadata (in
  the spec's order, issuer compared exactly), then refresh the token if we hold a refresh
  token from *that* issuer, else run the grant (authorization code + PKCE S256, client
  credentials, JWT bearer, ...).  A second 401 for the same request after a fresh token is
  an error, not a loop.
* **403 ``insufficient_scope``** — step up: ask again for the union of the scopes we had
  and the ones challenged, at most ``max_step_ups`` times per request, and not at all when
  the token already carries every challenged scope (re-asking cannot help).
* **401 ``use_dpop_nonce``** (DPoP) — retry once with the server's nonce.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, Unpack

import httpx

from ..challenge import Challenge, parse_challenges
from .browser import RedirectHandler
from .clientauth import apply_client_auth
from .dpop import DpopKey
from .errors import (
    AuthorizationError,
    DiscoveryError,
    NoOAuthOffered,
    OAuthError,
    SsrfBlocked,
    TokenError,
)
from .metadata import (
    AuthServerMetadata,
    ResourceMetadata,
    as_metadata_urls,
    canonical_resource,
    default_as_metadata,
    parse_as_metadata,
    parse_resource_metadata,
    prm_urls,
)
from .ssrf import UrlPolicy, check_url
from .store import ClientInfo, InMemoryTokenStore, TokenSet, TokenStore

if TYPE_CHECKING:
    from .grant_base import Grant

__all__ = ["Attempt", "EngineOptions", "Fetch", "Flow", "OAuthEngine", "UserAuthorization"]

T = TypeVar("T")


@dataclass(slots=True)
class Fetch:
    """Send ``request`` through the guarded client; GETs may follow checked redirects."""

    request: httpx.Request
    follow_redirects: bool = False


@dataclass(slots=True)
class UserAuthorization:
    """Take the user to ``url`` with ``handler``; the result is the redirect's parameters."""

    url: str
    handler: RedirectHandler


Step = Fetch | UserAuthorization
Flow = Generator[Step, Any, T]


@dataclass(slots=True)
class Attempt:
    """Per-request counters that keep one request from looping."""

    step_ups: int = 0
    nonce_retries: int = 0
    refreshed: bool = False
    granted: bool = False


@dataclass(slots=True)
class Action:
    kind: str  # "unauthorized" | "step_up" | "nonce"
    challenge: Challenge | None = None


@dataclass(slots=True)
class GrantContext:
    engine: OAuthEngine
    as_meta: AuthServerMetadata
    resource: str
    scopes: list[str] | None
    prm: ResourceMetadata | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class EngineOptions(TypedDict, total=False):
    """How an :class:`OAuthEngine` behaves beside its grant; every ``OAuthAuth`` takes
    them too and hands them on, so they are listed here once.  ``store``: where tokens
    and registrations are kept (default: in memory); ``policy``: the SSRF guard of
    discovery and token requests (default :class:`UrlPolicy`); ``scopes``: ask for these
    instead of what the challenge or the metadata suggests; ``dpop``: bind tokens to a
    key (None: when the authorization server supports it); ``max_step_ups`` (default 2):
    insufficient-scope re-authorizations per request; ``legacy_fallback`` (default
    False): without protected resource metadata, use the server's origin as the
    authorization server (2025-03-26 servers)."""

    store: TokenStore | None
    policy: UrlPolicy | None
    scopes: list[str] | None
    dpop: bool | None
    max_step_ups: int
    legacy_fallback: bool


def json_body(response: httpx.Response) -> Any:
    """The response's JSON, or None when the body is not JSON (the callers then say what
    they were missing)."""
    try:
        return response.json()
    except ValueError:
        return None


def refused(response: httpx.Response, what: str) -> TokenError:
    """The error for a token endpoint's refusal: ``what`` and the OAuth error it named."""
    error, text = _error_of(response)
    return TokenError(f"{what}: {text}", error)


def _error_of(response: httpx.Response) -> tuple[str | None, str]:
    data = json_body(response)
    if isinstance(data, dict):
        error = data.get("error") if isinstance(data.get("error"), str) else None
        description = data.get("error_description")
        text = f"{error}: {description}" if description else (error or "")
        return error, text or f"HTTP {response.status_code}"
    return None, f"HTTP {response.status_code}"


class OAuthEngine:
    """State and logic for one protected resource (an MCP server URL)."""

    def __init__(self, grant: Grant, *, server_url: str, **options: Unpack[EngineOptions]) -> None:
        self.grant = grant
        self.server_url = canonical_resource(server_url)
        store = options.get("store")
        self.store: TokenStore = store if store is not None else InMemoryTokenStore()
        self.policy = options.get("policy") or UrlPolicy()
        scopes = options.get("scopes")
        self.configured_scopes = list(scopes) if scopes is not None else None
        self.dpop = options.get("dpop")
        self.max_step_ups = options.get("max_step_ups", 2)
        self.legacy_fallback = options.get("legacy_fallback", False)
        self.prm: ResourceMetadata | None = None
        self.as_meta: AuthServerMetadata | None = None
        self.requested_scopes: list[str] | None = None
        self.dpop_key: DpopKey | None = None
        self._tokens: TokenSet | None = None
        self._loaded = False

    # ------------------------------------------------------------------ tokens
    @property
    def tokens(self) -> TokenSet | None:
        if not self._loaded:
            self._loaded = True
            self._tokens = self.store.get_tokens(self.server_url)
        return self._tokens

    def set_tokens(self, tokens: TokenSet | None) -> None:
        self._loaded = True
        self._tokens = tokens
        self.store.set_tokens(self.server_url, tokens)

    @property
    def resource(self) -> str:
        """The RFC 8707 ``resource`` value: exactly as the metadata publishes it."""
        return self.prm.resource if self.prm is not None else self.server_url

    # ------------------------------------------------------------------ request side
    def applies_to(self, url: httpx.URL) -> bool:
        """Tokens go only to the server they were obtained for (same origin)."""
        mine = httpx.URL(self.server_url)
        return (url.scheme, url.host, url.port) == (mine.scheme, mine.host, mine.port)

    @property
    def proactive(self) -> bool:
        """Whether a missing token is obtained before sending (see ``Grant.proactive``)."""
        return self.grant.proactive and self.as_meta is not None

    def adopt(self, other: OAuthEngine) -> None:
        """Take over what ``other`` discovered for the same resource (metadata, DPoP key),
        so that a second identity at one server needs no discovery round trips."""
        self.prm, self.as_meta, self.dpop_key = other.prm, other.as_meta, other.dpop_key

    def before_send(self) -> Flow[None]:
        """Refresh an expired token before using it (when we can); with a proactive grant,
        obtain a missing one."""
        tokens = self.tokens
        if tokens is not None and tokens.expired():
            if tokens.refresh_token and tokens.issuer and (yield from self.refresh()):
                return
            if self.tokens is not None and not self.tokens.refresh_token:
                self.set_tokens(None)  # nothing to renew it with: the 401 starts a grant
        if self.tokens is None and self.proactive:
            yield from self.obtain(self.select_scopes(None))

    def authorize_request(self, request: httpx.Request) -> str | None:
        tokens = self.tokens
        if tokens is None:
            return None
        if tokens.is_dpop:
            if self.dpop_key is None:
                self.set_tokens(None)  # a DPoP-bound token without its key is useless
                return None
            request.headers["Authorization"] = f"DPoP {tokens.access_token}"
            request.headers["DPoP"] = self.dpop_key.proof(
                request.method, str(request.url), access_token=tokens.access_token
            )
        else:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"
        return tokens.access_token

    def on_response(
        self, response: httpx.Response, sent: str | None, attempt: Attempt
    ) -> Action | None:
        nonce_changed = False
        if self.dpop_key is not None:
            nonce_changed = self.dpop_key.remember_nonce(
                str(response.request.url), response.headers.get("dpop-nonce")
            )
        status = response.status_code
        if status not in (401, 403):
            return None
        challenges = parse_challenges(", ".join(response.headers.get_list("www-authenticate")))
        challenge = self._pick(challenges)
        if status == 401:
            if (
                challenge is not None
                and challenge.error == "use_dpop_nonce"
                and nonce_changed
                and attempt.nonce_retries < 2
            ):
                attempt.nonce_retries += 1
                return Action("nonce", challenge)
            return Action("unauthorized", challenge)
        for candidate in challenges:
            if candidate.error == "insufficient_scope":
                return Action("step_up", candidate)
        return None

    def _pick(self, challenges: list[Challenge]) -> Challenge | None:
        order = ("dpop", "bearer") if self.dpop_key is not None else ("bearer", "dpop")
        for scheme in order:
            for challenge in challenges:
                if challenge.scheme.lower() == scheme:
                    return challenge
        return challenges[0] if challenges else None

    def handle(self, action: Action, sent: str | None, attempt: Attempt) -> Flow[None]:
        if action.kind == "nonce":
            return
        current = self.tokens
        if current is not None and current.access_token != sent:
            return  # someone else got a newer token while we waited: just use it
        if action.kind == "unauthorized":
            yield from self._unauthorized(action.challenge, sent, attempt)
        elif action.kind == "step_up":
            yield from self._step_up(action.challenge, attempt)

    def _unauthorized(
        self, challenge: Challenge | None, sent: str | None, attempt: Attempt
    ) -> Flow[None]:
        if attempt.granted:
            raise AuthorizationError(
                "the server still answers 401 after a new access token was obtained; "
                "check that the authorization server issues tokens for this resource"
            )
        yield from self.discover(challenge)
        assert self.as_meta is not None
        tokens = self.tokens
        if tokens is not None and tokens.issuer != self.as_meta.issuer:
            self.set_tokens(None)  # another AS now: its tokens and credentials don't carry over
            tokens = None
        if (
            tokens is not None
            and tokens.refresh_token
            and sent is not None
            and not attempt.refreshed
        ):
            attempt.refreshed = True
            if (yield from self.refresh()):
                return
        self.set_tokens(None)
        scopes = self.select_scopes(challenge.scopes if challenge is not None else None)
        attempt.granted = True
        yield from self.obtain(scopes)

    def _step_up(self, challenge: Challenge | None, attempt: Attempt) -> Flow[None]:
        tokens = self.tokens
        needed = (challenge.scopes if challenge is not None else None) or []
        granted = set(tokens.scopes) if tokens is not None else set()
        if needed and set(needed) <= granted:
            raise AuthorizationError(
                f"the server refuses with insufficient_scope although the token already has "
                f"{' '.join(needed)!r}; giving up rather than asking again"
            )
        attempt.step_ups += 1
        if attempt.step_ups > self.max_step_ups:
            raise AuthorizationError(
                f"still insufficient scope after {self.max_step_ups} step-up authorizations"
            )
        if self.as_meta is None:
            yield from self.discover(challenge)
        scopes = self.select_scopes(needed or None, also=sorted(granted))
        attempt.granted = True
        yield from self.obtain(scopes)

    # ------------------------------------------------------------------ scopes
    def select_scopes(
        self, challenged: list[str] | None, *, also: list[str] | None = None
    ) -> list[str] | None:
        """Challenge scopes first, else the resource's ``scopes_supported``, else none —
        united with what we asked for before (re-authorization never drops scopes)."""
        if self.configured_scopes is not None:
            base: list[str] = list(self.configured_scopes)
            if challenged:
                base += challenged
        elif challenged:
            base = list(challenged)
        elif self.prm is not None and self.prm.scopes_supported:
            base = list(self.prm.scopes_supported)
        else:
            base = []
        merged = list(dict.fromkeys([*(self.requested_scopes or []), *(also or []), *base]))
        as_scopes = self.as_meta.scopes_supported if self.as_meta is not None else None
        if (
            merged
            and self.grant.wants_refresh
            and as_scopes is not None
            and "offline_access" in as_scopes
            and "offline_access" not in merged
        ):
            merged.append("offline_access")
        return merged or None

    # ------------------------------------------------------------------ discovery
    def get_json(self, url: str) -> Flow[tuple[int, Any]]:
        request = httpx.Request("GET", url, headers={"Accept": "application/json"})
        try:
            response: httpx.Response = yield Fetch(request, follow_redirects=True)
        except SsrfBlocked:
            raise
        except httpx.HTTPError:
            return 0, None
        if response.status_code != 200:
            return response.status_code, None
        return 200, json_body(response)

    def discover(self, challenge: Challenge | None) -> Flow[None]:
        header_url = challenge.resource_metadata if challenge is not None else None
        if header_url is not None:
            try:
                check_url(header_url, self.policy)
            except SsrfBlocked as exc:
                raise DiscoveryError(f"resource_metadata URL refused: {exc}") from None
        prm: ResourceMetadata | None = None
        tried: list[str] = []
        for url in prm_urls(self.server_url, header_url):
            tried.append(url)
            try:
                status, doc = yield from self.get_json(url)
            except SsrfBlocked as exc:
                raise DiscoveryError(f"metadata URL refused: {exc}") from None
            if status == 200 and doc is not None:
                prm = parse_resource_metadata(doc, self.server_url)
                break
        if prm is None:
            if not self.legacy_fallback:
                raise NoOAuthOffered(
                    "no protected resource metadata (RFC 9728) found; tried " + ", ".join(tried)
                )
            self.prm = None
            origin = httpx.URL(self.server_url)
            base = f"{origin.scheme}://{origin.netloc.decode('ascii')}"
            self._set_as(
                (yield from self.discover_as(base, required=False)) or default_as_metadata(base)
            )
            return
        self.prm = prm
        issuer = self.grant.choose_issuer(prm.authorization_servers)
        self._set_as((yield from self.discover_as(issuer)))

    def _set_as(self, as_meta: AuthServerMetadata | None) -> None:
        if as_meta is None:
            raise DiscoveryError("no authorization server metadata")
        for name in ("token_endpoint", "registration_endpoint"):
            url = getattr(as_meta, name)
            if url is not None:
                try:
                    check_url(url, self.policy)
                except SsrfBlocked as exc:
                    raise DiscoveryError(f"{name} refused: {exc}") from None
        self.as_meta = as_meta
        if self.dpop_key is None and self._want_dpop(as_meta):
            self.dpop_key = DpopKey()

    def _want_dpop(self, as_meta: AuthServerMetadata) -> bool:
        if self.dpop is False:
            return False
        supported = as_meta.dpop_signing_alg_values_supported or []
        if self.dpop is True:
            if supported and DpopKey.alg not in supported:
                raise DiscoveryError("the authorization server does not accept ES256 DPoP proofs")
            return True
        return DpopKey.alg in supported

    def discover_as(self, issuer: str, *, required: bool = True) -> Flow[AuthServerMetadata | None]:
        try:
            check_url(issuer, self.policy)
        except SsrfBlocked as exc:
            raise DiscoveryError(f"authorization server {issuer!r} refused: {exc}") from None
        for url in as_metadata_urls(issuer):
            try:
                status, doc = yield from self.get_json(url)
            except SsrfBlocked as exc:
                raise DiscoveryError(f"metadata URL refused: {exc}") from None
            if status == 200 and doc is not None:
                return parse_as_metadata(doc, issuer)
        if required:
            raise DiscoveryError(f"no authorization server metadata found for {issuer!r}")
        return None

    def ensure_as(self, issuer: str) -> Flow[AuthServerMetadata]:
        if self.as_meta is not None and self.as_meta.issuer == issuer:
            return self.as_meta
        self._set_as((yield from self.discover_as(issuer)))
        assert self.as_meta is not None
        return self.as_meta

    # ------------------------------------------------------------------ tokens out
    def obtain(self, scopes: list[str] | None) -> Flow[None]:
        assert self.as_meta is not None
        self.requested_scopes = scopes
        ctx = GrantContext(self, self.as_meta, self.resource, scopes, self.prm)
        tokens: TokenSet = yield from self.grant.obtain(ctx)
        tokens.issuer = self.as_meta.issuer
        tokens.resource = self.resource
        if not tokens.scopes and scopes:
            tokens.scopes = list(scopes)  # RFC 6749 §5.1: omitted scope = as requested
        self.set_tokens(tokens)

    def refresh(self) -> Flow[bool]:
        tokens = self.tokens
        if tokens is None or not tokens.refresh_token or not tokens.issuer:
            return False
        try:
            as_meta = yield from self.ensure_as(tokens.issuer)
        except OAuthError:
            return False
        client = self.grant.existing_client(self, as_meta)
        if client is None:
            return False
        form = {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "resource": tokens.resource or self.resource,
        }
        try:
            fresh = yield from self.token_request(as_meta, form, client)
        except TokenError:
            self.set_tokens(None)  # refused (e.g. invalid_grant): a new grant is needed
            return False
        except httpx.HTTPError:
            return False  # unreachable for now: keep the refresh token for later
        fresh.issuer = tokens.issuer
        fresh.resource = tokens.resource
        fresh.refresh_token = fresh.refresh_token or tokens.refresh_token
        fresh.scopes = fresh.scopes or tokens.scopes
        self.set_tokens(fresh)
        return True

    def post_form(
        self, url: str, form: dict[str, str], headers: dict[str, str] | None = None
    ) -> Flow[httpx.Response]:
        all_headers = {"Accept": "application/json", **(headers or {})}
        request = httpx.Request("POST", url, data=form, headers=all_headers)
        response: httpx.Response = yield Fetch(request)
        return response

    def token_request(
        self,
        as_meta: AuthServerMetadata,
        form: dict[str, str],
        client: ClientInfo,
        *,
        private_key: Any = None,
        signing_alg: str = "ES256",
        assertion_audience: str | None = None,
        issued_type: str | None = None,
    ) -> Flow[TokenSet]:
        """POST to the token endpoint with client authentication (and a DPoP proof);
        ``issued_type``: the RFC 8693 token type the answer must say it issued."""
        self.grant.check_destination(as_meta)  # (a pinned grant's secrets go nowhere else)
        url = as_meta.token_endpoint
        for _ in range(2):
            body = dict(form)
            headers: dict[str, str] = {}
            apply_client_auth(
                client.auth_method,
                body,
                headers,
                client_id=client.client_id,
                client_secret=client.client_secret,
                private_key=private_key,
                signing_alg=signing_alg,
                assertion_audience=assertion_audience or as_meta.issuer,
            )
            key = self.dpop_key
            if key is not None:
                headers["DPoP"] = key.proof("POST", url)
            response = yield from self.post_form(url, body, headers)
            changed = key is not None and key.remember_nonce(
                url, response.headers.get("dpop-nonce")
            )
            if response.status_code == 200:
                return self.parse_token_response(
                    response, dpop=key is not None, issued_type=issued_type
                )
            error, text = _error_of(response)
            if error == "use_dpop_nonce" and changed:
                continue
            raise TokenError(
                f"the token endpoint refused the {form.get('grant_type')} request: {text}",
                error,
                response.status_code,
            )
        raise TokenError("the token endpoint keeps asking for a new DPoP nonce", "use_dpop_nonce")

    @staticmethod
    def parse_token_response(
        response: httpx.Response, *, dpop: bool, issued_type: str | None = None
    ) -> TokenSet:
        try:
            data = response.json()
        except ValueError:
            raise TokenError("the token endpoint did not answer with JSON") from None
        if not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            raise TokenError("the token response has no access_token")
        if issued_type is not None:
            from .grant_base import check_issued

            check_issued(data, issued_type, "the token endpoint")
        token_type = data.get("token_type", "Bearer")
        if not isinstance(token_type, str) or token_type.lower() not in ("bearer", "dpop"):
            raise TokenError(f"unsupported token_type {token_type!r}")
        if token_type.lower() == "dpop" and not dpop:
            raise TokenError("got a DPoP-bound token without having sent a DPoP proof")
        expires_in = data.get("expires_in")
        expires_at = None
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
            expires_at = time.time() + float(expires_in)
        scope = data.get("scope")
        refresh = data.get("refresh_token")
        return TokenSet(
            access_token=data["access_token"],
            token_type="DPoP" if token_type.lower() == "dpop" else "Bearer",
            expires_at=expires_at,
            refresh_token=refresh if isinstance(refresh, str) and refresh else None,
            scopes=scope.split() if isinstance(scope, str) else [],
        )
