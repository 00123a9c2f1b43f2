"""An upstream whose answer never ends: the gateway stops reading at ``max_result_bytes``.

The upstream is a real mcpkit server on uvicorn behind :class:`support.flood.Flood`, which
answers a ``tools/call`` of ``flood`` with an SSE ``data:`` line it keeps extending in
chunks and never finishes, and records how much it managed to send.  The gateway (a real
``mcpkit gateway`` process) measures the answer while it reads it: the caller gets a
JSON-RPC error with its own id naming the cap, the upstream sees its connection closed
after about the cap, and the gateway serves the next call.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gwkit
import pytest

from support.flood import Flood, flooded_upstream
from support.servers import ThreadServer

CAP = 1024 * 1024  # the gateway's max_result_bytes
SENT_CAP = 32 * CAP  # what the upstream sends when nobody stops it
BOUND = 10 * CAP


@pytest.fixture(scope="module")
def flooded(log_dir: Path, stack: list[gwkit.Proc]) -> Iterator[tuple[gwkit.Proc, Flood]]:
    flood = Flood("sse", cap=SENT_CAP, inner=flooded_upstream())
    with ThreadServer(flood, lifespan="on") as upstream:
        config = f'[gateway]\nstate = "memory:"\nmax_result_bytes = {CAP}\n' + gwkit.toml_upstream(
            "f", url=upstream.url, prefix="f_"
        )
        gateway = gwkit.start_gateway("gw-flood", log_dir, config)
        stack.append(gateway)
        yield gateway, flood
        gateway.stop()


def _abandoned(flood: Flood, before: int) -> None:
    assert flood.ended.wait(30), "the flood did not end"
    flood.ended.clear()
    assert flood.sent - before < BOUND, f"the upstream sent {flood.sent - before} bytes"
    assert flood.abandoned >= 1  # the gateway closed the connection, mid-line


def _too_large(body: dict[str, Any]) -> None:
    assert isinstance(body.get("id"), int), body  # an answer to the caller's own request
    error = body["error"]
    assert "too large" in error["message"] and "max_result_bytes" in error["message"]
    assert error["data"]["limit"] == CAP


def test_a_modern_caller_gets_an_error_and_the_gateway_goes_on(
    flooded: tuple[gwkit.Proc, Flood],
) -> None:
    gateway, flood = flooded
    for attempt in range(2):  # the gateway stays up, and cuts the next flood the same way
        before = flood.sent
        reply = gwkit.call_tool(gateway, "f_flood")
        _abandoned(flood, before)
        _too_large(reply.body)
        assert gwkit.call_tool(gateway, "f_hello", name=f"after {attempt}").text() == (
            f"hello after {attempt}"
        )
