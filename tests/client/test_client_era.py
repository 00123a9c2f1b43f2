"""The client's era object and option groups, without processes.

The era is picked once when connecting (:mod:`mcpkit.client.era`); every difference after
that (framing, headers, recovery, which methods exist) comes from that object, so each is
checked here against a scripted server in both eras.  The option groups are checked as
users write them: flat keyword arguments of ``Client(...)``.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import httpx
import pytest
from clientkit import INITIALIZED, FakeTransport, client_for, legacy_server

from mcpkit.client import (
    Client,
    ClientError,
    ClientOptions,
    HttpClientOptions,
    ServerError,
    SessionExpiredError,
    TimeoutOptions,
)
from mcpkit.client.era import LEGACY, MODERN, pinned, sse_fallback_allowed
from mcpkit.client.errors import VersionNegotiationError
from mcpkit.client.options import ClientSettings
from mcpkit.transports.client_http import HttpTransport
from mcpkit.transports.client_http_era import LEGACY_WIRE, MODERN_WIRE, request_headers, wire_era
from mcpkit.transports.client_stdio import StdioTransport

pytestmark = pytest.mark.anyio

LEGACY_SERVER = legacy_server(ServerError(-32601, "Method not found"))
MODERN_SERVER = legacy_server(None)


def fake(client: Client) -> FakeTransport:
    assert isinstance(client.transport, FakeTransport)
    return client.transport


# --------------------------------------------------------------------------- picked once


async def test_the_era_object_is_picked_once_per_connection() -> None:
    async with client_for(MODERN_SERVER) as modern, client_for(LEGACY_SERVER) as legacy:
        assert modern.session.rules is MODERN and modern.era == "modern"
        assert legacy.session.rules is LEGACY and legacy.era == "legacy"
    assert client_for(MODERN_SERVER).era is None  # not connected yet


def test_a_pinned_choice_skips_the_probe_and_sse_is_legacy_only() -> None:
    assert pinned("auto", "http") is None
    assert pinned("modern", "stdio") is MODERN
    assert pinned("legacy", "http") is LEGACY
    assert pinned("auto", "sse") is LEGACY
    with pytest.raises(VersionNegotiationError, match="HTTP\\+SSE"):
        pinned("modern", "sse")
    assert sse_fallback_allowed("auto") and sse_fallback_allowed("legacy")
    assert not sse_fallback_allowed("modern")


def test_which_methods_exist_is_read_from_the_method_table() -> None:
    for method in ("server/discover", "subscriptions/listen"):
        assert MODERN.offers(method) and not LEGACY.offers(method)
    for method in ("ping", "logging/setLevel", "resources/subscribe"):
        assert LEGACY.offers(method) and not MODERN.offers(method)
    assert MODERN.offers("tools/call") and LEGACY.offers("tools/call")
    assert not MODERN.offers("no/such/method")


# --------------------------------------------------------------------------- framing


async def test_legacy_requests_carry_only_the_callers_meta_and_progress_token() -> None:
    async with client_for(LEGACY_SERVER) as client:
        await client.call_tool("x", meta={"mine": 1})
        method, params = fake(client).sent[-1]
    assert method == "tools/call" and params is not None
    assert set(params["_meta"]) == {"mine", "progressToken"}


async def test_notifications_carry_the_eras_headers() -> None:
    async with client_for(MODERN_SERVER) as modern, client_for(LEGACY_SERVER) as legacy:
        await modern.notify("notifications/x")
        await legacy.notify("notifications/x")
    assert fake(modern).headers[-1] == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "notifications/x",
    }
    assert fake(legacy).headers[-1] is None  # the transport's session headers


async def test_each_era_sends_its_own_methods() -> None:
    roots = [{"uri": "file:///tmp"}]
    async with client_for(LEGACY_SERVER, roots=roots) as client:
        await client.ping()
        await client.set_logging_level("info")
        await client.notify_roots_changed()
        await client.subscribe_resource("data://a")
        with pytest.raises(ClientError, match="server/discover does not exist"):
            await client.discover()
        sent = [method for method, _ in fake(client).sent]
        assert client.capabilities["roots"] == {"listChanged": True}
    assert sent[-4:] == [
        "ping",
        "logging/setLevel",
        "notifications/roots/list_changed",
        "resources/subscribe",
    ]
    async with client_for(MODERN_SERVER, roots=roots, tasks=True) as client:
        before = len(fake(client).sent)
        await client.ping()
        await client.set_logging_level("info")  # goes in each request's _meta instead
        await client.notify_roots_changed()  # modern servers ask for roots each time
        with pytest.raises(ClientError, match=r"use client\.listen"):
            await client.subscribe_resource("data://a")
        assert [method for method, _ in fake(client).sent[before:]] == ["server/discover"]
        assert client.capabilities["roots"] == {}
        assert "extensions" in client.capabilities


# --------------------------------------------------------------------------- recovery


async def test_an_expired_legacy_session_is_initialized_again_once() -> None:
    expire = [True, False]  # the first tools/call finds the session gone, the retry works
    initializes = 0

    async def respond(method: str, params: dict[str, Any]) -> dict[str, Any]:
        nonlocal initializes
        if method == "server/discover":
            raise ServerError(-32601, "Method not found")
        if method == "initialize":
            initializes += 1
            return INITIALIZED
        if expire.pop(0) if expire else True:
            raise SessionExpiredError("HTTP 404")
        return {"content": []}

    async with client_for(respond) as client:
        await client.call_tool("x")
        assert initializes == 2
        with pytest.raises(SessionExpiredError):  # expired again after the new session
            await client.call_tool("x")
    assert initializes == 3


# --------------------------------------------------------------------------- HTTP wire


def test_the_http_era_of_a_message_is_read_off_its_meta() -> None:
    modern = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, "name": "é"}
    assert wire_era(modern) is MODERN_WIRE and wire_era({"name": "t"}) is LEGACY_WIRE
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": modern}
    headers = request_headers(message, {"X": "1"}, {"Mcp-Session-Id": "s"}, {"Mcp-Param-A": "b"})
    assert headers["MCP-Protocol-Version"] == "2026-07-28" and "Mcp-Session-Id" not in headers
    assert headers["Mcp-Method"] == "tools/call" and headers["Mcp-Name"].startswith("=?base64?")
    assert headers["X"] == "1" and headers["Mcp-Param-A"] == "b"
    legacy = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t"}}
    headers = request_headers(legacy, {"X": "1"}, {"Mcp-Session-Id": "s"}, None)
    assert headers["Mcp-Session-Id"] == "s" and "Mcp-Method" not in headers
    assert MODERN_WIRE.resumable("7", "s") is False and LEGACY_WIRE.resumable("7", "s")
    assert not LEGACY_WIRE.resumable(None, "s")


# --------------------------------------------------------------------------- options


def test_flat_keywords_land_in_their_groups() -> None:
    options = ClientOptions.of(timeout=5, headers={"A": "b"}, env={"K": "v"}, tasks=True)
    assert options.timeouts == TimeoutOptions(timeout=5)
    assert options.http.headers == {"A": "b"} and options.process.env == {"K": "v"}
    assert options.features.tasks and options.protocol.era == "auto"
    again = options.replace(era="legacy", timeout=None)
    assert again.protocol.era == "legacy" and again.timeouts.timeout is None
    assert options.timeouts.timeout == 5  # replace copies
    with pytest.raises(TypeError, match="unknown client option 'timout'"):
        ClientOptions.of(timout=5)  # type: ignore[call-arg]  # the typo is the test


def test_client_settings_name_every_option_once() -> None:
    """``ClientSettings`` (the typed keywords of ``Client(...)``) lists exactly the fields
    of the option groups, each with the same annotation, so a new option cannot be
    forgotten by the type checker."""
    groups = dataclasses.fields(ClientOptions)
    hints = typing.get_type_hints(ClientOptions)
    fields = {
        member.name: member.type for g in groups for member in dataclasses.fields(hints[g.name])
    }
    # Both are the source text (``from __future__ import annotations``); the TypedDict
    # keeps it wrapped in a ForwardRef.
    keywords = {
        k: getattr(v, "__forward_arg__", v) for k, v in ClientSettings.__annotations__.items()
    }
    assert keywords == fields


def test_client_keywords_reach_the_transport() -> None:
    auth = httpx.BasicAuth("u", "p")
    client = Client("http://127.0.0.1:9/mcp", timeout=5, headers={"A": "b"}, auth=auth)
    assert isinstance(client.transport, HttpTransport)
    assert client.transport.headers == {"A": "b"} and client.transport.auth is auth
    assert client.options.timeouts.timeout == 5
    assert client.options.http == HttpClientOptions(headers={"A": "b"}, auth=auth)
    stdio = Client("python server.py", options=ClientOptions.of(cwd="/tmp"), shutdown_grace=1)
    assert isinstance(stdio.transport, StdioTransport)
    assert stdio.options.process.cwd == "/tmp" and stdio.options.process.shutdown_grace == 1
    with pytest.raises(TypeError):
        Client("python server.py", no_such_option=1)  # type: ignore[call-arg]  # deliberate
