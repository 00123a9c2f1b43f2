"""Other clients through mcpkit's authorization server, one server as a user runs it
(``mcpkit serve examples/quickstart.py --http --authorization-server FILE``, users signing in
at a GitHub-style provider): ``mcpkit auth doctor`` walks every step for mcpkit's client and
Claude's; the TypeScript SDK's client (``@modelcontextprotocol/client``, the v2 SDK) signs in
with its ``OAuthClientProvider`` and calls a tool; so does the MCP Inspector's CLI (its own
OAuth: it prints the authorization URL and listens on a loopback callback, where the headless
browser lands).  Each npm peer is skipped, saying why,
when npm cannot install it.  (The official conformance suite's client auth scenarios run
against its own mock authorization servers: tests/conformance.)"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from authkit import Browser, PersonAtTheConsentPage
from github_double import CLIENT_ID, CLIENT_SECRET, GitHubDouble

from mcpkit.auth.client.doctor import diagnose
from support.npm import npm_installed
from support.servers import (
    ThreadServer,
    free_port,
    kill_group,
    serve_argv,
    spawn,
    subprocess_env,
    wait_http,
)

pytest.importorskip("joserfc")

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"
PEERS = Path(__file__).resolve().parent / "peers"
TS_CLIENT = "@modelcontextprotocol/client@2"
INSPECTOR = "@modelcontextprotocol/inspector@2"
NAVIGATE = "Please navigate to: "


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The quickstart server with its authorization server, in its own process."""
    tmp = tmp_path_factory.mktemp("interop")
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    with ThreadServer(GitHubDouble()) as gh:
        config = tmp / "authserver.toml"
        config.write_text(
            f'issuer = "{issuer}"\nstate = "sqlite:///authserver.db"\n\n[upstream]\n'
            f'provider = "github"\nclient_id = "{CLIENT_ID}"\n'
            f'client_secret_env = "TEST_GITHUB_SECRET"\nbase_url = "{gh.base}"\n'
            f'api_url = "{gh.base}"\n'
        )
        argv = serve_argv(
            QUICKSTART, "--http", "--port", str(port), "--authorization-server", str(config)
        )
        log = tmp / "serve.log"
        env = subprocess_env(TEST_GITHUB_SECRET=CLIENT_SECRET)
        process = spawn(argv, log, env=env, cwd=tmp)
        try:
            wait_http(f"{issuer}/.well-known/oauth-authorization-server", process, log)
            yield f"{issuer}/mcp"
        finally:
            kill_group(process)


@pytest.mark.parametrize("client", ["mcpkit", "claude"])
def test_auth_doctor_passes_every_step_at_a_single_server(mcp_url: str, client: str) -> None:
    """What ``mcpkit auth doctor URL --client CLIENT --interactive`` does, the headless
    browser standing in for the person at the consent page."""
    report = diagnose(mcp_url, client=client, redirect_handler=PersonAtTheConsentPage())
    lines = [finding.line() for finding in report.findings]
    assert report.ok, lines
    assert {finding.status for finding in report.findings} == {"ok"}, lines
    assert [finding.step for finding in report.findings][-2:] == ["refresh", "call-after-refresh"]


def test_the_typescript_sdk_client_signs_in_and_calls_a_tool(mcp_url: str) -> None:
    root = npm_installed("mcpkit-ts-sdk-client", TS_CLIENT)
    # ESM resolves packages from the script's folder upwards: run a copy inside the cache.
    script = root / "ts_sdk_client.mjs"
    script.write_bytes((PEERS / "ts_sdk_client.mjs").read_bytes())
    done = subprocess.run(
        ["node", str(script), mcp_url, "from the TypeScript SDK"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["signedIn"] is True
    assert answer["result"]["content"][0]["text"] == "from the TypeScript SDK"


def test_the_inspector_cli_signs_in_and_calls_a_tool(mcp_url: str) -> None:
    root = npm_installed("mcpkit-inspector-cli", INSPECTOR)
    callback = f"http://127.0.0.1:{free_port()}/callback"
    argv = [str(root / "node_modules" / ".bin" / "mcp-inspector"), "--cli", mcp_url]
    argv += ["--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=inspected"]
    argv += ["--callback-url", callback]
    # Without a TTY it signs in only when told to, and the "browser" it opens does nothing:
    # the URL it prints is followed here instead.
    env = {**os.environ, "MCP_AUTO_OPEN_ENABLED": "true", "BROWSER": "true"}
    env["MCP_INSPECTOR_SECRET_STORE"] = "memory"
    inspector = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root
    )
    try:
        assert inspector.stderr is not None
        seen = []
        for line in inspector.stderr:
            seen.append(line)
            if line.startswith(NAVIGATE):
                break
        else:
            raise AssertionError(f"the inspector asked for no sign-in: {''.join(seen)[-2000:]}")
        url = line[len(NAVIGATE) :].strip()

        async def sign_in() -> dict[str, str]:
            browser = Browser(callback)
            try:
                return await browser.authorize(url)
            finally:
                await browser.aclose()

        params = anyio.run(sign_in)
        assert "code" in params, params
        httpx.get(callback, params=params, timeout=30)  # the inspector's loopback listener
        out, err = inspector.communicate(timeout=120)
    finally:
        if inspector.poll() is None:
            inspector.kill()
            inspector.communicate()
    assert inspector.returncode == 0, err[-2000:]
    assert "inspected" in out
    assert json.loads(out)["content"][0]["text"] == "inspected"
