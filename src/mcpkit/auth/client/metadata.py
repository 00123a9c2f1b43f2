"""Discovery documents: where to look, and what makes one acceptable.

* Protected Resource Metadata (RFC 9728): the URL from ``WWW-Authenticate``'s
  ``resource_metadata`` first, then the path-aware well-known URL, then the root one.  Its
  ``resource`` must name the server being accessed (same origin, and a path prefix of the
  server's path), else the client stops before any authorization request.
* Authorization Server Metadata (RFC 8414 / OIDC Discovery), in the MCP order: for an issuer
  with a path, ``/.well-known/oauth-authorization-server/<path>``,
  ``/.well-known/openid-configuration/<path>``, ``<path>/.well-known/openid-configuration``;
  without a path, ``oauth-authorization-server`` then ``openid-configuration``.  The
  document's ``issuer`` must equal the issuer used to build the URL, character for
  character; endpoints must pass the URL policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .errors import DiscoveryError

__all__ = [
    "AuthServerMetadata",
    "ResourceMetadata",
    "as_metadata_urls",
    "canonical_resource",
    "parse_as_metadata",
    "parse_resource_metadata",
    "prm_urls",
    "resource_matches",
]


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (scheme and host lower-cased, no fragment, no
    default port); the path is kept as is, without adding or removing a slash."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    default = {"http": 80, "https": 443}.get(scheme)
    netloc = host if port is None or port == default else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path, parts.query, ""))


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def resource_matches(resource: str, server_url: str) -> bool:
    """``resource`` (from PRM) identifies ``server_url``: same origin, and its path is the
    server's path or a parent of it on a segment boundary."""
    try:
        if urlsplit(resource).fragment or _origin(resource) != _origin(server_url):
            return False
    except ValueError:
        return False
    want = urlsplit(resource).path.rstrip("/")
    have = urlsplit(server_url).path.rstrip("/")
    return want == "" or have == want or have.startswith(want + "/")


def prm_urls(server_url: str, from_header: str | None) -> list[str]:
    parts = urlsplit(server_url)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls: list[str] = []
    if from_header:
        urls.append(from_header)
    if path:
        urls.append(f"{base}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{base}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def as_metadata_urls(issuer: str) -> list[str]:
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if path:
        return [
            f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration",
        ]
    return [
        f"{base}/.well-known/oauth-authorization-server",
        f"{base}/.well-known/openid-configuration",
    ]


def _strings(value: object) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


@dataclass(slots=True)
class ResourceMetadata:
    resource: str
    authorization_servers: list[str]
    scopes_supported: list[str] | None = None
    raw: dict[str, Any] = field(default_factory=dict)


def parse_resource_metadata(doc: object, server_url: str) -> ResourceMetadata:
    if not isinstance(doc, dict):
        raise DiscoveryError("protected resource metadata is not a JSON object")
    resource = doc.get("resource")
    if not isinstance(resource, str) or not resource:
        raise DiscoveryError("protected resource metadata has no 'resource'")
    if not resource_matches(resource, server_url):
        raise DiscoveryError(
            f"protected resource metadata is for {resource!r}, not for {server_url!r}; "
            "refusing to authorize (RFC 8707 / RFC 9728 §3.3)"
        )
    servers = _strings(doc.get("authorization_servers"))
    if not servers:
        raise DiscoveryError("protected resource metadata lists no authorization_servers")
    return ResourceMetadata(resource, servers, _strings(doc.get("scopes_supported")), doc)


@dataclass(slots=True)
class AuthServerMetadata:
    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] = field(
        default_factory=lambda: ["client_secret_basic"]
    )
    grant_types_supported: list[str] | None = None
    iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False
    dpop_signing_alg_values_supported: list[str] | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def supports_s256(self) -> bool:
        return "S256" in (self.code_challenge_methods_supported or [])


def parse_as_metadata(doc: object, issuer: str) -> AuthServerMetadata:
    if not isinstance(doc, dict):
        raise DiscoveryError("authorization server metadata is not a JSON object")
    found = doc.get("issuer")
    if found != issuer:
        raise DiscoveryError(
            f"authorization server metadata names issuer {found!r}, but it was fetched for "
            f"{issuer!r}; refusing to use it (RFC 8414 §3.3)"
        )
    token = doc.get("token_endpoint")
    if not isinstance(token, str) or not token:
        raise DiscoveryError("authorization server metadata has no token_endpoint")

    def text(name: str) -> str | None:
        value = doc.get(name)
        return value if isinstance(value, str) and value else None

    methods = _strings(doc.get("token_endpoint_auth_methods_supported"))
    return AuthServerMetadata(
        issuer=issuer,
        token_endpoint=token,
        authorization_endpoint=text("authorization_endpoint"),
        registration_endpoint=text("registration_endpoint"),
        scopes_supported=_strings(doc.get("scopes_supported")),
        code_challenge_methods_supported=_strings(doc.get("code_challenge_methods_supported")),
        token_endpoint_auth_methods_supported=methods or ["client_secret_basic"],
        grant_types_supported=_strings(doc.get("grant_types_supported")),
        iss_parameter_supported=doc.get("authorization_response_iss_parameter_supported") is True,
        client_id_metadata_document_supported=(
            doc.get("client_id_metadata_document_supported") is True
        ),
        dpop_signing_alg_values_supported=_strings(doc.get("dpop_signing_alg_values_supported")),
        raw=doc,
    )


def default_as_metadata(origin: str) -> AuthServerMetadata:
    """2025-03-26 fallback for servers without any metadata: default endpoint paths."""
    base = origin.rstrip("/")
    return AuthServerMetadata(
        issuer=base,
        token_endpoint=f"{base}/token",
        authorization_endpoint=f"{base}/authorize",
        registration_endpoint=f"{base}/register",
        code_challenge_methods_supported=["S256"],
        token_endpoint_auth_methods_supported=["client_secret_basic", "client_secret_post", "none"],
    )
