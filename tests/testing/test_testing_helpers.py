"""The pieces of ``mcpkit.testing`` and typed tool results, each shown to fail when it
should (a schema helper that passes everything, or a responder that never complains,
would make every test that uses them worthless)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest
import scenario_server
from pydantic import BaseModel

from mcpkit import Server
from mcpkit.client import Client, InputRequestError, InvalidResultError, ServerError, ToolError
from mcpkit.client.models import CallToolResult
from mcpkit.testing import (
    ScriptedResponder,
    assert_valid,
    assert_valid_result,
    connect,
    target_of,
)
from mcpkit.testing.schema import REVISIONS

pytestmark = pytest.mark.anyio

TESTS = Path(__file__).resolve().parents[1]
PACKAGE_SPEC = Path(__import__("mcpkit.testing").testing.__file__).parent / "spec"


@pytest.mark.parametrize("revision", REVISIONS)
def test_shipped_schemas_are_the_suites_copies(revision: str) -> None:
    shipped = (PACKAGE_SPEC / revision / "schema.json").read_bytes()
    assert shipped == (TESTS / "spec" / revision / "schema.json").read_bytes()


def test_assert_valid_accepts_good_and_names_what_is_wrong() -> None:
    good = {"content": [{"type": "text", "text": "hi"}], "resultType": "complete"}
    assert_valid_result("tools/call", good)
    assert_valid_result(
        "tools/call", {"content": [{"type": "text", "text": "hi"}]}, "2025-06-18"
    )  # any legacy version: the 2025-11-25 schema
    missing_text = r"(?s)CallToolResult.*\$\.content\[0\].*'text' is a required property"
    with pytest.raises(AssertionError, match=missing_text):
        assert_valid_result("tools/call", {"content": [{"type": "text"}], "resultType": "complete"})
    with pytest.raises(AssertionError, match="not a valid Tool"):
        assert_valid({"name": 3}, "Tool", "2026-07-28")
    with pytest.raises(ValueError, match="no result definition"):
        assert_valid_result("initialize", {}, "2026-07-28")


async def test_responder_fails_loudly_when_the_script_does_not_match() -> None:
    unused = ScriptedResponder(
        elicitation=[{"name": "Ada"}, {"name": "Bo"}], sampling=["first", "second"]
    )
    async with connect(scenario_server.server, **unused.callbacks()) as client:
        result = await client.call_tool("greet")
    assert "Hello, Ada! first" in result["content"][0]["text"]
    assert [kind for kind, _ in unused.requests] == ["elicitation", "sampling"]
    with pytest.raises(AssertionError, match="never asked for"):
        unused.assert_done()

    short = ScriptedResponder(elicitation=[{"name": "Ada"}], sampling=[])
    callbacks = short.callbacks()
    assert set(callbacks) == {"elicitation"}  # no sampling capability declared
    short = ScriptedResponder(elicitation=[{"name": "Ada"}], sampling=[lambda params: "only once"])
    async with connect(scenario_server.server, era="legacy", **short.callbacks()) as client:
        await client.call_tool("greet")
        with pytest.raises((ServerError, InputRequestError)):
            await client.call_tool("greet")  # the second call finds the queues empty
    assert short.unanswered and short.unanswered[0][0] == "elicitation"
    with pytest.raises(AssertionError, match="unanswered: elicitation 'Your name\\?'"):
        short.assert_done()


class Wrong(BaseModel):
    total: int


class SumDict(TypedDict):
    sum: float


@dataclass
class SumData:
    sum: float


async def test_typed_results_and_their_failures() -> None:
    async with connect(scenario_server.server, era="legacy") as client:
        plain = await client.call_tool("add", {"a": 1, "b": 2})
        assert isinstance(plain, CallToolResult) and isinstance(plain, dict)
        assert plain.data == {"sum": 3.0} and plain["structuredContent"] == {"sum": 3.0}
        assert (
            await client.call_tool("add", {"a": 1, "b": 2}, result_type=SumData)
        ).data == SumData(3.0)
        typed: Any = (await client.call_tool("add", {"a": 1, "b": 2}, result_type=SumDict)).data
        assert typed == {"sum": 3.0}
        with pytest.raises(InvalidResultError, match=r"tools/call add: .*not a Wrong.*total"):
            await client.call_tool("add", {"a": 1, "b": 2}, result_type=Wrong)
        text_only = await client.call_tool("divide", {"a": 1, "b": 4}, result_type=float)
        assert text_only.data is None  # no outputSchema, no structured content
        failed = await client.call_tool("divide", {"a": 1, "b": 0}, result_type=float)
        assert failed.is_error and failed.data is None
        with pytest.raises(ToolError) as info:
            await client.call_tool("divide", {"a": 1, "b": 0}, raise_on_error=True)
        assert info.value.tool == "divide"
        assert info.value.content[0]["text"] == "cannot divide by zero"


async def test_connect_refuses_what_it_cannot_do() -> None:
    local = Server("local", "1.0.0")
    with pytest.raises(LookupError, match="not a global of any imported module"):
        target_of(local)
    assert target_of(scenario_server.server).endswith("scenario_server.py:server")
    with pytest.raises(TypeError):
        async with connect("x.py:server", transport="memory"):
            pass
    with pytest.raises(ValueError, match="unknown transport"):
        async with connect(local, transport="carrier-pigeon"):  # type: ignore[arg-type]
            pass


def test_client_accepts_a_server_object_only_as_itself() -> None:
    client = Client(scenario_server.server)
    assert client.transport.kind == "memory"


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_the_servers_lifespan_ends_with_the_connection(transport: str) -> None:
    """In-process transports must not leave the server running past the test (a lazily
    started lifespan would outlive the test's event loop)."""
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        events.append("start")
        yield
        events.append("stop")

    server = Server("life", "1.0.0", lifespan=lifespan)

    @server.tool
    def hello() -> str:
        return "hi"

    async with connect(server, transport=transport) as client:  # type: ignore[arg-type]
        assert (await client.call_tool("hello"))["content"][0]["text"] == "hi"
        assert events == ["start"]
    assert events == ["start", "stop"]


async def test_a_target_string_over_http_runs_mcpkit_serve(tmp_path: Path) -> None:
    target = target_of(scenario_server.server)
    async with connect(target, transport="http", era="legacy") as client:
        assert client.transport.kind == "http"
        assert (await client.call_tool("add", {"a": 1, "b": 1})).data == {"sum": 2.0}
    broken = tmp_path / "broken.py"
    broken.write_text("raise SystemExit('this server cannot start')\n")
    with pytest.raises(RuntimeError, match="this server cannot start"):
        async with connect(f"{broken}:server", transport="http"):
            pass


def test_public_names_of_mcpkit_testing() -> None:
    import mcpkit.testing

    assert set(mcpkit.testing.__all__) == {
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
    }
    for name in mcpkit.testing.__all__:
        assert getattr(mcpkit.testing, name) is not None
