"""Security defaults (plan A5, C16, G6 and the README's "Security defaults and decisions").

* ``mcpkit serve --http`` binds 127.0.0.1; a non-loopback bind without ``--allow-remote``
  exits 2 with a message and binds nothing; with ``--allow-remote`` it starts (and still
  refuses foreign Origins);
* icons and website URLs are limited to safe schemes at registration time;
* a tool schema with network ``$ref``/``$schema``/``$id`` URLs is listed and called over
  HTTP and stdio without anything ever fetching them.

Sessions, handles and ``requestState`` bound to the principal are in test_rel_sessions.py.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from relkit import (
    SERVER_FILE,
    ServerProcess,
    base_env,
    call_tool,
    listening_addresses,
    next_id,
    post,
)

from mcpkit import Server
from mcpkit.client import Client, ServerError
from support.mcp import modern_headers
from support.servers import free_port, serve_argv

if TYPE_CHECKING:
    from conftest import Rel

LOOPBACK_V4 = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it
ANY_V4 = "00000000"


# ------------------------------ A5 bind address


def test_a5_default_bind_is_loopback_only(rel: Rel, tmp_path: Path) -> None:
    server = ServerProcess.cli(tmp_path)
    try:
        assert listening_addresses(server.port) == {LOOPBACK_V4}
        with httpx.Client(timeout=10) as client:
            reply = post(client, server.url, call_tool(next_id(), "echo", {"nonce": "lo"}))
        assert reply.result["content"][0]["text"] == "lo"
        rel.verified()
    finally:
        server.stop()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", ""])
def test_a5_non_loopback_bind_without_allow_remote_exits_2(
    rel: Rel, tmp_path: Path, host: str
) -> None:
    port = free_port()
    argv = serve_argv(
        SERVER_FILE, "--http", "--host", host, "--port", str(port), "--state", "memory:"
    )
    proc = subprocess.run(argv, cwd=tmp_path, env=base_env(), capture_output=True, timeout=30)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    message = proc.stderr.decode()
    assert "refusing" in message and "--allow-remote" in message, message
    assert listening_addresses(port) == set()


def test_a5_allow_remote_starts_and_still_checks_origin(rel: Rel, tmp_path: Path) -> None:
    server = ServerProcess.cli(tmp_path, "--host", "0.0.0.0", "--allow-remote")
    try:
        assert listening_addresses(server.port) == {ANY_V4}
        with httpx.Client(timeout=10) as client:
            message = call_tool(next_id(), "echo", {"nonce": "remote"})
            assert post(client, server.url, message).result["content"][0]["text"] == "remote"
            foreign = post(
                client,
                server.url,
                message,
                modern_headers(message, origin="http://evil.example.com"),
            )
            assert foreign.status == 403 and foreign.error["code"] == -32600
        rel.verified(2)
    finally:
        server.stop()


def test_a5_localhost_is_a_loopback_bind(rel: Rel, tmp_path: Path) -> None:
    server = ServerProcess.cli(tmp_path, "--host", "localhost")
    try:
        assert listening_addresses(server.port) <= {LOOPBACK_V4, "00000000000000000000000001000000"}
    finally:
        server.stop()


# ------------------------------ icons and URLs

UNSAFE_ICONS = [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "  javascript:alert(1)",
    "file:///etc/passwd",
    "http://example.com/icon.png",
    "data:text/html,<script>alert(1)</script>",
    "data:image/svg+xml;charset=utf-8,<svg>",  # allowed type, checked below separately
    "vbscript:msgbox",
    "//example.com/icon.png",
    "ftp://example.com/icon.png",
    "",
]
SAFE_ICONS = [
    "https://example.com/icon.png",
    "data:image/png;base64,iVBORw0KGgo=",
    "DATA:image/webp;base64,AAAA",
]


def _register(kind: str, icons: list[dict[str, Any]]) -> None:
    if kind == "server":
        Server("x", icons=icons)
        return
    server = Server("x")
    if kind == "tool":
        server.tool(icons=icons)(lambda: "t")
    elif kind == "resource":
        server.resource("note://x", icons=icons)(lambda: "r")
    elif kind == "template":
        server.resource("note://{id}", icons=icons)(lambda id: "r")
    else:
        server.prompt(icons=icons)(lambda: "p")


@pytest.mark.parametrize("kind", ["server", "tool", "resource", "template", "prompt"])
@pytest.mark.parametrize("src", [s for s in UNSAFE_ICONS if not s.startswith("data:image/svg")])
def test_icons_with_unsafe_schemes_are_refused(rel: Rel, kind: str, src: str) -> None:
    with pytest.raises(ValueError):
        _register(kind, [{"src": src, "mimeType": "image/png"}])


@pytest.mark.parametrize("kind", ["server", "tool", "resource", "template", "prompt"])
@pytest.mark.parametrize("src", SAFE_ICONS)
def test_icons_with_safe_schemes_are_accepted(rel: Rel, kind: str, src: str) -> None:
    _register(kind, [{"src": src, "mimeType": "image/png", "sizes": ["48x48"]}])


@pytest.mark.parametrize("kind", ["server", "tool"])
def test_icon_entries_must_be_objects_with_a_string_src(rel: Rel, kind: str) -> None:
    for icons in ([{"src": None}], [{"mimeType": "image/png"}], ["https://example.com/i.png"]):
        with pytest.raises(ValueError):
            _register(kind, icons)  # type: ignore[arg-type]


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///etc/passwd", "data:text/html,x"])
def test_website_url_must_be_http(rel: Rel, url: str) -> None:
    with pytest.raises(ValueError):
        Server("x", website_url=url)


# ------------------------------ C16 no network $ref dereferencing


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def ref_target() -> Iterator[tuple[str, list[str]]]:
    class Handler(_Counting):
        hits: list[str] = []

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", Handler.hits
    finally:
        httpd.shutdown()
        httpd.server_close()


def _ref_server(tmp_path: Path, base: str) -> Path:
    path = tmp_path / "ref_server.py"
    path.write_text(
        textwrap.dedent(f'''
        from typing import Any
        from mcpkit import Server

        server = Server("ref-server")

        @server.tool(input_schema={{
            "type": "object",
            "properties": {{"x": {{"$ref": "{base}/evil.json"}}}},
        }})
        def by_ref(**arguments: Any) -> str:
            """A property whose schema lives on the network."""
            return "by_ref ran"

        @server.tool(input_schema={{
            "$id": "{base}/base.json",
            "type": "object",
            "properties": {{"y": {{"$ref": "relative.json"}}}},
        }})
        def by_base(**arguments: Any) -> str:
            """A relative reference resolved against a network base URI."""
            return "by_base ran"

        @server.tool(input_schema={{"$schema": "{base}/meta.json", "type": "object"}})
        def by_meta(**arguments: Any) -> str:
            """A network meta-schema."""
            return "by_meta ran"
        ''')
    )
    return path


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("by_ref", {"x": "a"}),
    ("by_base", {"y": "b"}),
    ("by_meta", {"z": 1}),
]


async def _list_and_call(client: Client, base: str, hits: list[str]) -> list[Any]:
    """List and call every tool; never let an error hide whether something was fetched."""
    outcomes: list[Any] = []
    try:
        tools = {t["name"]: t for t in await client.list_tools()}
        assert set(tools) == {"by_ref", "by_base", "by_meta"}
        assert tools["by_ref"]["inputSchema"]["properties"]["x"] == {"$ref": f"{base}/evil.json"}
        for name, arguments in CALLS:
            try:
                outcomes.append(await client.call_tool(name, arguments))
            except ServerError as exc:
                outcomes.append(exc)
    finally:
        assert hits == [], f"the schemas' URLs were fetched: {hits}"
    return outcomes


def _acceptable(outcomes: list[Any]) -> None:
    """A tool with an unresolvable (network) reference may run or be refused as a tool
    error / -32602, but it is not an internal error of the server."""
    for (name, _), outcome in zip(CALLS, outcomes, strict=True):
        if isinstance(outcome, ServerError):
            assert outcome.code == -32602, (name, str(outcome))
        else:
            assert outcome["content"], (name, outcome)


@pytest.mark.anyio
async def test_c16_network_refs_are_never_fetched_http(
    rel: Rel, tmp_path: Path, ref_target: tuple[str, list[str]]
) -> None:
    base, hits = ref_target
    server = ServerProcess.cli(tmp_path, target=_ref_server(tmp_path, base))
    try:
        async with Client(server.url, timeout=10) as client:
            _acceptable(await _list_and_call(client, base, hits))
        rel.verified(4)
    finally:
        server.stop()


@pytest.mark.anyio
async def test_c16_network_refs_are_never_fetched_stdio(
    rel: Rel, tmp_path: Path, ref_target: tuple[str, list[str]]
) -> None:
    base, hits = ref_target
    target = _ref_server(tmp_path, base)
    argv = [sys.executable, "-m", "mcpkit", "serve", str(target), "--state", "memory:"]
    async with Client(argv, cwd=tmp_path, env={"MCPKIT_SEALING_KEYS": "k"}, timeout=10) as client:
        _acceptable(await _list_and_call(client, base, hits))
    rel.verified(4)
