"""Registration options: ``on_duplicate`` for tools, resources, templates and prompts, and
what each era's client then sees."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcpkit import Server
from support.inproc import call, legacy, modern, text_of

pytestmark = pytest.mark.anyio

ERAS = [pytest.param(modern, id="modern"), pytest.param(legacy, id="legacy")]


def test_duplicates_are_refused_by_default() -> None:
    server = Server("dup")

    @server.tool
    def search(q: str) -> str:
        return "first"

    with pytest.raises(ValueError, match="tool 'search' is already registered"):

        @server.tool(name="search")
        def other(q: str) -> str:
            return "second"

    server.resource("test://a")(lambda: "a")
    with pytest.raises(ValueError, match="resource 'test://a'"):
        server.resource("test://a")(lambda: "b")
    server.resource("test://t/{x}")(lambda x: x)
    with pytest.raises(ValueError, match="resource template"):
        server.resource("test://t/{x}")(lambda x: x * 2)

    @server.prompt
    def greet(name: str) -> str:
        return name

    with pytest.raises(ValueError, match="prompt 'greet'"):
        server.prompt(name="greet")(lambda name: name)
    with pytest.raises(ValueError):
        Server("bad", on_duplicate="ignore")


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("mode", ["replace", "warn"])
async def test_replace_and_warn_keep_the_newest(
    era: Any, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("dup", on_duplicate=mode)

    @server.tool
    def search(q: str) -> str:
        return "first"

    with caplog.at_level(logging.WARNING, logger="mcpkit.server"):

        @server.tool(name="search")
        def newer(q: str) -> str:
            return "second"

        server.resource("test://t/{x}")(lambda x: "old")
        server.resource("test://t/{x}")(lambda x: "new")
    warned = [r for r in caplog.records if "already registered" in r.getMessage()]
    assert len(warned) == (2 if mode == "warn" else 0)
    listed = await call(server, "tools/list", {}, era())
    assert [t["name"] for t in listed["tools"]] == ["search"]
    result = await call(server, "tools/call", {"name": "search", "arguments": {"q": "x"}}, era())
    assert text_of(result) == "second"
    templates = await call(server, "resources/templates/list", {}, era())
    assert len(templates["resourceTemplates"]) == 1
    read = await call(server, "resources/read", {"uri": "test://t/1"}, era())
    assert read["contents"][0]["text"] == "new"
