"""DNS-rebinding protection: Host and Origin validation for local servers.

A browser page on evil.example can resolve its own name to 127.0.0.1 and then talk to a
local MCP server; the ``Host`` header still says evil.example.  So a server bound to
loopback accepts only loopback host names (any port) unless told otherwise, and a present
``Origin`` must be a loopback origin or one explicitly allowed.  Decision (documented in
docs/security.md): both rejections are HTTP 403 with a JSON-RPC error body (code -32600) that a
client can display, rather than a bare text page.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


def _split_host(value: str) -> str | None:
    """The host part of a ``Host`` value, or None when the port part is not a number
    (``localhost:80.evil.com`` must not pass as ``localhost``)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        port = value[end + 1 :]
        if port and not (port.startswith(":") and port[1:].isdigit()):
            return None
        return value[: end + 1]
    if value.count(":") == 1:
        host, port = value.split(":")
        return host if port.isdigit() else None
    return value


@dataclass(slots=True)
class HostPolicy:
    """Which Host and Origin values a server accepts.

    ``allowed_hosts=None`` turns Host checking off (a server behind a proxy that already
    validates).  Entries are host names without port, or ``host:port``.
    ``allowed_suffixes`` also accepts any host name ending in one of them (``.on.aws``):
    behind a function platform the host names are the platform's, minted per deployment,
    so a list of exact names cannot be written in advance (see :mod:`mcpkit.serverless`).
    """

    allowed_hosts: frozenset[str] | None = LOOPBACK_HOSTS
    allowed_origins: frozenset[str] = field(default_factory=frozenset)
    allow_any_origin: bool = False
    allowed_suffixes: tuple[str, ...] = ()
    #: Host values already accepted, exactly as sent (a client sends the same one on every
    #: request; parsing it each time was a measurable part of a request).  Bounded.
    _accepted: set[str] = field(default_factory=set, repr=False, compare=False)
    _accepted_for: frozenset[str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def for_bind(
        cls,
        host: str,
        extra_hosts: Iterable[str] = (),
        origins: Iterable[str] = (),
    ) -> HostPolicy:
        if host in ("0.0.0.0", "::", ""):
            return cls(allowed_hosts=None, allowed_origins=frozenset(origins))
        hosts = set(LOOPBACK_HOSTS) | {h.lower() for h in extra_hosts}
        if host not in LOOPBACK_HOSTS:
            hosts.add(host.lower())
        return cls(frozenset(hosts), frozenset(o.rstrip("/").lower() for o in origins))

    def host_ok(self, host: str | None) -> bool:
        if self.allowed_hosts is None:
            return True
        if not host:
            return False
        if host in self._accepted and self._accepted_for is self.allowed_hosts:
            return True
        lowered = host.strip().lower()
        name = lowered if lowered in self.allowed_hosts else _split_host(lowered)
        if name is None or not (name in self.allowed_hosts or self._suffix_ok(name)):
            return False
        if self._accepted_for is not self.allowed_hosts:  # reassigned: forget the old ones
            self._accepted = set()
            self._accepted_for = self.allowed_hosts
        if len(self._accepted) < 256:
            self._accepted.add(host)
        return True

    def _suffix_ok(self, name: str) -> bool:
        # A suffix starts with a dot, so "evil-on.aws" never passes as ".on.aws"; the
        # label before it must be a plain DNS label sequence (no brackets, no ports).
        return any(
            name.endswith(suffix) and len(name) > len(suffix) and "[" not in name
            for suffix in self.allowed_suffixes
        )

    def origin_ok(self, origin: str | None) -> bool:
        if origin is None or self.allow_any_origin:
            return True
        lowered = origin.strip().rstrip("/").lower()
        if lowered in self.allowed_origins:
            return True
        try:
            parts = urlsplit(lowered)
            parts.port  # noqa: B018 - raises ValueError for a non-numeric port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
            return False
        name = parts.hostname
        bracketed = f"[{name}]" if ":" in name else name
        if bracketed in LOOPBACK_HOSTS or name in LOOPBACK_HOSTS:
            return True
        return self.allowed_hosts is not None and bracketed in self.allowed_hosts
