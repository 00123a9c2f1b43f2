"""``mcpkit.auth.server`` federating to a real OpenID Provider: node-oidc-provider (a
certified implementation) with no dynamic registration and one pre-registered client, as
corporate providers are.  mcpkit's own client registers at mcpkit's authorization server,
the user signs in at the provider (a fixed user, headless), and the tool sees the identity
the provider vouched for in its ID token."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from authkit import Browser

from mcpkit.auth.client import OAuthClientAuth, UrlPolicy
from mcpkit.auth.server import OidcUpstream
from mcpkit.client import Client
from mcpkit.state.memory import MemoryBackend
from support.servers import free_port, kill_group, need, serve_app, spawn, wait_http

pytest.importorskip("joserfc")

PACKAGE = "oidc-provider@9"
SCRIPT = Path(__file__).resolve().parent / "peers" / "oidc_provider.mjs"
CLIENT_ID = "mcpkit-authorization-server"
CLIENT_SECRET = "a-long-pre-registered-secret"
LOCAL = UrlPolicy.local_development()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def installed_provider() -> Path:
    """node-oidc-provider installed once (under a lock) in a cache folder; its node_modules."""
    need("node")
    need("npm")
    cache = Path(
        os.environ.get("MCPKIT_NPM_CACHE", Path.home() / ".cache" / "mcpkit-oidc-provider")
    )
    cache.mkdir(parents=True, exist_ok=True)
    modules = cache / "node_modules"
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (modules / "oidc-provider" / "package.json").exists():
            npm = shutil.which("npm") or "npm"
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(cache), PACKAGE],
                capture_output=True,
                timeout=300,
                check=False,
            )
            if done.returncode != 0:
                pytest.skip(f"npm could not install {PACKAGE}: {done.stderr.decode()[-300:]}")
    return modules


@contextlib.contextmanager
def oidc_provider(tmp: Path, redirect_uri: str) -> Iterator[str]:
    modules = installed_provider()
    port = free_port()
    env = {**os.environ, "NODE_PATH": str(modules)}
    # ESM resolves packages from the script's folder upwards: run a copy inside the cache.
    script = modules.parent / "oidc_provider.mjs"
    script.write_bytes(SCRIPT.read_bytes())
    argv = ["node", str(script), str(port), CLIENT_ID, CLIENT_SECRET, redirect_uri]
    log = tmp / "oidc-provider.log"
    process = spawn(argv, log, env=env)
    try:
        issuer = f"http://127.0.0.1:{port}"
        wait_http(f"{issuer}/.well-known/openid-configuration", process, log)
        yield issuer
    finally:
        kill_group(process)


@pytest.mark.anyio
async def test_mcpkit_client_signs_in_through_oidc_provider_and_calls_a_tool(
    tmp_path: Path,
) -> None:
    import federated_server

    holder: dict[str, Any] = {}

    def make(base: str) -> Any:
        upstream = OidcUpstream(
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            issuer=holder["issuer"],
            scopes=("openid", "email", "profile", "groups"),
            token_auth="client_secret_basic",  # as the provider's client is registered
        )
        holder["upstream"] = upstream
        return federated_server.build_app(
            base, upstream, state=MemoryBackend(), metadata_policy=LOCAL
        )

    # The provider must know the callback URL: start the AS first on a known base, then the
    # provider, then give the AS its issuer (the upstream is only contacted on sign-in).
    with contextlib.ExitStack() as stack:
        holder["issuer"] = "http://127.0.0.1:1"  # a placeholder until the provider runs
        base, _app = stack.enter_context(serve_app(make))
        issuer = stack.enter_context(oidc_provider(tmp_path, f"{base}/oauth/callback"))
        holder["upstream"].issuer = issuer
        browser = Browser()
        auth = OAuthClientAuth(redirect_handler=browser, policy=LOCAL, client_name="oidc e2e")
        try:
            async with Client(f"{base}/mcp", auth=auth) as client:
                result = await client.call_tool("whoami", {})
        finally:
            await browser.aclose()
    who = result["structuredContent"]
    assert who["subject"] == "alice-0001"
    assert who["email"] == "alice@example.com"
    assert who["name"] == "Alice Example"
    assert who["groups"] == ["engineering", "mcp-users"]
    # The sign-in really went through the provider (its interaction), not around it.
    assert any(url.startswith(f"{issuer}/interaction/") for url in browser.visited)
    assert any(url.startswith(f"{base}/oauth/callback") for url in browser.visited)
