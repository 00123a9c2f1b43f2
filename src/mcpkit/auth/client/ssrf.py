"""SSRF protection for every URL the OAuth client learns from a server.

Resource metadata, authorization-server metadata, token/registration endpoints and JWKS
URLs come from the network, so an attacker controls them.  Every such fetch goes through
a client built here:

* scheme ``https``; ``http`` only to loopback, and loopback only when the policy allows it
  (local development and tests);
* no credentials in the URL; hosts that a resolver would read as a number in disguise
  (``0x7f000001``, ``2130706433``, ``017700000001``) are refused outright;
* the host is resolved once, every address is checked with :mod:`ipaddress` (private,
  loopback, link-local, multicast, reserved, unspecified, IPv4-mapped and 6to4/Teredo
  forms), and the connection goes to the checked address: DNS is pinned between the check
  and the use, so rebinding cannot slip in;
* redirects are followed by hand (GET only), each hop checked again;
* response bodies are capped; proxies from the environment are ignored.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import anyio
import httpcore
import httpx

from .errors import SsrfBlocked

__all__ = [
    "GuardedAsyncTransport",
    "GuardedTransport",
    "UrlPolicy",
    "check_address",
    "check_url",
    "guarded_async_client",
    "guarded_client",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NUMERIC_LABEL = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)$")
_REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    """Where discovery may go.  The defaults are for production: public https only."""

    allow_loopback: bool = False
    allow_private: bool = False
    max_redirects: int = 5
    max_response_bytes: int = 1024 * 1024
    timeout_s: float = 10.0

    @classmethod
    def local_development(cls) -> UrlPolicy:
        """Also allow loopback (http or https): tests and local authorization servers."""
        return cls(allow_loopback=True)


def _unwrap(ip: IPAddress) -> IPAddress:
    if isinstance(ip, ipaddress.IPv6Address):
        for embedded in (ip.ipv4_mapped, ip.sixtofour):
            if embedded is not None:
                return embedded
        if ip.teredo is not None:
            return ip.teredo[1]
        if ip in ipaddress.IPv6Network("64:ff9b::/96"):  # NAT64 well-known prefix
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def check_address(ip: IPAddress | str, policy: UrlPolicy) -> None:
    """Raise :class:`SsrfBlocked` unless ``ip`` is a place discovery may connect to."""
    address = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    inner = _unwrap(address)
    for candidate in {address, inner}:
        if candidate.is_loopback:
            if policy.allow_loopback:
                continue
            raise SsrfBlocked(f"loopback address {address} is not allowed")
        if candidate.is_unspecified or candidate.is_multicast:
            raise SsrfBlocked(f"address {address} is not allowed")
        if candidate.is_link_local:
            raise SsrfBlocked(f"link-local address {address} is not allowed (cloud metadata)")
        if not candidate.is_global:
            if policy.allow_private and candidate.is_private and not candidate.is_reserved:
                continue
            raise SsrfBlocked(f"non-public address {address} is not allowed")


def _host_is_ip(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def check_url(url: str | httpx.URL, policy: UrlPolicy) -> httpx.URL:
    """Static checks on a URL (scheme, credentials, host form); addresses are checked when
    connecting.  Returns the parsed URL."""
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        raise SsrfBlocked(f"not a valid URL: {url!r}") from None
    host = parsed.host
    if parsed.scheme not in ("https", "http") or not host:
        raise SsrfBlocked(f"only http(s) URLs with a host are allowed: {str(url)!r}")
    if parsed.userinfo:
        raise SsrfBlocked("URLs with credentials are not allowed")
    ip = _host_is_ip(host)
    if ip is None:
        last = host.rstrip(".").rsplit(".", 1)[-1]
        if _NUMERIC_LABEL.match(last):
            raise SsrfBlocked(f"host {host!r} looks like an IP address in disguise")
        loopback_name = host.lower().rstrip(".")
        is_loopback = loopback_name == "localhost" or loopback_name.endswith(".localhost")
    else:
        check_address(ip, policy)
        is_loopback = _unwrap(ip).is_loopback
    if is_loopback and not policy.allow_loopback:
        raise SsrfBlocked(f"loopback host {host!r} is not allowed")
    if parsed.scheme == "http" and not is_loopback:
        raise SsrfBlocked(f"plain http is only allowed to loopback: {str(url)!r}")
    return parsed


def _checked(infos: Iterable[Any], host: str, policy: UrlPolicy) -> list[str]:
    addresses: list[str] = []
    for info in infos:
        raw = info[4][0]
        address = raw.split("%", 1)[0]  # scope id
        check_address(address, policy)  # every answer must be acceptable
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise SsrfBlocked(f"{host!r} did not resolve")
    return addresses


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, policy: UrlPolicy) -> None:
        self.policy = policy
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host!r}: {exc}") from None
        last: Exception | None = None
        for address in _checked(infos, host, self.policy):
            try:
                return await self.inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                last = exc
        raise last or httpcore.ConnectError(f"cannot connect to {host!r}")

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise SsrfBlocked("unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class _SyncBackend(httpcore.NetworkBackend):
    def __init__(self, policy: UrlPolicy) -> None:
        self.policy = policy
        self.inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host!r}: {exc}") from None
        last: Exception | None = None
        for address in _checked(infos, host, self.policy):
            try:
                return self.inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                last = exc
        raise last or httpcore.ConnectError(f"cannot connect to {host!r}")

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise SsrfBlocked("unix sockets are not allowed")


def _ssl_context(verify: ssl.SSLContext | bool) -> ssl.SSLContext:
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - httpx depends on certifi
        return ssl.create_default_context()


def _pool_options(verify: ssl.SSLContext | bool, backend: Any) -> dict[str, Any]:
    """The connection pool of a guarded transport: its TLS context and its backend, which
    connects only to the addresses the policy allows."""
    return {"ssl_context": _ssl_context(verify), "network_backend": backend, "max_connections": 10}


def _core_request(request: httpx.Request, stream: Any) -> httpcore.Request:
    url = request.url
    return httpcore.Request(
        method=request.method,
        url=httpcore.URL(
            scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
        ),
        headers=request.headers.raw,
        content=stream,
        extensions=request.extensions,
    )


def _map_error(exc: Exception, request: httpx.Request) -> Exception:
    if isinstance(exc, SsrfBlocked):
        return exc
    message = str(exc) or type(exc).__name__
    kinds: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
        (httpcore.ConnectTimeout, httpx.ConnectTimeout),
        (httpcore.ReadTimeout, httpx.ReadTimeout),
        (httpcore.WriteTimeout, httpx.WriteTimeout),
        (httpcore.PoolTimeout, httpx.PoolTimeout),
        (httpcore.ConnectError, httpx.ConnectError),
        (httpcore.ReadError, httpx.ReadError),
        (httpcore.WriteError, httpx.WriteError),
        (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
        (httpcore.LocalProtocolError, httpx.LocalProtocolError),
        (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    )
    for core, mapped in kinds:
        if isinstance(exc, core):
            return mapped(message, request=request)
    if isinstance(exc, httpcore.ProxyError | httpcore.NetworkError | httpcore.TimeoutException):
        return httpx.TransportError(message, request=request)
    return exc


def _collect(body: bytearray, chunk: bytes, policy: UrlPolicy, request: httpx.Request) -> None:
    """Add a chunk of a guarded response; a body over the policy's limit is refused."""
    body += chunk
    if len(body) > policy.max_response_bytes:
        raise SsrfBlocked(
            f"response from {request.url.host} exceeds {policy.max_response_bytes} bytes"
        )


def _answer(response: httpcore.Response, body: bytearray) -> httpx.Response:
    """The httpx response for a fully read guarded one (its socket is not handed on)."""
    return httpx.Response(
        status_code=response.status,
        headers=response.headers,
        content=bytes(body),
        extensions={k: v for k, v in response.extensions.items() if k != "network_stream"},
    )


class GuardedAsyncTransport(httpx.AsyncBaseTransport):
    """An httpx transport that connects only to addresses the policy allows."""

    def __init__(self, policy: UrlPolicy, *, verify: ssl.SSLContext | bool = True) -> None:
        self.policy = policy
        self._pool = httpcore.AsyncConnectionPool(**_pool_options(verify, _AsyncBackend(policy)))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        check_url(request.url, self.policy)
        try:
            response = await self._pool.handle_async_request(_core_request(request, request.stream))
            body = bytearray()
            try:
                async for chunk in response.stream:  # type: ignore[union-attr]
                    _collect(body, chunk, self.policy, request)
            finally:
                await response.aclose()
        except Exception as exc:
            raise _map_error(exc, request) from exc
        return _answer(response, body)

    async def aclose(self) -> None:
        await self._pool.aclose()


class GuardedTransport(httpx.BaseTransport):
    """Synchronous twin of :class:`GuardedAsyncTransport`."""

    def __init__(self, policy: UrlPolicy, *, verify: ssl.SSLContext | bool = True) -> None:
        self.policy = policy
        self._pool = httpcore.ConnectionPool(**_pool_options(verify, _SyncBackend(policy)))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        check_url(request.url, self.policy)
        try:
            response = self._pool.handle_request(_core_request(request, request.stream))
            body = bytearray()
            try:
                for chunk in response.stream:  # type: ignore[union-attr]
                    _collect(body, chunk, self.policy, request)
            finally:
                response.close()
        except Exception as exc:
            raise _map_error(exc, request) from exc
        return _answer(response, body)

    def close(self) -> None:
        self._pool.close()


def guarded_async_client(
    policy: UrlPolicy, *, verify: ssl.SSLContext | bool = True
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` for discovery and token requests (redirects are not followed
    automatically: use :func:`next_hop`)."""
    return httpx.AsyncClient(
        transport=GuardedAsyncTransport(policy, verify=verify),
        follow_redirects=False,
        trust_env=False,
        timeout=policy.timeout_s,
    )


def guarded_client(policy: UrlPolicy, *, verify: ssl.SSLContext | bool = True) -> httpx.Client:
    return httpx.Client(
        transport=GuardedTransport(policy, verify=verify),
        follow_redirects=False,
        trust_env=False,
        timeout=policy.timeout_s,
    )


def next_hop(response: httpx.Response, policy: UrlPolicy) -> httpx.URL | None:
    """Where a redirect response points, checked; ``None`` when it is not a redirect."""
    if response.status_code not in _REDIRECTS:
        return None
    location = response.headers.get("location")
    if not location:
        return None
    target = response.request.url.join(location)
    return check_url(target, policy)
