"""With only the OpenTelemetry API (no SDK provider set), the middleware and the client
pass requests through: nothing is recorded, nothing breaks.  A fresh interpreter, since
this test folder installs SDK providers in its own process."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import anyio
from mcpkit import Server
from mcpkit.client import Client
from mcpkit.server.middleware.telemetry import Telemetry
from mcpkit.telemetry import otel

server = Server("s", middleware=[Telemetry()])

@server.tool
def add(a: int, b: int) -> int:
    return a + b

async def main() -> None:
    async with Client(server, telemetry=True) as client:
        result = await client.call_tool("add", {"a": 1, "b": 2})
        assert result["content"][0]["text"] == "3", result
        broken = await client.request("tools/list")
        assert broken["tools"]

assert otel.recording() is False
anyio.run(main)
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
trace.set_tracer_provider(TracerProvider())
assert otel.recording() is True
print("ok")
"""


def test_api_only_is_a_pass_through() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
