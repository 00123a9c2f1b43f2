"""``mcpkit proxy URL`` as a host launches it, in front of an OAuth-protected server, and
``mcpkit call URL`` / ``mcpkit install CLIENT URL`` with the same login.

Everything is a real process: the local authorization server and the protected server of
``examples/auth``, the proxy on stdio pipes, the command line.  The "browser" is what
Python's ``webbrowser`` starts when ``$BROWSER`` names a command: a script that records
the URL and follows the authorization endpoint's immediate 302 to the proxy's loopback
listener (the local authorization server approves at once).  Access tokens live 5 s, less
than the client's expiry margin, so every new process must refresh: a restarted proxy that
works without opening the browser again shows the stored, refreshed token in use.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from mcpkit.client import Client
from support.servers import free_port, kill_group, run_mcpkit, spawn, wait_http


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # real processes: one backend is enough


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "auth"

BROWSER_SCRIPT = """\
import sys
import httpx

with open(sys.argv[2], "a", encoding="utf-8") as log:
    log.write(sys.argv[1] + "\\n")
httpx.get(sys.argv[1], follow_redirects=True, timeout=30)
"""


@pytest.fixture
def protected(tmp_path: Path) -> Iterator[str]:
    """The local authorization server and the protected server; yields the MCP URL."""
    as_port, mcp_port = free_port(), free_port()
    issuer = f"http://127.0.0.1:{as_port}"
    as_log, mcp_log = tmp_path / "as.log", tmp_path / "mcp.log"
    authority = spawn(
        [sys.executable, str(EXAMPLES / "local_as.py"), "--port", str(as_port), "--token-ttl", "5"],
        as_log,
    )
    resource: subprocess.Popen[bytes] | None = None
    try:
        wait_http(f"{issuer}/.well-known/oauth-authorization-server", authority, as_log)
        resource = spawn(
            [
                sys.executable,
                str(EXAMPLES / "protected_server.py"),
                "--issuer",
                issuer,
                "--port",
                str(mcp_port),
            ],
            mcp_log,
        )
        url = f"http://127.0.0.1:{mcp_port}/mcp"
        wait_http(
            f"http://127.0.0.1:{mcp_port}/.well-known/oauth-protected-resource/mcp",
            resource,
            mcp_log,
        )
        yield url
    finally:
        if resource is not None:
            kill_group(resource)
        kill_group(authority)


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A person's environment: a token store under ``tmp_path`` and a browser that
    records each page it is asked to open (in the returned file)."""
    script = tmp_path / "browser.py"
    script.write_text(BROWSER_SCRIPT)
    opened = tmp_path / "opened.txt"
    monkeypatch.setenv("BROWSER", f"{sys.executable} {script} %s {opened}")
    monkeypatch.setenv("MCPKIT_TOKEN_FILE", str(tmp_path / "tokens.json"))
    monkeypatch.setenv("HOME", str(tmp_path))
    return opened


def pages(opened: Path) -> list[str]:
    return opened.read_text().split() if opened.exists() else []


def redirect_of(page: str) -> str:
    return parse_qs(urlsplit(page).query)["redirect_uri"][0]


def stored_tokens(tmp_path: Path) -> dict[str, Any]:
    data: dict[str, dict[str, Any]] = json.loads((tmp_path / "tokens.json").read_text())["tokens"]
    return data


async def whoami_through_proxy(url: str) -> dict[str, Any]:
    async with Client([sys.executable, "-m", "mcpkit", "proxy", url], timeout=120) as client:
        names = {tool["name"] for tool in await client.list_tools()}
        assert "whoami" in names
        result = await client.call_tool("whoami", {})
    data: dict[str, Any] = result["structuredContent"]
    return data


@pytest.mark.anyio
async def test_proxy_logs_in_once_then_uses_the_stored_token(
    protected: str, user: Path, tmp_path: Path
) -> None:
    first = await whoami_through_proxy(protected)
    assert first["subject"] == "demo-user" and "mcp" in first["scopes"]
    (page,) = pages(user)
    assert "/authorize?" in page and "code_challenge=" in page
    (before,) = stored_tokens(tmp_path).values()
    assert before["refresh_token"]

    # A new process, launched as a host does, from the entry `mcpkit install` writes:
    # no login, a refresh.
    out = run_mcpkit("install", "json", protected, "--name", "remote", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    async with Client.from_config(json.loads(out.stdout), timeout=120) as host:
        assert "remote__whoami" in {tool["name"] for tool in await host.list_tools()}
        again = (await host.call_tool("remote__whoami", {}))["structuredContent"]
    assert again["subject"] == "demo-user"
    assert len(pages(user)) == 1
    (after,) = stored_tokens(tmp_path).values()
    assert after["access_token"] != before["access_token"]

    # Tokens gone (revoked, logged out), the registered client kept: a new login in a new
    # process, whose redirect URI must still be the one the client was registered with.
    store = json.loads((tmp_path / "tokens.json").read_text())
    store["tokens"] = {}
    (tmp_path / "tokens.json").write_text(json.dumps(store))
    assert (await whoami_through_proxy(protected))["subject"] == "demo-user"
    first_page, second_page = pages(user)
    assert redirect_of(first_page) == redirect_of(second_page)


def test_call_logs_in_too(protected: str, user: Path, tmp_path: Path) -> None:
    out = run_mcpkit("call", protected, "whoami", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["structuredContent"]["subject"] == "demo-user"
    assert len(pages(user)) == 1
    assert "log in to continue" in out.stderr
    listed = run_mcpkit("list", protected, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "whoami" in listed.stdout
    assert len(pages(user)) == 1


def test_install_writes_the_proxy_command(tmp_path: Path) -> None:
    """The entry's name is the URL's host unless ``--name`` says."""
    out = run_mcpkit("install", "json", "https://mcp.example.com/mcp", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    entry = json.loads(out.stdout)["mcpServers"]["mcp.example.com"]
    assert entry["args"] == ["-m", "mcpkit", "proxy", "https://mcp.example.com/mcp"]
    assert Path(entry["command"]).is_absolute()
