"""Test MCP servers the way clients will meet them: in memory, over stdio, over HTTP.

::

    from mcpkit.testing import ScriptedResponder, assert_valid_result, connect

    async def test_greet() -> None:
        user = ScriptedResponder(elicitation=[{"name": "Ada"}])
        async with connect(server, era="legacy", **user.callbacks()) as client:
            result = await client.call_tool("greet")
        assert_valid_result("tools/call", result, client.protocol_version)
        user.assert_done()

Evals (:mod:`mcpkit.testing.evals`, loaded on first use: they bring the host's model
loop): ``await run_eval(server, "Add 2 and 3", expect=expect_call("add", a=2, b=3))``
runs a prompt N times through a model and reports a pass rate;
``assert_catalog_tokens(server, max_tokens=...)`` keeps the tool catalog within a budget.

The pytest plugin (registered as ``mcpkit`` under ``pytest11``; see
:mod:`mcpkit.testing.plugin`) adds an ``mcp_client`` fixture over the ``mcp_server`` a
test suite defines, parametrizable by ``mcp_transport`` and ``mcp_era``.
"""

from typing import TYPE_CHECKING

from .connect import ERAS, TRANSPORTS, connect, serve_http, target_of
from .responder import ScriptedResponder
from .schema import assert_valid, assert_valid_result

if TYPE_CHECKING:
    from .evals import EvalReport, assert_catalog_tokens, expect_call, run_eval

#: Names of :mod:`.evals`, imported when first asked for.
_EVALS = ("EvalReport", "assert_catalog_tokens", "expect_call", "run_eval")


def __getattr__(name: str) -> object:
    if name in _EVALS:
        from . import evals

        return getattr(evals, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ERAS",
    "TRANSPORTS",
    "EvalReport",
    "ScriptedResponder",
    "assert_catalog_tokens",
    "assert_valid",
    "assert_valid_result",
    "connect",
    "expect_call",
    "run_eval",
    "serve_http",
    "target_of",
]
