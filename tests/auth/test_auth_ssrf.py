"""The SSRF guard, authorization-URL checks, challenge parsing and discovery URL order."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import httpx
import pytest

from mcpkit.auth.challenge import parse_challenges
from mcpkit.auth.client import (
    AuthorizationError,
    SsrfBlocked,
    UrlPolicy,
    check_address,
    check_browser_url,
    check_url,
)
from mcpkit.auth.client.metadata import as_metadata_urls, prm_urls, resource_matches
from mcpkit.auth.client.ssrf import guarded_async_client, guarded_client, next_hop
from support.servers import serve_app

PROD = UrlPolicy()
DEV = UrlPolicy.local_development()


@pytest.mark.parametrize(
    "url",
    [
        "https://169.254.169.254/latest/meta-data",
        "https://10.0.0.1/x",
        "https://192.168.1.5/x",
        "https://172.16.0.1/x",
        "https://127.0.0.1/x",
        "https://[::1]/x",
        "https://[::ffff:127.0.0.1]/x",
        "https://[::ffff:169.254.169.254]/x",
        "https://[fe80::1]/x",
        "https://[fc00::1]/x",
        "https://[2002:a9fe:a9fe::]/x",  # 6to4 wrapping 169.254.169.254
        "https://0.0.0.0/x",
        "https://0x7f000001/x",
        "https://2130706433/x",
        "https://017700000001/x",
        "https://0177.0.0.1/x",
        "https://localhost/x",
        "http://example.com/x",  # plain http off loopback
        "https://user:pass@example.com/x",
        "ftp://example.com/x",
        "file:///etc/passwd",
    ],
)
def test_blocked_in_production(url: str) -> None:
    with pytest.raises(SsrfBlocked):
        check_url(url, PROD)


def test_public_https_is_fine() -> None:
    assert check_url("https://auth.example.com/.well-known/x", PROD).host == "auth.example.com"
    check_address("93.184.216.34", PROD)
    check_address("2606:4700::1111", PROD)


def test_loopback_only_when_allowed_and_never_metadata_or_private() -> None:
    check_url("http://127.0.0.1:9000/x", DEV)
    check_url("http://localhost:9000/x", DEV)
    check_url("http://[::1]:9000/x", DEV)
    for url in ("http://10.0.0.1/x", "https://169.254.169.254/x", "http://example.com/x"):
        with pytest.raises(SsrfBlocked):
            check_url(url, DEV)
    check_address("10.1.2.3", UrlPolicy(allow_private=True))
    with pytest.raises(SsrfBlocked):
        check_address("169.254.169.254", UrlPolicy(allow_private=True, allow_loopback=True))


def test_resolved_addresses_are_checked_and_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """A public-looking name that resolves to a private address is refused at connect time."""

    async def fake_getaddrinfo(host: str, port: int, **kw: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port))]

    monkeypatch.setattr(anyio, "getaddrinfo", fake_getaddrinfo)

    async def run() -> None:
        async with guarded_async_client(PROD) as client:
            await client.get("https://rebind.example.com/.well-known/x")

    with pytest.raises(SsrfBlocked, match="non-public"):
        anyio.run(run)

    def fake_sync(host: str, port: int, *a: Any, **kw: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", port))]

    monkeypatch.setattr(socket, "getaddrinfo", fake_sync)
    with pytest.raises(SsrfBlocked, match="link-local"), guarded_client(PROD) as client:
        client.get("https://metadata.example.com/x")


def test_each_redirect_hop_is_checked() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        target = {"/a": b"http://169.254.169.254/latest", "/b": b"/c"}.get(scope["path"])
        status = 302 if target else 200
        headers = [(b"location", target)] if target else []
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})

    with serve_app(lambda base: app) as (base, _), guarded_client(DEV) as client:
        with pytest.raises(SsrfBlocked):
            next_hop(client.get(f"{base}/a"), DEV)
        hop = next_hop(client.get(f"{base}/b"), DEV)
        assert hop is not None and str(hop) == f"{base}/c"


def test_response_size_is_capped() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(10):
            await send({"type": "http.response.body", "body": b"x" * 1000, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    policy = UrlPolicy(allow_loopback=True, max_response_bytes=4000)
    with (
        serve_app(lambda base: app) as (base, _),
        guarded_client(policy) as client,
        pytest.raises(SsrfBlocked, match="exceeds"),
    ):
        client.get(base)


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox",
        "https://x/$(calc)",
        'https://x/"; rm -rf ~',
        "https://x/`id`",
        "http://evil.example.com/authorize",
        "https://user@evil.example.com/authorize",
        "https://x/\u202eexe",
    ],
)
def test_authorization_urls_that_are_refused(url: str) -> None:
    with pytest.raises(AuthorizationError):
        check_browser_url(url)


def test_authorization_urls_that_are_fine() -> None:
    check_browser_url("https://auth.example.com/authorize?client_id=a&scope=mcp%20x")
    check_browser_url("http://127.0.0.1:9000/authorize?x=1")


def test_the_browser_is_never_started_through_a_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    import webbrowser

    from mcpkit.auth.client import open_in_browser

    opened: list[str] = []

    def fake_open(url: str, new: int = 0) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr(webbrowser, "open", fake_open)
    open_in_browser("https://auth.example.com/authorize?x=1")
    assert opened == ["https://auth.example.com/authorize?x=1"]
    with pytest.raises(AuthorizationError):
        open_in_browser('https://x/"; calc.exe')
    assert len(opened) == 1


def test_challenge_parsing() -> None:
    header = (
        'Bearer error="insufficient_scope", scope="a b", '
        'resource_metadata="https://rs/.well-known/oauth-protected-resource/mcp", '
        'DPoP algs="ES256", error="use_dpop_nonce"'
    )
    bearer, dpop = parse_challenges(header)
    assert bearer.scheme == "Bearer" and bearer.error == "insufficient_scope"
    assert bearer.scopes == ["a", "b"]
    assert bearer.resource_metadata == "https://rs/.well-known/oauth-protected-resource/mcp"
    assert dpop.scheme == "DPoP" and dpop.error == "use_dpop_nonce"
    (quoted,) = parse_challenges(r'Bearer realm="a \"b\"", scope=x')
    assert quoted.params == {"realm": 'a "b"', "scope": "x"}


def test_discovery_url_order() -> None:
    assert prm_urls("https://rs.example.com/v1/mcp", "https://rs.example.com/prm") == [
        "https://rs.example.com/prm",
        "https://rs.example.com/.well-known/oauth-protected-resource/v1/mcp",
        "https://rs.example.com/.well-known/oauth-protected-resource",
    ]
    assert as_metadata_urls("https://as.example.com/tenant1") == [
        "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://as.example.com/.well-known/openid-configuration/tenant1",
        "https://as.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert as_metadata_urls("https://as.example.com") == [
        "https://as.example.com/.well-known/oauth-authorization-server",
        "https://as.example.com/.well-known/openid-configuration",
    ]


def test_resource_matching() -> None:
    assert resource_matches("https://rs.example.com/mcp", "https://RS.example.com:443/mcp")
    assert resource_matches("https://rs.example.com", "https://rs.example.com/mcp")
    assert resource_matches("https://rs.example.com/", "https://rs.example.com/mcp")
    assert not resource_matches("https://evil.example.com/mcp", "https://rs.example.com/mcp")
    assert not resource_matches("https://rs.example.com/mc", "https://rs.example.com/mcp")
    assert not resource_matches("http://rs.example.com/mcp", "https://rs.example.com/mcp")
    assert not resource_matches("https://rs.example.com/mcp#x", "https://rs.example.com/mcp")


def test_httpx_errors_are_not_swallowed_for_unreachable_hosts() -> None:
    with guarded_client(DEV) as client, pytest.raises(httpx.ConnectError):
        client.get("http://127.0.0.1:1/x")
