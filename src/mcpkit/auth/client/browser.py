"""Getting the user through the authorization endpoint, safely.

The authorization URL comes from authorization-server metadata, i.e. from the network.  It
is checked (``https``, or ``http`` to loopback; only URL characters; no credentials) and
opened with :mod:`webbrowser`, which starts the browser with an argument vector, never
through a shell (the mcp-remote CVE-2025-6514 class of bug).

* :class:`LoopbackRedirectHandler`: the native-app flow (RFC 8252): a one-shot HTTP listener
  on 127.0.0.1 receives the redirect; the browser is opened with ``open_url``.
* :class:`HeadlessRedirectHandler`: for tests, CI and authorization servers that approve at
  once: GET the authorization URL without following the redirect and read ``code``,
  ``state`` and ``iss`` from ``Location`` (the conformance suite's mock AS works this way).
"""

from __future__ import annotations

import re
import socket
import webbrowser
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlsplit

import anyio
import anyio.abc
import httpx

from ..urls import is_loopback_host
from .errors import AuthorizationError, UserInteractionRequired
from .ssrf import UrlPolicy, guarded_async_client, guarded_client

__all__ = [
    "HeadlessRedirectHandler",
    "LoopbackRedirectHandler",
    "RedirectHandler",
    "check_browser_url",
    "open_in_browser",
]

# A subset of RFC 3986: no spaces, quotes, backticks, braces, "$", "(", ")", ";" or control
# and non-ASCII characters.  Parameters we add are percent-encoded, so only an endpoint
# that is itself suspicious (``https://x/$(calc)``, ``"; rm -rf ~``) is refused.
_URL_CHARS = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!&*+,=%]+$")


@runtime_checkable
class RedirectHandler(Protocol):
    """Takes the user to ``url`` and returns the redirect's query parameters."""

    @property
    def redirect_uri(self) -> str: ...

    def authorize(self, url: str) -> Awaitable[Mapping[str, str]] | Mapping[str, str]: ...


def check_browser_url(url: str) -> str:
    """``url`` if it is safe to hand to a browser, else :class:`AuthorizationError`."""
    if not isinstance(url, str) or not _URL_CHARS.match(url):
        raise AuthorizationError(f"refusing to open a malformed authorization URL: {url!r}")
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise AuthorizationError("refusing an authorization URL with credentials in it")
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and is_loopback_host(parts.hostname):
        return url
    raise AuthorizationError(
        f"refusing to open {parts.scheme or 'a'}: authorization URL (https only; http only "
        "for loopback)"
    )


def open_in_browser(url: str) -> None:
    """Open ``url`` in the user's browser (checked first; never via a shell)."""
    if not webbrowser.open(check_browser_url(url), new=1):
        raise AuthorizationError(f"could not start a browser; open this URL yourself: {url}")


def _params(query: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        out.setdefault(key, value)
    return out


_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>Authorization</title>"
    b"<p>Authorization finished. You can close this window.</p>"
)


class LoopbackRedirectHandler:
    """Receive the authorization response on ``http://127.0.0.1:<port><path>``."""

    def __init__(
        self,
        *,
        port: int = 0,
        path: str = "/callback",
        open_url: Callable[[str], object] = open_in_browser,
        timeout_s: float = 300.0,
    ) -> None:
        if port == 0:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
        self.port = port
        self.path = path
        self.open_url = open_url
        self.timeout_s = timeout_s

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def authorize(self, url: str) -> Mapping[str, str]:
        check_browser_url(url)
        result: dict[str, str] = {}
        done = anyio.Event()
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)

        async def serve(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                data = b""
                with anyio.move_on_after(10):
                    while b"\r\n\r\n" not in data and len(data) < 16384:
                        chunk = await stream.receive(4096)
                        if not chunk:
                            break
                        data += chunk
                line = data.split(b"\r\n", 1)[0].decode("latin-1")
                parts = line.split(" ")
                target = urlsplit(parts[1]) if len(parts) >= 2 else None
                if parts[0] != "GET" or target is None or target.path != self.path:
                    await stream.send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    return
                result.update(_params(target.query))
                await stream.send(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                    b"Cache-Control: no-store\r\nConnection: close\r\n"
                    + f"Content-Length: {len(_PAGE)}\r\n\r\n".encode()
                    + _PAGE
                )
                done.set()

        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, serve)
            await anyio.to_thread.run_sync(self.open_url, url)
            with anyio.move_on_after(self.timeout_s):
                await done.wait()
            tg.cancel_scope.cancel()
        if not done.is_set():
            raise AuthorizationError("timed out waiting for the authorization redirect")
        return result

    def authorize_sync(self, url: str) -> Mapping[str, str]:
        return anyio.run(self.authorize, url)


class HeadlessRedirectHandler:
    """Follow the authorization endpoint's immediate redirect without a browser."""

    def __init__(
        self,
        redirect_uri: str = "http://127.0.0.1:8976/callback",
        *,
        policy: UrlPolicy | None = None,
    ) -> None:
        self._redirect_uri = redirect_uri
        self.policy = policy or UrlPolicy()

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    def _read(self, response: httpx.Response) -> Mapping[str, str]:
        location = response.headers.get("location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise UserInteractionRequired(
                f"the authorization endpoint answered {response.status_code} without a redirect "
                "(it needs a user: use LoopbackRedirectHandler)"
            )
        target = urlsplit(location)
        expected = urlsplit(self._redirect_uri)
        if (target.scheme, target.netloc, target.path) != (
            expected.scheme,
            expected.netloc,
            expected.path,
        ):
            raise AuthorizationError(f"redirected somewhere unexpected: {location!r}")
        return _params(target.query)

    async def authorize(self, url: str) -> Mapping[str, str]:
        check_browser_url(url)
        async with guarded_async_client(self.policy) as client:
            return self._read(await client.get(url))

    def authorize_sync(self, url: str) -> Mapping[str, str]:
        check_browser_url(url)
        with guarded_client(self.policy) as client:
            return self._read(client.get(url))
