"""Aggregation behind one front: four upstreams of both eras, namespaced by prefix.

``conf`` is the conformance fixture (both eras), ``alpha`` and ``zeta`` are echo servers of
both eras (``zeta``'s lists have ``ttlMs: 0`` and ``cacheScope: private``), ``beta`` is a
legacy-only echo server.  Checked here: listings merged and namespaced, calls routed by
prefix (clashing names all reachable), merged ``server/discover`` capabilities,
completions routed, ``subscriptions/listen`` fan-in from both eras of upstream, list caching
per the upstream's ``ttlMs``/``cacheScope`` and invalidated by ``list_changed``, W3C trace
context reaching the upstream, and the gateway's stdio front.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import gwkit
import httpx
import pytest
from gwkit import call_tool

from mcpkit.client import Client, prompt_ref, resource_ref
from support.mcp import modern_headers

PREFIXES = ("conf_", "alpha_", "beta_", "zeta_")
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture(scope="module")
def config(log_dir: Path, stack: list[gwkit.Proc]) -> str:
    zeta = gwkit.spawn_upstream("zeta", log_dir, ECHO_TTL_MS="0", ECHO_CACHE_SCOPE="private")
    stack.append(zeta)
    conf, alpha, beta = gwkit.start_upstreams(
        log_dir, ("conf", gwkit.CONFORMANCE), ("alpha",), ("beta", gwkit.ECHO, "--no-modern")
    )
    stack.extend([conf, alpha, beta])
    gwkit.wait_port(zeta)
    return '[gateway]\nstate = "memory:"\n' + "".join(
        gwkit.toml_upstream(p.name, url=p.url, prefix=f"{p.name}_")
        for p in (conf, alpha, beta, zeta)
    )


@pytest.fixture(scope="module")
def gateway(config: str, log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    gw = gwkit.start_gateway("gateway", log_dir, config)
    stack.append(gw)
    return gw


def stats(gateway: gwkit.Proc, upstream: str) -> dict[str, int]:
    counts: dict[str, int] = gwkit.structured(call_tool(gateway, f"{upstream}_stats"))
    return counts


def names(gateway: gwkit.Proc, method: str, member: str, key: str = "name") -> list[str]:
    return [item[key] for item in gwkit.call(gateway.url, method).result[member]]


# ---------------------------------------------------------------------------- listings


def test_tools_are_namespaced_and_routed(gateway: gwkit.Proc) -> None:
    tools = names(gateway, "tools/list", "tools")
    assert all(t.startswith(PREFIXES) for t in tools), tools
    for upstream in ("alpha", "beta", "zeta"):
        assert f"{upstream}_whoami" in tools
        assert call_tool(gateway, f"{upstream}_whoami").text() == upstream
    assert "conf_test_simple_text" in tools
    unknown = call_tool(gateway, "nobody_whoami")
    assert unknown.error["code"] == -32602


def test_prompts_are_namespaced_and_routed(gateway: gwkit.Proc) -> None:
    prompts = names(gateway, "prompts/list", "prompts")
    assert {"alpha_greeting", "beta_greeting", "conf_test_simple_prompt"} <= set(prompts)
    assert all(p.startswith(PREFIXES) for p in prompts), prompts
    got = gwkit.call(
        gateway.url, "prompts/get", {"name": "beta_greeting", "arguments": {"who": "Dee"}}
    )
    assert got.result["messages"][0]["content"]["text"] == "beta says hello to Dee"


def test_resources_and_templates_are_merged_and_routed(gateway: gwkit.Proc) -> None:
    uris = names(gateway, "resources/list", "resources", "uri")
    assert {"echo://alpha/info", "echo://beta/info", "test://static-text"} <= set(uris)
    templates = names(gateway, "resources/templates/list", "resourceTemplates", "uriTemplate")
    assert {"echo://alpha/items/{id}", "echo://beta/items/{id}"} <= set(templates)
    assert "test://template/{id}/data" in templates
    for uri, text in (
        ("echo://beta/info", "info of beta"),
        ("echo://alpha/items/7", "item 7 of alpha"),
        ("test://static-text", "This is the content of the static text resource."),
    ):
        read = gwkit.call(gateway.url, "resources/read", {"uri": uri})
        assert read.result["contents"][0]["text"] == text
    missing = gwkit.call(gateway.url, "resources/read", {"uri": "echo://nobody/info"})
    assert missing.error["code"] == -32602
    session = gwkit.LegacySession(gateway.url)
    try:
        session.initialize()
        legacy = session.request("resources/read", {"uri": "echo://nobody/info"})
        assert legacy.error["code"] == -32002  # what 2025-11-25 clients know
        read = session.request("resources/read", {"uri": "echo://beta/items/9"})
        assert read.result["contents"][0]["text"] == "item 9 of beta"
    finally:
        session.close()


def test_discover_merges_capabilities(gateway: gwkit.Proc) -> None:
    found = gwkit.call(gateway.url, "server/discover").result
    caps = found["capabilities"]
    assert caps["tools"]["listChanged"] is True
    assert caps["prompts"]["listChanged"] is True
    assert caps["resources"] == {"listChanged": True, "subscribe": True}
    assert "completions" in caps
    assert "io.modelcontextprotocol/tasks" in caps["extensions"]  # from conf
    assert {"2026-07-28", "2025-11-25"} <= set(found["supportedVersions"])
    assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpkit-gateway"
    session = gwkit.LegacySession(gateway.url)
    try:
        legacy = session.initialize().result
    finally:
        session.close()
    assert legacy["capabilities"]["tools"]["listChanged"] is True
    assert "extensions" not in legacy["capabilities"]


@pytest.mark.anyio
async def test_completions_go_to_the_right_upstream(gateway: gwkit.Proc) -> None:
    async with Client(gateway.url, era="modern") as client:
        conf = await client.complete(prompt_ref("conf_test_prompt_with_arguments"), "arg1", "pa")
        assert set(conf["completion"]["values"]) == {"paris", "park", "party"}
        for upstream in ("alpha", "beta"):
            got = await client.complete(prompt_ref(f"{upstream}_greeting"), "who", "x")
            assert got["completion"]["values"] == [f"{upstream}-x"]
        by_uri = await client.complete(resource_ref("echo://beta/items/{id}"), "id", "4")
        assert by_uri["completion"]["values"] == ["beta-4"]


# ---------------------------------------------------------------------------- listen fan-in


@asynccontextmanager
async def listen(url: str, **flags: Any) -> AsyncIterator[tuple[dict[str, Any], Any]]:
    """A front ``subscriptions/listen``: yields (acknowledgement, next-notification)."""
    body = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {"notifications": flags, "_meta": gwkit.meta()},
    }
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream(
            "POST",
            url,
            headers=modern_headers(body),
            content=json.dumps(body),
        ) as response,
    ):
        assert response.status_code == 200
        lines = response.aiter_lines()

        async def next_message(method: str | None = None) -> dict[str, Any]:
            """The next message (with ``method``: the next one of that method)."""
            async for line in lines:
                if line.startswith("data:") and line[5:].strip():
                    message: dict[str, Any] = json.loads(line[5:])
                    if method is None or message.get("method") == method:
                        return message
            raise AssertionError("listen stream ended")

        ack = await next_message()
        yield ack, next_message


@pytest.mark.anyio
async def test_listen_fans_in_list_changes_from_both_eras(gateway: gwkit.Proc) -> None:
    async with listen(gateway.url, toolsListChanged=True, promptsListChanged=True) as (
        ack,
        next_message,
    ):
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {
            "toolsListChanged": True,
            "promptsListChanged": True,
        }
        # beta is legacy-only: its change reaches the gateway on its session's GET stream.
        # (First, while nothing else is pending: list_changed does not say who changed.)
        reply = await anyio.to_thread.run_sync(
            lambda: call_tool(gateway, "beta_add_tool", name="from_beta")
        )
        assert reply.text() == "added from_beta"
        with anyio.fail_after(10):
            note = await next_message()
        assert note["method"] == "notifications/tools/list_changed", note
        assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
        # conf speaks 2026-07-28: its changes reach the gateway on its listen stream.
        for trigger, expected in (
            ("conf_test_trigger_prompt_change", "notifications/prompts/list_changed"),
            ("conf_test_trigger_tool_change", "notifications/tools/list_changed"),
        ):
            await anyio.to_thread.run_sync(call_tool, gateway, trigger)
            with anyio.fail_after(10):
                note = await next_message(expected)
            assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
    assert "beta_from_beta" in names(gateway, "tools/list", "tools")
    assert call_tool(gateway, "beta_from_beta").text() == "from_beta from beta"


@pytest.mark.anyio
async def test_listen_fans_in_updates_of_watched_resources_from_both_eras(
    gateway: gwkit.Proc,
) -> None:
    """A front listen stream's ``resourceSubscriptions`` make the gateway subscribe at the
    upstream serving each URI: a modern one through its own listen stream, a legacy one
    with ``resources/subscribe``; their updates come back to the front stream."""
    watched = ["echo://alpha/info", "echo://beta/info"]
    async with listen(gateway.url, resourceSubscriptions=watched) as (ack, next_message):
        assert ack["params"]["notifications"] == {"resourceSubscriptions": watched}
        for upstream, uri in (("alpha", watched[0]), ("beta", watched[1])):
            arrived = anyio.Event()

            async def keep_touching(u: str = upstream, r: str = uri, done: Any = arrived) -> None:
                while not done.is_set():  # the upstream subscription is set up asynchronously
                    await anyio.to_thread.run_sync(lambda: call_tool(gateway, f"{u}_touch", uri=r))
                    with anyio.move_on_after(0.3):
                        await done.wait()

            async with anyio.create_task_group() as tg:
                tg.start_soon(keep_touching)
                with anyio.fail_after(15):
                    note = await next_message("notifications/resources/updated")
                    while note["params"]["uri"] != uri:  # (repeats for the one before)
                        note = await next_message("notifications/resources/updated")
                arrived.set()
            assert note["params"]["uri"] == uri
            assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
        # an update of a resource nobody watches is not forwarded to this stream
        await anyio.to_thread.run_sync(
            lambda: call_tool(gateway, "alpha_touch", uri="echo://alpha/items/9")
        )
        await anyio.to_thread.run_sync(lambda: call_tool(gateway, "alpha_touch", uri=watched[0]))
        with anyio.fail_after(10):
            while True:  # only watched URIs arrive; the unwatched one never does
                note = await next_message("notifications/resources/updated")
                assert note["params"]["uri"] in watched
                if note is not None and note["params"]["uri"] == watched[0]:
                    break


@pytest.mark.anyio
async def test_legacy_front_gets_list_changes_on_its_get_stream(gateway: gwkit.Proc) -> None:
    changed = anyio.Event()

    def seen(note: Any) -> None:
        if note.method == "notifications/prompts/list_changed":
            changed.set()

    async with Client(gateway.url, era="legacy", on_notification=seen) as client:
        assert client.era == "legacy"
        for _ in range(5):  # the GET stream opens right after initialize, asynchronously
            await client.call_tool("conf_test_trigger_prompt_change")
            with anyio.move_on_after(2):
                await changed.wait()
            if changed.is_set():
                break
    assert changed.is_set()


@pytest.mark.anyio
async def test_legacy_front_subscription_reaches_the_upstream(gateway: gwkit.Proc) -> None:
    uri = "echo://alpha/items/42"
    updated = anyio.Event()

    def seen(note: Any) -> None:
        if note.method == "notifications/resources/updated" and note.params.get("uri") == uri:
            updated.set()

    async with Client(gateway.url, era="legacy", on_notification=seen) as client:
        await client.subscribe_resource(uri)
        for _ in range(30):  # the upstream subscription is set up asynchronously
            await client.call_tool("alpha_touch", {"uri": uri})
            with anyio.move_on_after(0.5):
                await updated.wait()
            if updated.is_set():
                break
        assert updated.is_set()
        await client.unsubscribe_resource(uri)


# ---------------------------------------------------------------------------- caching


def _wait_for_tool(gateway: gwkit.Proc, name: str) -> None:
    deadline = time.monotonic() + 10
    while name not in names(gateway, "tools/list", "tools"):
        assert time.monotonic() < deadline, f"{name} never appeared in tools/list"
        time.sleep(0.1)


def test_lists_are_cached_for_the_upstream_ttl_and_invalidated_by_list_changed(
    gateway: gwkit.Proc,
) -> None:
    names(gateway, "tools/list", "tools")
    before = stats(gateway, "alpha")["tools/list"]
    for _ in range(3):
        names(gateway, "tools/list", "tools")
    assert stats(gateway, "alpha")["tools/list"] == before  # alpha's ttlMs is 60 s
    assert call_tool(gateway, "alpha_add_tool", name="fresh").text() == "added fresh"
    _wait_for_tool(gateway, "alpha_fresh")  # alpha's listen stream invalidated the cache
    assert stats(gateway, "alpha")["tools/list"] == before + 1


def test_ttl_zero_and_private_scope_are_honoured(gateway: gwkit.Proc) -> None:
    before = stats(gateway, "zeta")["tools/list"]
    listing = gwkit.call(gateway.url, "tools/list").result
    gwkit.call(gateway.url, "tools/list")
    assert stats(gateway, "zeta")["tools/list"] == before + 2  # ttlMs 0: never reused
    # The front never promises more than its upstreams did.
    assert listing["ttlMs"] == 0
    assert listing["cacheScope"] == "private"
    prompts = gwkit.call(gateway.url, "prompts/list").result
    assert prompts["ttlMs"] == 0 and prompts["cacheScope"] == "private"


# ---------------------------------------------------------------------------- trace context


@pytest.mark.parametrize("upstream", ["alpha", "beta"])
def test_trace_context_reaches_the_upstream(gateway: gwkit.Proc, upstream: str) -> None:
    trace = {"traceparent": TRACEPARENT, "tracestate": "vendor=1", "baggage": "k=v"}
    reply = gwkit.call(
        gateway.url, "tools/call", {"name": f"{upstream}_echo_meta"}, extra_meta=trace
    )
    seen = gwkit.structured(reply)
    assert seen["server"] == upstream
    assert seen["era"] == ("modern" if upstream == "alpha" else "legacy")
    for key, value in trace.items():
        assert seen["meta"].get(key) == value, seen
    # The front client's identity stays at the gateway; the upstream sees the gateway's.
    assert seen["meta"].get("io.modelcontextprotocol/clientInfo", {}).get("name") != (
        "gateway-test"
    )


def test_trace_context_from_a_legacy_front_client(gateway: gwkit.Proc) -> None:
    session = gwkit.LegacySession(gateway.url)
    try:
        session.initialize()
        reply = session.request(
            "tools/call", {"name": "alpha_echo_meta", "_meta": {"traceparent": TRACEPARENT}}
        )
    finally:
        session.close()
    assert gwkit.structured(reply)["meta"].get("traceparent") == TRACEPARENT


# ---------------------------------------------------------------------------- stdio front


@pytest.mark.anyio
async def test_stdio_front(config: str, log_dir: Path) -> None:
    path = log_dir / "stdio-gateway.toml"
    path.write_text(config)
    command = [sys.executable, "-m", "mcpkit", "gateway", str(path), "--stdio"]
    async with Client(command, cwd=str(gwkit.ROOT)) as client:
        tools = {t["name"] for t in await client.list_tools()}
        assert {"alpha_whoami", "beta_whoami", "conf_test_simple_text"} <= tools
        result = await client.call_tool("beta_whoami")
        assert result["content"][0]["text"] == "beta"


# ---------------------------------------------------------------------------- x-mcp-header


def test_param_headers_reach_the_upstream_without_a_prior_listing(gateway: gwkit.Proc) -> None:
    """A client that knows the tool calls it straight away, even right after the gateway
    dropped its view of the tools (an upstream's list changed)."""
    call_tool(gateway, "conf_test_trigger_tool_change")
    time.sleep(0.3)  # let the list_changed reach the gateway
    reply = gwkit.call(
        gateway.url,
        "tools/call",
        {"name": "conf_test_x_mcp_header", "arguments": {"region": "eu-west"}},
        headers={"mcp-param-region": "eu-west"},
    )
    assert reply.text() == "region=eu-west"
    # And the gateway checks the header itself, as the upstream would.
    spoofed = gwkit.call(
        gateway.url,
        "tools/call",
        {"name": "conf_test_x_mcp_header", "arguments": {"region": "eu-west"}},
        headers={"mcp-param-region": "us-east"},
    )
    assert spoofed.status == 400 and spoofed.error["code"] == -32020
