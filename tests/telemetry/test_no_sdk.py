"""With only the OpenTelemetry API (no SDK provider set), the middleware and the client
pass requests through: nothing is recorded, nothing breaks; an SDK set up later traces
every call from then on, without the middleware changing the server it runs in.  A fresh
interpreter, since this test folder installs SDK providers in its own process."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import anyio
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.server.middleware.telemetry import Telemetry
from mcpkit.telemetry import otel

server = Server("s", middleware=[Telemetry()])

@server.tool
def add(a: int, b: int) -> int:
    return a + b

exporter = InMemorySpanExporter()

def served() -> list[str]:
    return [s.name for s in exporter.get_finished_spans() if s.kind == trace.SpanKind.SERVER]

async def main() -> None:
    async with Client(server, telemetry=True) as client:
        result = await client.call_tool("add", {"a": 1, "b": 2})
        assert result["content"][0]["text"] == "3", result
        assert (await client.request("tools/list"))["tools"]
        # An SDK set up after the server was built: every later call is traced, and the
        # server is left as it was (its chains, its attributes).
        chains, attributes = dict(server._chains), dict(vars(server))
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        assert otel.recording() is False  # looked at again at most once a second
        otel.recheck()
        assert otel.recording() is True
        for n in range(3):
            result = await client.call_tool("add", {"a": n, "b": 1})
            assert result["content"][0]["text"] == str(n + 1), result
        assert served() == ["tools/call add"] * 3, served()
        assert server._chains == chains
        assert {k: v for k, v in vars(server).items() if k in attributes} == attributes

assert otel.recording() is False
anyio.run(main)
print("ok")
"""


def test_api_only_is_a_pass_through() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
