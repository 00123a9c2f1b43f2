"""URL rules shared by the resource server and the OAuth client."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["is_loopback_host", "require_secure_url", "well_known_url"]


def is_loopback_host(host: str | None) -> bool:
    """``localhost`` (and its subdomains) or a loopback IP literal."""
    if not host:
        return False
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def require_secure_url(url: str, what: str = "URL") -> str:
    """``url`` if it is https, or http to a loopback host; ``ValueError`` otherwise."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValueError(f"{what} is not a valid URL: {url!r}") from None
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and is_loopback_host(parts.hostname):
        return url
    raise ValueError(f"{what} must use https (http only for loopback): {url!r}")


def well_known_url(resource: str, suffix: str) -> str:
    """RFC 8615 well-known URI with the resource's path appended (RFC 9728 §3.1, RFC 8414
    §3.1): ``https://h/p`` + ``oauth-protected-resource`` ->
    ``https://h/.well-known/oauth-protected-resource/p``."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}/.well-known/{suffix}{path}"
