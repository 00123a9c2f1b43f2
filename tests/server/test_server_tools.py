"""Tools in-process: schemas from type hints, argument validation, errors, structured output
and content blocks.  Every result is validated against the official schema."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel, Field

from mcpkit import (
    Audio,
    Context,
    EmbeddedResource,
    Image,
    McpError,
    ResourceLink,
    Server,
    Text,
    ToolError,
    ToolResult,
)
from support.inproc import call, call_error, legacy, text_of

pytestmark = pytest.mark.anyio


class Point(BaseModel):
    x: float
    y: float = 0.0


class Weather(TypedDict):
    city: str
    celsius: float


@dataclass
class Reading:
    sensor: str
    values: list[int]


class Report(BaseModel):
    title: str
    pages: int = 1


def make_server() -> Server:
    server = Server("tools-under-test", "1.2.3")

    @server.tool
    def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        return a + b

    @server.tool
    def describe(
        name: Annotated[str, Field(description="Who to describe")],
        point: Point,
        tags: list[str] | None = None,
        ctx: Context | None = None,
    ) -> str:
        return f"{name}@{point.x},{point.y} tags={tags} ctx={ctx is not None}"

    @server.tool
    def weather(city: str) -> Weather:
        return {"city": city, "celsius": 21.5}

    @server.tool
    def reading() -> Reading:
        return Reading("s1", [1, 2])

    @server.tool
    def report() -> Report:
        return Report(title="T")

    @server.tool
    def mapping() -> dict[str, int]:
        return {"a": 1}

    @server.tool
    def count() -> int:
        return 7

    @server.tool(structured_output=True)
    def wrapped() -> int:
        return 7

    @server.tool(structured_output=True)
    def wrapped_list() -> list[str]:
        return ["a", "b"]

    @server.tool
    def fails_politely() -> str:
        raise ToolError("the thing you asked for is not there")

    @server.tool
    def crashes() -> str:
        raise RuntimeError("kaboom")

    @server.tool
    def protocol_error() -> str:
        raise McpError(-32602, "protocol-level refusal", {"why": "test"})

    @server.tool
    async def async_tool(ctx: Context) -> str:
        return f"async era={ctx.era}"

    @server.tool(
        name="renamed",
        title="Nice Title",
        description="explicit description",
        annotations={"readOnlyHint": True},
    )
    def original_name() -> str:
        return "ok"

    return server


@pytest.fixture
def server() -> Server:
    return make_server()


async def tools_by_name(server: Server) -> dict[str, dict[str, Any]]:
    result = await call(server, "tools/list")
    return {tool["name"]: tool for tool in result["tools"]}


# --------------------------------------------------------------------------- schema


async def test_schema_required_optional_and_defaults(server: Server) -> None:
    tool = (await tools_by_name(server))["add"]
    assert tool["description"] == "Add two integers."
    schema = tool["inputSchema"]
    assert schema["type"] == "object"
    assert schema["properties"]["a"] == {"type": "integer"}
    assert schema["properties"]["b"]["type"] == "integer"
    assert schema["properties"]["b"]["default"] == 2
    assert schema["required"] == ["a"]


async def test_schema_descriptions_models_and_context_hidden(server: Server) -> None:
    schema = (await tools_by_name(server))["describe"]["inputSchema"]
    assert set(schema["properties"]) == {"name", "point", "tags"}  # ctx is not exposed
    assert schema["properties"]["name"]["description"] == "Who to describe"
    assert sorted(schema["required"]) == ["name", "point"]
    assert "title" not in schema  # pydantic noise removed


async def test_model_parameter_is_inlined_without_ref(server: Server) -> None:
    schema = (await tools_by_name(server))["describe"]["inputSchema"]
    assert "$ref" not in json.dumps(schema)


async def test_explicit_metadata(server: Server) -> None:
    tool = (await tools_by_name(server))["renamed"]
    assert tool["title"] == "Nice Title"
    assert tool["description"] == "explicit description"
    assert tool["annotations"] == {"readOnlyHint": True}
    assert "original_name" not in await tools_by_name(server)


async def test_tools_are_listed_in_registration_order(server: Server) -> None:
    names = list(await tools_by_name(server))
    assert names[:3] == ["add", "describe", "weather"]


# --------------------------------------------------------------------------- calling


async def test_call_validates_and_coerces(server: Server) -> None:
    result = await call(server, "tools/call", {"name": "add", "arguments": {"a": 40}})
    assert text_of(result) == "42"
    assert "isError" not in result
    result = await call(
        server, "tools/call", {"name": "describe", "arguments": {"name": "n", "point": {"x": 1}}}
    )
    assert text_of(result) == "n@1.0,0.0 tags=None ctx=True"


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({}, ["a", "required"]),
        ({"a": "not a number"}, ["a", "integer"]),
        ({"a": 1, "b": [1]}, ["b"]),
    ],
)
async def test_argument_errors_are_tool_errors_not_protocol_errors(
    server: Server, arguments: dict[str, Any], words: list[str]
) -> None:
    result = await call(server, "tools/call", {"name": "add", "arguments": arguments})
    assert result["isError"] is True
    text = text_of(result)
    assert "add" in text
    for word in words:
        assert word in text.lower()


async def test_nested_model_argument_errors(server: Server) -> None:
    result = await call(
        server, "tools/call", {"name": "describe", "arguments": {"name": "n", "point": {"y": 1}}}
    )
    assert result["isError"] is True
    assert "point.x" in text_of(result)


async def test_unknown_tool_is_invalid_params(server: Server) -> None:
    err = await call_error(server, "tools/call", {"name": "nope"}, code=-32602)
    assert "nope" in err.message


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"name": 5},
        {"name": ["add"]},
        {"name": "add", "arguments": [1]},
        {"name": "add", "arguments": "a=1"},
    ],
)
async def test_malformed_call_params_are_invalid_params(
    server: Server, params: dict[str, Any]
) -> None:
    await call_error(server, "tools/call", params, code=-32602)


async def test_tool_error_and_exceptions_become_is_error(server: Server) -> None:
    polite = await call(server, "tools/call", {"name": "fails_politely"})
    assert polite["isError"] is True
    assert text_of(polite) == "the thing you asked for is not there"
    crash = await call(server, "tools/call", {"name": "crashes"})
    assert crash["isError"] is True
    assert "kaboom" in text_of(crash) and "crashes" in text_of(crash)


async def test_mcp_error_from_a_tool_is_a_protocol_error(server: Server) -> None:
    err = await call_error(server, "tools/call", {"name": "protocol_error"}, code=-32602)
    assert err.data == {"why": "test"}


async def test_async_tools_and_context(server: Server) -> None:
    result = await call(server, "tools/call", {"name": "async_tool"})
    assert text_of(result) == "async era=modern"
    result = await call(server, "tools/call", {"name": "async_tool"}, legacy())
    assert text_of(result) == "async era=legacy"


# --------------------------------------------------------------------------- structured output


@pytest.mark.parametrize(
    ("name", "structured", "schema_props"),
    [
        ("weather", {"city": "Oslo", "celsius": 21.5}, {"city", "celsius"}),
        ("reading", {"sensor": "s1", "values": [1, 2]}, {"sensor", "values"}),
        ("report", {"title": "T", "pages": 1}, {"title", "pages"}),
        ("mapping", {"a": 1}, None),
        ("wrapped", {"result": 7}, {"result"}),
        ("wrapped_list", {"result": ["a", "b"]}, {"result"}),
    ],
)
async def test_structured_output(
    server: Server, name: str, structured: dict[str, Any], schema_props: set[str] | None
) -> None:
    tool = (await tools_by_name(server))[name]
    output_schema = tool["outputSchema"]
    assert output_schema["type"] == "object"
    if schema_props is not None:
        assert set(output_schema["properties"]) == schema_props
    arguments = {"city": "Oslo"} if name == "weather" else {}
    result = await call(server, "tools/call", {"name": name, "arguments": arguments})
    assert result["structuredContent"] == structured
    # the same data is serialized into a text block for clients that ignore structure
    assert json.loads(text_of(result)) == structured
    import jsonschema

    jsonschema.validate(result["structuredContent"], output_schema)


async def test_plain_int_return_stays_text(server: Server) -> None:
    tool = (await tools_by_name(server))["count"]
    assert "outputSchema" not in tool
    result = await call(server, "tools/call", {"name": "count"})
    assert text_of(result) == "7"
    assert "structuredContent" not in result


async def test_structured_output_on_the_legacy_era(server: Server) -> None:
    result = await call(
        server, "tools/call", {"name": "weather", "arguments": {"city": "X"}}, legacy()
    )
    assert result["structuredContent"] == {"city": "X", "celsius": 21.5}
    assert "resultType" not in result


# --------------------------------------------------------------------------- content types

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def content_server() -> Server:
    server = Server("content")

    @server.tool
    def image() -> Image:
        return Image(PNG, "image/png")

    @server.tool
    def audio() -> Audio:
        return Audio(b"RIFF....WAVE", "audio/wav")

    @server.tool
    def embedded() -> EmbeddedResource:
        return EmbeddedResource("test://doc", text="inline", mime_type="text/plain")

    @server.tool
    def embedded_blob() -> EmbeddedResource:
        return EmbeddedResource(
            "test://bin", blob=b"\x00\x01", mime_type="application/octet-stream"
        )

    @server.tool
    def link() -> ResourceLink:
        return ResourceLink(
            "test://doc", "doc", description="a doc", mime_type="text/plain", size=6
        )

    @server.tool
    def mixed() -> list[Any]:
        return [
            Text("t", annotations={"audience": ["user"]}),
            {"type": "text", "text": "raw"},
            Image(PNG),
        ]

    @server.tool
    def explicit() -> ToolResult:
        return ToolResult([Text("see data")], structured={"k": [1, 2]})

    @server.tool
    def explicit_error() -> ToolResult:
        return ToolResult("nope", is_error=True)

    @server.tool
    def nothing() -> None:
        return None

    @server.tool
    def raw_result() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "passed through"}], "isError": False}

    return server


async def test_image_and_audio_blocks() -> None:
    server = content_server()
    image = (await call(server, "tools/call", {"name": "image"}))["content"]
    assert image == [
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}
    ]
    audio = (await call(server, "tools/call", {"name": "audio"}))["content"]
    assert audio[0]["type"] == "audio" and audio[0]["mimeType"] == "audio/wav"
    assert base64.b64decode(audio[0]["data"]) == b"RIFF....WAVE"


async def test_embedded_resources_and_links() -> None:
    server = content_server()
    embedded = (await call(server, "tools/call", {"name": "embedded"}))["content"]
    assert embedded == [
        {
            "type": "resource",
            "resource": {"uri": "test://doc", "mimeType": "text/plain", "text": "inline"},
        }
    ]
    blob = (await call(server, "tools/call", {"name": "embedded_blob"}))["content"][0]
    assert base64.b64decode(blob["resource"]["blob"]) == b"\x00\x01"
    link = (await call(server, "tools/call", {"name": "link"}))["content"]
    assert link == [
        {
            "type": "resource_link",
            "uri": "test://doc",
            "name": "doc",
            "description": "a doc",
            "mimeType": "text/plain",
            "size": 6,
        }
    ]


async def test_mixed_content_and_tool_result() -> None:
    server = content_server()
    mixed = (await call(server, "tools/call", {"name": "mixed"}))["content"]
    assert [b["type"] for b in mixed] == ["text", "text", "image"]
    assert mixed[0]["annotations"] == {"audience": ["user"]}
    explicit = await call(server, "tools/call", {"name": "explicit"})
    assert explicit["content"] == [{"type": "text", "text": "see data"}]
    assert explicit["structuredContent"] == {"k": [1, 2]}
    error = await call(server, "tools/call", {"name": "explicit_error"})
    assert error["isError"] is True and text_of(error) == "nope"
    assert (await call(server, "tools/call", {"name": "nothing"}))["content"] == []
    raw = await call(server, "tools/call", {"name": "raw_result"})
    assert raw["content"] == [{"type": "text", "text": "passed through"}]


async def test_modern_results_carry_result_type_and_server_info() -> None:
    server = content_server()
    result = await call(server, "tools/call", {"name": "image"})
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "content",
        "version": "0.1.0",
    }


async def test_server_info_survives_a_tool_meta() -> None:
    server = Server("meta")

    @server.tool
    def tagged() -> ToolResult:
        return ToolResult("x", meta={"example.com/trace": "t1"})

    result = await call(server, "tools/call", {"name": "tagged"})
    assert result["_meta"]["example.com/trace"] == "t1"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "meta"


def mismatched_server() -> Server:
    server = Server("mismatch")

    @server.tool
    def wrong_types() -> Weather:
        return {"city": 5, "celsius": "warm"}  # type: ignore[typeddict-item]

    @server.tool
    def missing_report() -> Report:
        return None  # type: ignore[return-value]

    return server


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic's serializer warning
async def test_structured_content_always_conforms_to_the_output_schema() -> None:
    import jsonschema

    server = mismatched_server()
    tools = {t["name"]: t for t in (await call(server, "tools/list"))["tools"]}
    result = await call(server, "tools/call", {"name": "wrong_types"})
    if not result.get("isError"):
        jsonschema.validate(result["structuredContent"], tools["wrong_types"]["outputSchema"])


async def test_structured_tool_returning_none_is_schema_valid_on_legacy() -> None:
    await call(mismatched_server(), "tools/call", {"name": "missing_report"}, legacy())
