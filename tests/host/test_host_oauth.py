"""OAuth to a remote server, from its 401 to a successful call: the host's HTTP server is the
protected example (``examples/auth/protected_server.py``) and the authorization server is
the local test double (``examples/auth/local_as.py``), both on 127.0.0.1.  The test double
approves at once (a 302 back to the host's loopback callback), so "the person" only has to
open the URL the host shows: a thread here, Chromium on the page."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from hostkit import PAGE_TIMEOUT_MS, REPO, SHOTS, chromium, web_host

from mcpkit.auth.client import FileTokenStore
from mcpkit.host import Host, HostConfig, Interaction, Permission, ServerConfig
from support.servers import serve_app

sys.path.insert(0, str(REPO / "examples" / "auth"))
from local_as import LocalAuthorizationServer
from protected_server import build_app


@contextmanager
def protected(token_ttl_s: int = 3600) -> Iterator[tuple[str, LocalAuthorizationServer]]:
    """(the MCP server's URL, the authorization server)."""
    with (
        serve_app(lambda base: LocalAuthorizationServer(base, token_ttl_s=token_ttl_s)) as (
            issuer,
            authz,
        ),
        serve_app(lambda base: build_app(issuer, base + "/mcp")) as (mcp, _),
    ):
        yield mcp + "/mcp", authz


class OpensLinks(Interaction):
    """A person who opens every log-in link (in a thread, as a browser would)."""

    def __init__(self) -> None:
        self.urls: list[tuple[str, str]] = []

    def login_url(self, server: str, url: str) -> None:
        self.urls.append((server, url))

        def browse() -> None:
            hop = httpx.get(url)  # the AS approves at once: a 302 to our loopback callback
            httpx.get(hop.headers["location"])

        threading.Thread(target=browse, daemon=True).start()


def grants(authz: LocalAuthorizationServer) -> list[str]:
    return [form.get("grant_type", "") for method, path, form in authz.log if path == "/token"]


@pytest.mark.anyio
async def test_from_401_to_a_call_with_a_refresh_and_a_logout(tmp_path: Path) -> None:
    # A lifetime under the client's 30 s expiry margin: every token is "about to expire"
    # as soon as it is issued, so the next request refreshes it (no waiting involved).
    with protected(token_ttl_s=5) as (url, authz):
        store = FileTokenStore(tmp_path / "tokens.json")
        person = OpensLinks()
        config = HostConfig(
            servers=(ServerConfig(name="prot", url=url),), default_permission=Permission.ALLOW
        )
        async with Host(config, interaction=person, token_store=store) as host:
            conn = host.connection("prot")
            await conn.wait_ready()
            assert [s for s, _ in person.urls] == ["prot"]
            assert person.urls[0][1].startswith(authz.issuer + "/authorize?")
            assert conn.status()["auth"] == {"state": "logged-in", "url": None}
            result = await host.call_tool("prot__whoami", {})
            assert result["structuredContent"]["subject"] == "demo-user"
            assert grants(authz)[0] == "authorization_code"
            assert "refresh_token" in grants(authz)  # renewed, not asked again
            assert len(person.urls) == 1
            assert store.get_tokens(url) is not None  # kept in the per-user store

            host.logout("prot")
            assert store.get_tokens(url) is None
            await conn.wait_ready()  # reconnects: a 401, so the person is asked again
            assert len(person.urls) == 2
            result = await host.call_tool("prot__whoami", {})
            assert result["structuredContent"]["subject"] == "demo-user"


def test_no_oauth_for_a_server_with_its_own_authorization_header() -> None:
    from mcpkit.host.oauth import wants_oauth

    assert wants_oauth(ServerConfig(name="a", url="https://x/mcp"))
    assert not wants_oauth(
        ServerConfig(name="a", url="https://x/mcp", headers={"Authorization": "Bearer k"})
    )
    assert not wants_oauth(ServerConfig(name="a", url="https://x/mcp", oauth=False))
    assert not wants_oauth(ServerConfig(name="a", command=("python", "s.py")))


def test_log_in_and_out_from_the_page(tmp_path: Path) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with protected() as (url, authz):
        config = {"mcpServers": {"prot": {"url": url, "permission": "allow"}}}
        tokens = tmp_path / "tokens.json"
        with (
            web_host(config, tmp_path, env={"MCPKIT_TOKEN_FILE": str(tokens)}) as page_url,
            chromium(tmp_path / "profile") as context,
        ):
            page = context.new_page()
            page.set_default_timeout(PAGE_TIMEOUT_MS)
            page.goto(page_url)
            page.wait_for_selector("[data-testid='login:prot']")
            page.screenshot(path=str(SHOTS / "oauth-01-login-needed.png"))
            with context.expect_page() as popup_info:
                # A locator, not the element: the page redraws the server list when its
                # event stream opens, which can replace the button between wait and click.
                page.locator("[data-testid='login:prot']").click()
            popup = popup_info.value
            popup.wait_for_load_state()
            assert "Authorization finished" in popup.inner_text("body")
            popup.close()
            page.wait_for_selector("[data-testid='auth:prot']:has-text('logged in')")
            page.wait_for_selector("[data-testid='tool:prot:whoami']")
            page.click("[data-testid='tool:prot:whoami']")
            page.click("[data-testid=call-tool]")
            page.wait_for_selector("#result pre.structured:has-text('demo-user')")
            page.screenshot(path=str(SHOTS / "oauth-02-logged-in.png"))
            assert grants(authz) == ["authorization_code"]
            assert FileTokenStore(tokens).get_tokens(url) is not None
            page.click("[data-testid='logout:prot']")
            page.wait_for_selector("[data-testid='login:prot']")
            assert FileTokenStore(tokens).get_tokens(url) is None
