"""``mcpkit auth doctor``: walk an MCP server's sign-in the way a given client does, and say
which step fails and how to fix it.

The walk is mcpkit's own OAuth client (:class:`~mcpkit.auth.client.OAuthClientAuth` and
its engine), run one step at a time through the SSRF-guarded client, with every response
recorded so each finding can name the URL it came from:

1. the unauthenticated request: ``401`` and its ``WWW-Authenticate`` (``resource_metadata``,
   ``scope``);
2. protected resource metadata (RFC 9728: the header's URL, the path-inserted and the root
   well-known URL) and its ``resource``, which must be the URL the client was given;
3. authorization server metadata (RFC 8414 and OIDC discovery), issuer compared exactly;
4. what the chosen client needs of that server (:data:`PROFILES`): PKCE S256, a way to
   register (Client ID Metadata Document or dynamic registration), the scope it will send,
   refresh tokens;
5. live, where it can be done without a person: a real dynamic registration, the
   authorization and token request (an authorization server that approves at once, or
   ``interactive`` with a browser), the token's audience, an authenticated call and a
   refresh.

A step the client would not get past is ``FAIL`` with its fix; a step that works but
hurts some setups is ``warn``; a step that could not be tried from here is ``skip``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

import httpx

from ...types.versions import LATEST_LEGACY
from ..challenge import Challenge
from ..urls import is_loopback_host
from .auth import OAuthClientAuth
from .browser import HeadlessRedirectHandler, LoopbackRedirectHandler, RedirectHandler
from .doctor_profiles import PROFILES, ClientProfile
from .doctor_report import DoctorReport, Finding, Status
from .errors import OAuthError, UserInteractionRequired
from .flow import Attempt, Flow, OAuthEngine
from .grants import AuthorizationCodeGrant
from .metadata import as_metadata_urls, canonical_resource, prm_urls, resource_matches
from .ssrf import UrlPolicy, guarded_client
from .store import InMemoryTokenStore

__all__ = ["PROFILES", "ClientProfile", "DoctorReport", "Finding", "diagnose"]

T = TypeVar("T")


#: The first request a client sends: an ``initialize`` (what the 401 answers).
_INITIALIZE: Final = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LATEST_LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "mcpkit-auth-doctor", "version": "1"},
    },
}
_MCP_HEADERS: Final = {"Accept": "application/json, text/event-stream"}


@dataclass(slots=True)
class _Seen:
    """A response the walk received: where from, its status and its JSON body (if any)."""

    url: str
    status: int
    body: Any


def diagnose(
    url: str,
    *,
    client: str = "mcpkit",
    interactive: bool = False,
    policy: UrlPolicy | None = None,
    redirect_handler: RedirectHandler | None = None,
) -> DoctorReport:
    """Walk the sign-in to the MCP server at ``url`` as ``client`` (a key of
    :data:`PROFILES`) does.  ``policy``: where the walk may go (default: the production
    policy, or loopback too when ``url`` is on this machine); ``interactive``: take the
    user through the authorization endpoint in a browser; ``redirect_handler``: how the
    authorization endpoint is passed otherwise (default: headless, for servers that
    approve at once)."""
    if client not in PROFILES:
        raise ValueError(f"unknown client {client!r}; one of {', '.join(PROFILES)}")
    if policy is None:
        local = is_loopback_host(httpx.URL(url).host)
        policy = UrlPolicy.local_development() if local else UrlPolicy()
    if redirect_handler is None:
        redirect_handler = (
            LoopbackRedirectHandler()
            if interactive
            else HeadlessRedirectHandler(_loopback_redirect(), policy=policy)
        )
    walk = _Walk(url, PROFILES[client], policy, redirect_handler)
    with guarded_client(policy) as http:
        http.event_hooks["response"].append(walk.record)
        walk.run(http)
    return walk.report


def _loopback_redirect() -> str:
    return LoopbackRedirectHandler().redirect_uri  # a free port, as a native client picks


class _Walk:
    def __init__(
        self, url: str, profile: ClientProfile, policy: UrlPolicy, handler: RedirectHandler
    ) -> None:
        self.url = url
        self.profile = profile
        self.auth = OAuthClientAuth(
            url,
            redirect_handler=handler,
            policy=policy,
            store=InMemoryTokenStore(),
            client_name=f"mcpkit auth doctor ({profile.name})",
        )
        engine = self.auth.engine
        assert engine is not None  # (a server_url was given)
        self.engine: OAuthEngine = engine
        self.report = DoctorReport(url, profile.name)
        self.seen: list[_Seen] = []
        self.http: httpx.Client | None = None

    # ------------------------------------------------------------------ plumbing
    def record(self, response: httpx.Response) -> None:
        response.read()
        try:
            body = response.json()
        except ValueError:
            body = None
        self.seen.append(_Seen(str(response.request.url), response.status_code, body))

    def add(self, step: str, status: Status, detail: str, fix: str | None = None) -> None:
        self.report.findings.append(Finding(step, status, detail, fix))

    def flow(self, flow: Flow[T]) -> T | None:
        return self.auth.run_flow(flow, self.http)

    def answered(self, urls: list[str]) -> _Seen | None:
        """The first of ``urls`` that answered 200, as the walk saw it."""
        for seen in self.seen:
            if seen.url in urls and seen.status == 200:
                return seen
        return None

    def failed(self) -> bool:
        return not self.report.ok

    # ------------------------------------------------------------------ the steps
    def run(self, http: httpx.Client) -> None:
        self.http = http
        found = self.challenge()
        if found is False:
            return
        challenge: Challenge | None = found
        if not self.discover(challenge):
            return
        self.requirements(challenge)
        if self.failed():
            self.add("live", "skip", "not tried: a step above fails for this client")
            return
        if self.register() and self.authorize(challenge):
            self.call("call")
            self.refresh()

    def challenge(self) -> Challenge | Literal[False] | None:
        """The 401 (None: a 401 without a usable challenge); False: stop here."""
        assert self.http is not None
        try:
            response = self.http.post(self.url, json=_INITIALIZE, headers=_MCP_HEADERS)
        except httpx.HTTPError as exc:
            self.add("reach", "FAIL", f"{self.url} could not be reached: {exc}", _REACH_FIX)
            return False
        status = response.status_code
        if 200 <= status < 300:
            self.add("challenge", "ok", f"HTTP {status} without a token: no sign-in needed")
            return False
        if status != 401:
            self.add(
                "challenge",
                "FAIL",
                f"HTTP {status} to a request without a token, where a 401 was expected",
                "answer requests without a token with 401 and WWW-Authenticate: Bearer "
                'resource_metadata="<metadata URL>" (MCP authorization, RFC 9728 §5.1)',
            )
            return False
        action = self.engine.on_response(response, None, Attempt())
        found = action.challenge if action is not None else None
        if found is None:
            self.add(
                "challenge",
                "warn",
                "401 without WWW-Authenticate: clients must guess the metadata URL",
                'add WWW-Authenticate: Bearer resource_metadata="<metadata URL>"',
            )
            return None
        parts = [f"401 {found.scheme}"]
        parts += [f"{name}={found.get(name)}" for name in ("resource_metadata", "scope")]
        if found.resource_metadata is None:
            self.add(
                "challenge",
                "warn",
                " ".join(parts) + ": clients fall back to the well-known URLs",
                'name the metadata in the challenge: resource_metadata="<metadata URL>"',
            )
        else:
            self.add("challenge", "ok", " ".join(parts))
        return found

    def discover(self, challenge: Challenge | None) -> bool:
        header = challenge.resource_metadata if challenge is not None else None
        try:
            self.flow(self.engine.discover(challenge))
        except OAuthError as exc:
            self.discovery_failed(header, exc)
            return False
        prm, as_meta = self.engine.prm, self.engine.as_meta
        assert prm is not None and as_meta is not None
        candidates = prm_urls(self.engine.server_url, header)
        where = self.answered(candidates)
        self.add(
            "resource-metadata",
            "ok",
            f"{where.url if where else '?'} ({_prm_variant(where, header)})",
        )
        if canonical_resource(prm.resource) == self.engine.server_url:
            self.add("resource", "ok", f"resource = {prm.resource}")
        else:
            self.add(
                "resource",
                "warn",
                f"resource {prm.resource} is a parent of {self.engine.server_url}: mcpkit "
                "accepts it, clients that compare it with the URL they were given refuse",
                f'publish "resource": "{self.engine.server_url}"',
            )
        as_where = self.answered(as_metadata_urls(as_meta.issuer))
        self.add(
            "as-metadata",
            "ok",
            f"issuer {as_meta.issuer} via {as_where.url if as_where else '?'}",
        )
        return True

    def discovery_failed(self, header: str | None, exc: OAuthError) -> None:
        if self.engine.prm is None:
            candidates = prm_urls(self.engine.server_url, header)
            where = self.answered(candidates)
            body = where.body if where is not None else None
            named = body.get("resource") if isinstance(body, dict) else None
            if isinstance(named, str) and not resource_matches(named, self.engine.server_url):
                self.add(
                    "resource",
                    "FAIL",
                    f"{where.url if where else '?'} says resource {named!r}, but the client "
                    f"connected to {self.engine.server_url!r}",
                    f'set "resource" to "{self.engine.server_url}" (the URL clients are '
                    "given), or give clients the URL the metadata names",
                )
                return
            self.add(
                "resource-metadata",
                "FAIL",
                str(exc),
                "serve RFC 9728 metadata (resource, authorization_servers) at "
                f"{prm_urls(self.engine.server_url, None)[0]}",
            )
            return
        servers = ", ".join(self.engine.prm.authorization_servers)
        self.add("resource-metadata", "ok", f"names the authorization server {servers}")
        issuer = self.auth.grant.choose_issuer(self.engine.prm.authorization_servers)
        urls = as_metadata_urls(issuer)
        where = self.answered(urls)
        body = where.body if where is not None else None
        named = body.get("issuer") if isinstance(body, dict) else None
        if where is not None and named != issuer:
            fix = (
                f'make the document at {where.url} say "issuer": "{issuer}" exactly, or list '
                f"{named!r} in the resource metadata's authorization_servers"
            )
        else:
            fix = f"serve RFC 8414 metadata at {urls[0]} (or OpenID discovery at {urls[-1]})"
        self.add("as-metadata", "FAIL", str(exc), fix)

    def requirements(self, challenge: Challenge | None) -> None:
        as_meta = self.engine.as_meta
        assert as_meta is not None
        if as_meta.supports_s256:
            self.add("pkce", "ok", "S256 in code_challenge_methods_supported")
        else:
            methods = as_meta.code_challenge_methods_supported
            self.add(
                "pkce",
                "FAIL",
                f"code_challenge_methods_supported is {methods or 'absent'}: MCP clients "
                "refuse to authorize without S256",
                'advertise "code_challenge_methods_supported": ["S256"] (and enforce it)',
            )
        self.choose_registration()
        self.scope(challenge)
        grants = as_meta.grant_types_supported
        if grants is not None and "refresh_token" not in grants:
            self.add(
                "refresh-support",
                "warn",
                "grant_types_supported has no refresh_token: users sign in again each time "
                "a token expires",
                "enable the refresh_token grant for public clients",
            )
        else:
            self.add("refresh-support", "ok", "refresh_token grant available")

    def registration_options(self) -> list[str]:
        as_meta = self.engine.as_meta
        assert as_meta is not None
        public = "none" in as_meta.token_endpoint_auth_methods_supported
        cimd = as_meta.client_id_metadata_document_supported and (
            public or not self.profile.cimd_needs_none
        )
        available = {"cimd": cimd, "dcr": as_meta.registration_endpoint is not None}
        return [way for way in self.profile.registration if available[way]]

    def choose_registration(self) -> None:
        as_meta = self.engine.as_meta
        assert as_meta is not None
        options = self.registration_options()
        if options:
            name = {"cimd": "Client ID Metadata Document", "dcr": "dynamic registration"}
            self.add("registration", "ok", f"{self.profile.title} uses {name[options[0]]}")
            return
        offered = []
        if as_meta.client_id_metadata_document_supported:
            offered.append('CIMD without "none" in token_endpoint_auth_methods_supported')
        detail = (
            f"{as_meta.issuer} offers no registration {self.profile.title} can use "
            f"({', '.join(offered) or 'no registration_endpoint, no CIMD'})"
        )
        fix = (
            "enable dynamic client registration (registration_endpoint) or Client ID "
            'Metadata Documents (client_id_metadata_document_supported: true with "none" in '
            "token_endpoint_auth_methods_supported), or put an authorization server that "
            "offers them in front of this provider"
        )
        if self.profile.manual_client:
            self.add("registration", "warn", detail + ": the user must paste a client id", fix)
        else:
            self.add("registration", "FAIL", detail, fix)

    def requested_scopes(self, challenge: Challenge | None) -> list[str] | None:
        scopes = self.engine.select_scopes(challenge.scopes if challenge is not None else None)
        if scopes and not self.profile.offline_access:
            scopes = [s for s in scopes if s != "offline_access"] or None
        return scopes

    def scope(self, challenge: Challenge | None) -> None:
        as_meta = self.engine.as_meta
        assert as_meta is not None
        scopes = self.requested_scopes(challenge)
        if not scopes:
            self.add(
                "scope",
                "warn",
                "no scope will be sent: neither the challenge nor the resource metadata "
                "names one (providers such as Entra ID or Cognito then refuse the request)",
                "list the scopes in the resource metadata's scopes_supported or the "
                "challenge's scope",
            )
            return
        listed = as_meta.scopes_supported
        unknown = [s for s in scopes if listed is not None and s not in listed]
        if unknown:
            self.add(
                "scope",
                "warn",
                f"sends scope={' '.join(scopes)}, the authorization server does not list "
                f"{' '.join(unknown)}",
                "make the resource's scopes the authorization server's (or list them in "
                "its scopes_supported)",
            )
        else:
            self.add("scope", "ok", f"sends scope={' '.join(scopes)}")

    # ------------------------------------------------------------------ live steps
    def register(self) -> bool:
        as_meta = self.engine.as_meta
        assert as_meta is not None
        if "dcr" not in self.registration_options():
            self.add(
                "client",
                "skip",
                "no dynamic registration to try (a CIMD or hand-made client is the client's "
                "own): the token request was not tried",
            )
            return False
        grant = self.auth.grant
        assert isinstance(grant, AuthorizationCodeGrant)
        try:
            info = self.flow(grant.register(self.engine, as_meta))
        except (OAuthError, httpx.HTTPError) as exc:
            self.add(
                "client",
                "FAIL",
                f"dynamic registration failed: {exc}",
                "accept an RFC 7591 request from a public native client "
                '(token_endpoint_auth_method "none", a loopback redirect URI)',
            )
            return False
        assert info is not None
        self.add("client", "ok", f"registered {info.client_id} ({info.auth_method})")
        return True

    def authorize(self, challenge: Challenge | None) -> bool:
        scopes = self.requested_scopes(challenge)
        try:
            self.flow(self.engine.obtain(scopes))
        except UserInteractionRequired:
            self.add(
                "token",
                "skip",
                "the authorization endpoint needs a person: run again with --interactive",
            )
            return False
        except (OAuthError, httpx.HTTPError) as exc:
            self.add("token", "FAIL", str(exc), _TOKEN_FIX)
            return False
        tokens = self.engine.tokens
        assert tokens is not None
        refresh = "with" if tokens.refresh_token else "without"
        self.add("token", "ok", f"{tokens.token_type} token {refresh} a refresh token")
        self.audience(tokens.access_token)
        return True

    def audience(self, token: str) -> None:
        claims = _jwt_claims(token)
        resource = self.engine.resource
        if claims is None:
            self.add("audience", "ok", "opaque token (the server checks it by introspection)")
            return
        aud = claims.get("aud")
        audiences = aud if isinstance(aud, list) else [aud] if isinstance(aud, str) else []
        if resource in audiences:
            self.add("audience", "ok", f"aud = {resource}")
            return
        self.add(
            "audience",
            "warn",
            f"the token's aud is {aud!r}, not the resource {resource!r}: the authorization "
            "server ignores RFC 8707 resource",
            "make the authorization server honour resource, or have the server expect "
            f"that audience (mcpkit serve --auth-audience {aud if isinstance(aud, str) else ''})",
        )

    def call(self, step: str) -> bool:
        assert self.http is not None
        request = self.http.build_request("POST", self.url, json=_INITIALIZE, headers=_MCP_HEADERS)
        self.engine.authorize_request(request)
        try:
            response = self.http.send(request)
        except httpx.HTTPError as exc:
            self.add(step, "FAIL", f"the call with the token failed: {exc}", _REACH_FIX)
            return False
        if response.status_code in (401, 403):
            why = response.headers.get("www-authenticate", "")
            self.add(
                step,
                "FAIL",
                f"the server refused the new token: HTTP {response.status_code} {why}".rstrip(),
                "the server must trust this authorization server's issuer and expect the "
                "token's audience (the resource URL)",
            )
            return False
        self.add(step, "ok", f"initialize with the token: HTTP {response.status_code}")
        return True

    def refresh(self) -> None:
        tokens = self.engine.tokens
        if tokens is None or not tokens.refresh_token:
            self.add(
                "refresh",
                "warn",
                "no refresh token was issued: users sign in again when the token expires",
                "issue refresh tokens to public clients (the refresh_token grant, offline_access)",
            )
            return
        try:
            done = self.flow(self.engine.refresh())
        except (OAuthError, httpx.HTTPError) as exc:
            done, error = False, str(exc)
        else:
            error = "the token endpoint refused the refresh_token grant"
        if not done:
            self.add("refresh", "FAIL", error, _TOKEN_FIX)
            return
        self.add("refresh", "ok", "refreshed")
        self.call("call-after-refresh")


_REACH_FIX = "check the URL, that the server runs, and (https) its certificate"
_TOKEN_FIX = (
    "see the authorization server's log for this request; redirect URIs must match exactly "
    "(any loopback port), and resource must be accepted"
)


def _prm_variant(where: _Seen | None, header: str | None) -> str:
    if where is None:
        return "?"
    if header is not None and where.url == header:
        return "named in WWW-Authenticate"
    path = httpx.URL(where.url).path
    return (
        "root well-known"
        if path == "/.well-known/oauth-protected-resource"
        else ("path-inserted well-known")
    )


def _jwt_claims(token: str) -> dict[str, Any] | None:
    """The claims of a JWT, unverified (only to report its audience), else None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        padded = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(padded))
    except ValueError:
        return None
    return claims if isinstance(claims, dict) else None
