"""``mcpkit serve TARGET --http --authorization-server FILE`` as a user runs it: the server
in its own process with its authorization server beside it (state in a SQLite file),
users signing in at a GitHub-style provider; and a wrong file refused, naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from authkit import Browser
from github_double import CLIENT_ID, CLIENT_SECRET, GitHubDouble

from mcpkit.auth.client import OAuthClientAuth, UrlPolicy
from mcpkit.client import Client
from support.servers import (
    ThreadServer,
    free_port,
    kill_group,
    run_mcpkit,
    serve_argv,
    spawn,
    subprocess_env,
    wait_http,
)

pytest.importorskip("joserfc")

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def config_text(issuer: str, github_base: str, extra: str = "") -> str:
    return f"""
issuer = "{issuer}"
state = "sqlite:///authserver.db"
{extra}
[upstream]
provider = "github"
client_id = "{CLIENT_ID}"
client_secret_env = "TEST_GITHUB_SECRET"
base_url = "{github_base}"
api_url = "{github_base}"
"""


@pytest.mark.anyio
async def test_serve_with_an_authorization_server_file_signs_a_client_in(tmp_path: Path) -> None:
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    with ThreadServer(GitHubDouble()) as gh:
        config = tmp_path / "authserver.toml"
        config.write_text(config_text(issuer, gh.base))
        argv = serve_argv(
            QUICKSTART, "--http", "--port", str(port), "--authorization-server", str(config)
        )
        env = subprocess_env(TEST_GITHUB_SECRET=CLIENT_SECRET)
        log = tmp_path / "serve.log"
        process = spawn(argv, log, env=env, cwd=tmp_path)
        try:
            wait_http(f"{issuer}/.well-known/oauth-authorization-server", process, log)
            browser = Browser()
            policy = UrlPolicy.local_development()
            auth = OAuthClientAuth(redirect_handler=browser, policy=policy, client_name="cli test")
            try:
                async with Client(f"{issuer}/mcp", auth=auth) as client:
                    result = await client.call_tool("echo", {"text": "signed in"})
            finally:
                await browser.aclose()
        finally:
            kill_group(process)
    assert "signed in" in str(result["content"])
    assert (tmp_path / "authserver.db").exists()  # the state is in the file the config names


def test_serve_refuses_an_authorization_server_file_with_an_unknown_key(tmp_path: Path) -> None:
    config = tmp_path / "authserver.toml"
    config.write_text(config_text("http://127.0.0.1:1", "http://127.0.0.1:2", "consnet = false"))
    done = run_mcpkit(
        "serve", str(QUICKSTART), "--http", "--authorization-server", str(config), cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert "consnet" in done.stderr and "consent" in done.stderr  # names it, suggests the key
