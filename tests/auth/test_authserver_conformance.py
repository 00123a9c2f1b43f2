"""The official MCP conformance suite's ``authorization`` command (0.2.x) against
``mcpkit.auth.server``: its metadata scenario, and its authorization code grant with a
pre-registered public client, PKCE and ``resource``.  The harness prints the authorization
URL and waits for its loopback callback; a headless browser signs in at a GitHub-style
provider and brings the code back, as a person would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from authkit import Browser
from github_double import CLIENT_ID, CLIENT_SECRET, GitHubDouble

from mcpkit.auth.server import github
from mcpkit.state.memory import MemoryBackend
from support.servers import ThreadServer, free_port, kill_group, need, serve_app, spawn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))

from harness import HarnessError, collect, ensure_harness, node_command

pytest.importorskip("joserfc")

SCENARIOS = ("authorization-server-metadata-endpoint", "authorization-code-grant")
CONFORMANCE_CLIENT = "conformance-client"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def harness_argv(base: str, port: int, out: Path) -> list[str]:
    need("node")
    try:
        entry = ensure_harness()
    except HarnessError as exc:
        pytest.skip(f"the conformance harness is not installable here: {exc}")
    return [
        *node_command(entry),
        "authorization",
        "--url",
        base,
        "--client-id",
        CONFORMANCE_CLIENT,
        "--resource",
        f"{base}/mcp",
        "-p",
        str(port),
        "-o",
        str(out),
    ]


async def authorization_url(log: Path, base: str, process: subprocess.Popen[bytes]) -> str:
    """The authorization URL the harness prints for the user to open."""
    with anyio.fail_after(60):
        while True:
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith(f"{base}/authorize?"):
                    return line.strip()
            assert process.poll() is None, log.read_text()
            await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_conformance_authorization_scenarios_pass(tmp_path: Path) -> None:
    import federated_server

    port = free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    with ThreadServer(GitHubDouble()) as gh:

        def make(base: str) -> Any:
            upstream = github(CLIENT_ID, CLIENT_SECRET, base_url=gh.base, api_url=gh.base)
            registered = [{"client_id": CONFORMANCE_CLIENT, "redirect_uris": [callback]}]
            return federated_server.build_app(
                base, upstream, state=MemoryBackend(), clients=registered
            )

        with serve_app(make) as (base, _):
            out = tmp_path / "results"
            log = tmp_path / "harness.log"
            process = spawn(harness_argv(base, port, out), log)
            try:
                url = await authorization_url(log, base, process)
                browser = Browser(callback)
                try:
                    answer = await browser.authorize(url)
                finally:
                    await browser.aclose()
                async with httpx.AsyncClient(trust_env=False) as http:
                    await http.get(callback, params=answer)  # what the browser would open
                with anyio.fail_after(60):
                    while process.poll() is None:
                        await anyio.sleep(0.1)
            finally:
                kill_group(process)
    text = log.read_text(encoding="utf-8", errors="replace")
    result = collect(out, text, mode="authorization", label="authorization")
    report = result.summary() + "\n" + text[-2000:]
    assert result.failed == 0, report
    for scenario in SCENARIOS:  # checks.json folders carry an ``authorization-server-`` prefix
        assert result.verdict(f"authorization-server-{scenario}") == "passed", report
