"""Typed elicitation on both eras: ``ctx.elicit("...", Type)`` sends the restricted schema
the spec allows and answers Accepted(typed data) / Declined / Cancelled."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from mcpkit import Context, Server
from mcpkit.server.elicitation import Accepted, Declined, elicitation_schema
from support.inproc import CollectingExchange, call, call_error, legacy, modern, text_of

pytestmark = pytest.mark.anyio

FORM: dict[str, Any] = {"elicitation": {"form": {}}}


class Booking(BaseModel):
    name: str
    seats: int = 1
    vip: bool = False
    meal: Literal["veg", "meat"] = "veg"
    email: str | None = None


@dataclass
class Point:
    x: float
    y: float


class Movie(TypedDict):
    title: str


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Nested(BaseModel):
    point: Point


def build() -> Server:
    server = Server("typed")

    @server.tool
    async def book(ctx: Context) -> str:
        got = await ctx.elicit("Book a table?", Booking)
        if isinstance(got, Accepted):
            return f"{got.data.name} x{got.data.seats} {got.data.meal} vip={got.data.vip}"
        return "declined" if isinstance(got, Declined) else "cancelled"

    @server.tool
    async def pick(ctx: Context) -> str:
        got = await ctx.elicit("Which one?", Literal["red", "blue"])
        return f"picked {got.data}" if isinstance(got, Accepted) else got.action

    return server


class Answering(CollectingExchange):
    """A legacy client that answers every elicitation with ``answer``."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__()
        self.answer = answer
        self.asked: list[dict[str, Any]] = []

    async def request(
        self, method: str, params: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        self.asked.append(params)
        return self.answer


def test_restricted_schemas() -> None:
    schema, wrapped = elicitation_schema(Booking)
    assert not wrapped
    assert schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "seats": {"type": "integer", "default": 1},
            "vip": {"type": "boolean", "default": False},
            "meal": {"type": "string", "enum": ["veg", "meat"], "default": "veg"},
            "email": {"type": "string"},
        },
        "required": ["name"],
    }
    assert elicitation_schema(Point)[0]["properties"] == {
        "x": {"type": "number"},
        "y": {"type": "number"},
    }
    assert elicitation_schema(Movie)[0]["required"] == ["title"]
    color, wrapped = elicitation_schema(Color)
    assert wrapped and color["properties"]["value"] == {"type": "string", "enum": ["red", "blue"]}
    assert elicitation_schema(int)[0]["properties"]["value"] == {"type": "integer"}
    with pytest.raises(TypeError, match="flat"):
        elicitation_schema(Nested)
    with pytest.raises(TypeError):
        elicitation_schema(list[int])


async def test_modern_rounds_give_typed_answers() -> None:
    server = build()
    first = await call(server, "tools/call", {"name": "book"}, modern(FORM))
    (key, request), *_ = first["inputRequests"].items()
    assert request["params"]["requestedSchema"]["required"] == ["name"]
    answers = {
        "accept": {"action": "accept", "content": {"name": "Ada", "seats": 2}},
        "decline": {"action": "decline"},
        "cancel": {"action": "cancel"},
    }
    expected = {"accept": "Ada x2 veg vip=False", "decline": "declined", "cancel": "cancelled"}
    for action, answer in answers.items():
        params = {
            "name": "book",
            "inputResponses": {key: answer},
            "requestState": first["requestState"],
        }
        result = await call(server, "tools/call", params, modern(FORM))
        assert text_of(result) == expected[action]


async def test_legacy_requests_give_typed_answers() -> None:
    server = build()
    exchange = Answering({"action": "accept", "content": {"value": "blue"}})
    result = await call(server, "tools/call", {"name": "pick"}, legacy(FORM), exchange)
    assert text_of(result) == "picked blue"
    assert exchange.asked[0]["requestedSchema"]["properties"]["value"]["enum"] == ["red", "blue"]
    exchange = Answering({"action": "accept", "content": {"name": "Bo", "vip": True}})
    result = await call(server, "tools/call", {"name": "book"}, legacy(FORM), exchange)
    assert text_of(result) == "Bo x1 veg vip=True"
    bad = Answering({"action": "accept", "content": {"value": "green"}})
    error = await call_error(server, "tools/call", {"name": "pick"}, legacy(FORM), bad, code=-32602)
    assert "does not fit" in error.message


def test_a_type_elicitation_cannot_express_is_refused_at_registration() -> None:
    server = Server("refuse")
    with pytest.raises(TypeError, match=r"nested: .*Nested.*flat"):

        @server.tool
        async def nested(ctx: Context) -> str:
            got = await ctx.elicit("Where?", Nested)
            return str(got)

    with pytest.raises(TypeError, match="listy"):

        @server.prompt
        async def listy(ctx: Context) -> str:
            await ctx.elicit("Numbers?", requested_schema=list[int])
            return ""

    # Allowed types, dict schemas and types chosen at run time register fine.
    @server.tool
    async def fine(ctx: Context, pick: str = "a") -> str:
        await ctx.elicit("Book?", Booking)
        await ctx.elicit("Raw?", {"type": "object", "properties": {}})
        await ctx.elicit("Chosen later?", {"a": Booking}.get(pick))
        return ""

    assert "fine" in server.tools and "nested" not in server.tools
