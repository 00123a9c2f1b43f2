"""Test MCP servers the way clients will meet them: in memory, over stdio, over HTTP.

::

    from mcpkit.testing import ScriptedResponder, assert_valid_result, connect

    async def test_greet() -> None:
        user = ScriptedResponder(elicitation=[{"name": "Ada"}])
        async with connect(server, era="legacy", **user.callbacks()) as client:
            result = await client.call_tool("greet")
        assert_valid_result("tools/call", result, client.protocol_version)
        user.assert_done()

The pytest plugin (registered as ``mcpkit`` under ``pytest11``; see
:mod:`mcpkit.testing.plugin`) adds an ``mcp_client`` fixture over the ``mcp_server`` a
test suite defines, parametrizable by ``mcp_transport`` and ``mcp_era``.
"""

from .connect import ERAS, TRANSPORTS, connect, serve_http, target_of
from .responder import ScriptedResponder
from .schema import assert_valid, assert_valid_result

__all__ = [
    "ERAS",
    "TRANSPORTS",
    "ScriptedResponder",
    "assert_valid",
    "assert_valid_result",
    "connect",
    "serve_http",
    "target_of",
]
