"""mcpkit's client fixture for the official MCP conformance harness (client scenarios).

The harness starts a mock server per scenario and runs ``python client.py <url>`` with
``MCP_CONFORMANCE_SCENARIO`` (plus ``MCP_CONFORMANCE_PROTOCOL_VERSION`` and, for some
scenarios, ``MCP_CONFORMANCE_CONTEXT``).  This program does what each scenario expects,
using only the public ``mcpkit.client`` API, and exits 0 on success.

Era: the harness's protocol version decides.  ``2026-07-28`` runs use ``era="auto"`` (the
probe with ``server/discover`` finds the modern mock), except ``json-schema-ref-no-deref``
whose mock hands everything but ``server/discover`` to a handshake-era SDK, so it gets the
legacy handshake; ``2025-11-25`` runs use the legacy handshake.

Authorization scenarios (``auth/*``) belong to a later issue: they exit 2, saying so.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mcpkit.client import Client, ClientError, CreateMessageResult, ElicitResult, Root
from mcpkit.types.versions import EraChoice

Scenario = Callable[[str], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}
PROTOCOL_VERSION = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "")

log = logging.getLogger("conformance-client")


def scenario(name: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        SCENARIOS[name] = fn
        return fn

    return register


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


def era() -> EraChoice:
    return "auto" if PROTOCOL_VERSION >= "2026-07-28" else "legacy"


# --------------------------------------------------------------------------- callbacks


def schema_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """Every property's ``default`` (SEP-1034: a client should pre-fill them)."""
    props = schema.get("properties") or {}
    return {
        name: prop["default"]
        for name, prop in props.items()
        if isinstance(prop, dict) and "default" in prop
    }


async def accept_with_defaults(params: dict[str, Any]) -> ElicitResult:
    schema = params.get("requestedSchema") or {}
    content = schema_defaults(schema)
    for name, prop in (schema.get("properties") or {}).items():
        if name not in content and isinstance(prop, dict) and prop.get("type") == "boolean":
            content[name] = True  # e.g. "confirmed": the user confirms
    return {"action": "accept", "content": content}


async def sample(params: dict[str, Any]) -> CreateMessageResult:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "stub answer"},
        "model": "conformance-stub",
        "stopReason": "endTurn",
    }


ROOTS: list[Root] = [{"uri": "file:///tmp/conformance", "name": "conformance"}]


def stub_arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Plausible values for a tool's required arguments."""
    schema = tool.get("inputSchema") or {}
    props = schema.get("properties") or {}
    values: dict[Any, Any] = {
        "string": "x",
        "integer": 1,
        "number": 1,
        "boolean": True,
        "array": [],
        "object": {},
    }
    return {
        name: values.get((props.get(name) or {}).get("type"), "x")
        for name in schema.get("required") or []
    }


# --------------------------------------------------------------------------- scenarios


@scenario("initialize")
async def initialize(url: str) -> None:
    async with Client(url, era=era()) as client:
        await client.list_tools()


@scenario("tools_call")
async def tools_call(url: str) -> None:
    async with Client(url, era=era()) as client:
        await client.list_tools()
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        log.info("add_numbers -> %s", result.get("content"))


@scenario("elicitation-sep1034-client-defaults")
async def elicitation_defaults(url: str) -> None:
    async with Client(url, era=era(), elicitation=accept_with_defaults) as client:
        await client.list_tools()
        await client.call_tool("test_client_elicitation_defaults", {})


@scenario("sse-retry")
async def sse_retry(url: str) -> None:
    async with Client(url, era=era()) as client:
        await client.list_tools()
        result = await client.call_tool("test_reconnection", {})
        log.info("test_reconnection -> %s", result.get("content"))


@scenario("request-metadata")
async def request_metadata(url: str) -> None:
    async with Client(
        url, era=era(), elicitation=accept_with_defaults, sampling=sample, roots=ROOTS
    ) as client:
        await client.list_tools()
        await client.call_tool("add_numbers", {"a": 5, "b": 3})


@scenario("sep-2322-client-request-state")
async def request_state(url: str) -> None:
    async with Client(url, era=era(), elicitation=accept_with_defaults) as client:
        await client.list_tools()
        for name in (
            "test_mrtr_echo_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_state",
            "test_mrtr_no_result_type",
        ):
            result = await client.call_tool(name, {})
            log.info("%s -> %s", name, result.get("content"))


@scenario("http-standard-headers")
async def standard_headers(url: str) -> None:
    async with Client(url, era=era()) as client:
        for tool in await client.list_tools():
            await client.call_tool(tool["name"], stub_arguments(dict(tool)))
        for resource in await client.list_resources():
            await client.read_resource(resource["uri"])
        for prompt in await client.list_prompts():
            await client.get_prompt(prompt["name"])


@scenario("http-custom-headers")
async def custom_headers(url: str) -> None:
    async with Client(url, era=era()) as client:
        await client.list_tools()
        for call in context().get("toolCalls", []):
            await client.call_tool(call["name"], call.get("arguments") or {})


@scenario("http-invalid-tool-headers")
async def invalid_tool_headers(url: str) -> None:
    async with Client(url, era=era()) as client:
        tools = await client.list_tools()  # tools with invalid x-mcp-header are dropped
        log.info("kept %s, dropped %s", [t["name"] for t in tools], sorted(client.dropped_tools))
        for tool in tools:
            await client.call_tool(tool["name"], stub_arguments(dict(tool)))


@scenario("json-schema-ref-no-deref")
async def ref_no_deref(url: str) -> None:
    async with Client(url, era="legacy") as client:
        await client.list_tools()


@scenario("json-schema-2020-12-preservation")
async def schema_preservation(url: str) -> None:
    async with Client(url, era=era()) as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
        focal = tools["json_schema_2020_12_tool"]
        await client.call_tool("json_schema_echo", {"schema": focal.get("inputSchema")})


# --------------------------------------------------------------------------- main


def main() -> int:
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(sys.argv) < 2:
        print(
            "usage: client.py <server-url>  (MCP_CONFORMANCE_SCENARIO selects the scenario)",
            file=sys.stderr,
        )
        return 2
    url = sys.argv[-1]
    if name.startswith("auth/"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from auth_client import main as auth_main

        return int(auth_main(sys.argv) or 0)
    run = SCENARIOS.get(name)
    if run is None:
        print(f"unknown scenario {name!r}; known: {', '.join(sorted(SCENARIOS))}", file=sys.stderr)
        return 2
    try:
        anyio.run(run, url)
    except ClientError as exc:
        print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
