"""A 2024-11-05 HTTP+SSE server as a gateway upstream: the official SDK's ``sse_app()``.

The upstream's ``url`` is its ``/sse`` endpoint; the gateway's client finds the old
transport by the spec's fallback (POST ``initialize`` refused with 405, then GET for the
``endpoint`` event) and a 2026-07-28 client of the gateway calls its tools.
"""

from __future__ import annotations

from pathlib import Path

import gwkit
import pytest

from mcpkit.client import Client
from support.sdk_venv import sdk_python

SDK_SERVER = gwkit.ROOT / "tests" / "client" / "peers" / "sdk_server.py"


@pytest.fixture(scope="module")
def gateway(log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    port = gwkit.free_port()
    cmd = [str(sdk_python()), str(SDK_SERVER), "--sse", "--port", str(port)]
    upstream = gwkit._spawn("sdk-sse", cmd, log_dir, {}, port)
    stack.append(upstream)
    gwkit.wait_port(upstream)
    config = '[gateway]\nstate = "memory:"\n' + gwkit.toml_upstream(
        "old", url=f"http://127.0.0.1:{port}/sse", prefix="old_"
    )
    gw = gwkit.start_gateway("gateway", log_dir, config)
    stack.append(gw)
    return gw


@pytest.mark.anyio
async def test_a_modern_client_calls_an_http_sse_upstream_through_the_gateway(
    gateway: gwkit.Proc,
) -> None:
    async with Client(gateway.url, era="modern") as client:
        names = {tool["name"] for tool in await client.list_tools()}
        assert {"old_add", "old_shout"} <= names
        result = await client.call_tool("old_shout", {"text": "through"})
        assert result["content"][0]["text"] == "THROUGH"
        added = await client.call_tool("old_add", {"a": 20, "b": 22})
        assert added["content"][0]["text"] == "42"
