"""The few ASGI pieces the authorization server's endpoints need: reading a form or JSON
body (bounded), reading cookies, and answering JSON, redirects and HTML pages."""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from ...asgi import BodyTooLarge, ClientGone, read_chunks
from ...types.codec import DecodeError, decode, encode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 64 * 1024
NO_STORE = [(b"cache-control", b"no-store"), (b"pragma", b"no-cache")]
#: The consent and error pages may not be framed (clickjacking) and load nothing.
PAGE_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
    (b"referrer-policy", b"no-referrer"),
    *NO_STORE,
]


class BadRequest(Exception):
    """A body that cannot be read as the endpoint needs."""


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def query(scope: Scope) -> dict[str, str]:
    """The query string's parameters; a repeated one is refused (RFC 6749 §3.1)."""
    return _single(
        parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    )


def _single(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in pairs:
        if key in out:
            raise BadRequest(f"parameter {key!r} is repeated")
        out[key] = value
    return out


async def _body(receive: Receive) -> bytes:
    try:
        return b"".join(await read_chunks(receive, MAX_BODY))
    except BodyTooLarge:
        raise BadRequest("request body too large") from None
    except ClientGone:
        raise BadRequest("the client went away") from None


async def form(scope: Scope, receive: Receive) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body."""
    kind = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise BadRequest("the body must be application/x-www-form-urlencoded")
    raw = await _body(receive)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the body is not UTF-8") from None
    return _single(parse_qsl(text, keep_blank_values=True))


async def json_body(scope: Scope, receive: Receive) -> object:
    kind = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise BadRequest("the body must be application/json")
    try:
        return decode(await _body(receive))
    except DecodeError:
        raise BadRequest("the body is not JSON") from None


def cookies(scope: Scope) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for key, value in scope.get("headers", ()):
        if key.lower() == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except Exception:
                continue
    return {name: morsel.value for name, morsel in jar.items()}


async def respond(
    send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    head = [(b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


async def send_json(
    send: Send, status: int, data: object, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    await respond(send, status, encode(data), [(b"content-type", b"application/json"), *headers])


async def oauth_error(
    send: Send,
    status: int,
    error: str,
    description: str,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    await send_json(
        send, status, {"error": error, "error_description": description}, [*NO_STORE, *headers]
    )


async def redirect(send: Send, location: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await respond(send, 302, b"", [(b"location", location.encode("utf-8")), *NO_STORE, *headers])


def with_params(uri: str, params: Mapping[str, str | None]) -> str:
    """``uri`` with ``params`` added to its query (None values left out)."""
    extra = urlencode({k: v for k, v in params.items() if v is not None})
    return f"{uri}{'&' if '?' in uri else '?'}{extra}"


async def page(
    send: Send, status: int, title: str, body_html: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    text = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:36em;margin:3em auto}"
        "dt{font-weight:bold}button{margin-right:1em}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{body_html}</body></html>"
    )
    await respond(send, status, text.encode("utf-8"), [*PAGE_HEADERS, *headers])


async def error_page(send: Send, status: int, description: str) -> None:
    """An error the user sees here: the request could not be tied to a safe redirect URI."""
    await page(send, status, "Sign-in request refused", f"<p>{html.escape(description)}</p>")
