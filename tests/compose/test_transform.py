"""Tool transforms on own, mounted and proxied tools: renamed and hidden arguments reach
the original tool under their original names, the list shows the new shape (checked
against the MCP schema), and a wrapper can validate and post-process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Server, ToolError
from mcpkit.client import Client
from mcpkit.compose import proxy
from mcpkit.server import CallNext, Context, Middleware
from mcpkit.types.versions import EraChoice
from support.inproc import call, legacy, modern
from support.mcp import first_text

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).parent / "servers" / "upstream.py"
STDIO_LEGACY = [
    sys.executable, "-m", "mcpkit", "serve", str(UPSTREAM), "--no-modern", "--state", "memory:",
]  # fmt: skip
ERAS = ["modern", "legacy"]


def recorder() -> tuple[Server, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    server = Server("search")

    @server.tool
    def search(query: str, limit: int, api_key: str = "", lang: str = "en") -> str:
        """Search the index."""
        seen.append({"query": query, "limit": limit, "api_key": api_key, "lang": lang})
        return f"{query}/{limit}/{lang}"

    return server, seen


def reshape(server: Server, name: str = "search") -> None:
    server.transform_tool(
        name,
        new_name="find",
        description="Find documents.",
        args={
            "query": {"name": "q", "description": "What to look for"},
            "limit": {"default": 5},
            "api_key": {"hide": True, "default": "secret-key"},
        },
    )


@pytest.mark.parametrize("era", ERAS)
async def test_own_tool_renamed_and_hidden_args_reach_it(era: EraChoice) -> None:
    server, seen = recorder()
    reshape(server)
    async with Client(server, era=era) as client:
        (tool,) = await client.list_tools()
        assert tool["name"] == "find"
        assert tool["description"] == "Find documents."
        props = tool["inputSchema"]["properties"]
        assert set(props) == {"q", "limit", "lang"}  # api_key is hidden
        assert props["q"]["description"] == "What to look for"
        assert props["limit"]["default"] == 5
        assert tool["inputSchema"]["required"] == ["q"]
        assert first_text(await client.call_tool("find", {"q": "mcp"})) == "mcp/5/en"
        # a hidden argument cannot be set by the caller
        await client.call_tool("find", {"q": "x", "limit": 2, "api_key": "mine", "lang": "fr"})
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("search", {"query": "x", "limit": 1})
    assert seen == [
        {"query": "mcp", "limit": 5, "api_key": "secret-key", "lang": "en"},
        {"query": "x", "limit": 2, "api_key": "secret-key", "lang": "fr"},
    ]


@pytest.mark.parametrize("meta", [modern(), legacy()], ids=ERAS)
async def test_transformed_list_is_valid_mcp(meta: Any) -> None:
    server, _ = recorder()
    reshape(server)
    listed = await call(server, "tools/list", {}, meta)  # schema-checked by the helper
    assert [t["name"] for t in listed["tools"]] == ["find"]
    done = await call(server, "tools/call", {"name": "find", "arguments": {"q": "a"}}, meta)
    assert first_text(done) == "a/5/en"


@pytest.mark.parametrize("era", ERAS)
async def test_transform_of_a_mounted_tool(era: EraChoice) -> None:
    child, seen = recorder()
    main = Server("main")
    main.mount(child, namespace="docs")
    reshape(main, "docs_search")
    async with Client(main, era=era) as client:
        assert [t["name"] for t in await client.list_tools()] == ["find"]
        assert first_text(await client.call_tool("find", {"q": "z", "limit": 1})) == "z/1/en"
    assert seen == [{"query": "z", "limit": 1, "api_key": "secret-key", "lang": "en"}]


class Names(Middleware):
    def __init__(self) -> None:
        self.names: list[str] = []

    async def on_call_tool(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        self.names.append(ctx.params["name"])
        return await call_next(ctx)


async def test_middleware_sees_the_new_name() -> None:
    server, _ = recorder()
    names = Names()
    server.add_middleware(names)
    reshape(server)
    async with Client(server) as client:
        await client.call_tool("find", {"q": "a"})
    assert names.names == ["find"]


@pytest.mark.parametrize("era", ERAS)
async def test_wrap_validates_and_post_processes(era: EraChoice) -> None:
    server, seen = recorder()

    async def guard(arguments: dict[str, Any], forward: Any) -> dict[str, Any]:
        if len(arguments.get("q", "")) < 2:
            raise ToolError("q must have at least 2 characters")
        result = await forward(arguments)
        return {"content": [{"type": "text", "text": first_text(result).upper()}]}

    server.transform_tool(
        "search", new_name="find", args={"query": {"name": "q"}, "limit": {"default": 1}},
        wrap=guard,
    )  # fmt: skip
    async with Client(server, era=era) as client:
        refused = await client.call_tool("find", {"q": "a"})
        assert refused.get("isError") is True
        assert "at least 2" in first_text(refused)
        assert first_text(await client.call_tool("find", {"q": "abc"})) == "ABC/1/EN"
    assert [s["query"] for s in seen] == ["abc"]


@pytest.mark.parametrize("era", ERAS)
async def test_transform_of_a_proxied_tool(
    era: EraChoice, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    front = proxy(STDIO_LEGACY)
    front.transform_tool(
        "echo",
        new_name="shout",
        args={"text": {"name": "message"}, "times": {"hide": True, "default": 3}},
    )
    async with Client(front, era=era) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        assert "echo" not in tools
        assert set(tools["shout"]["inputSchema"]["properties"]) == {"message"}
        result = await client.call_tool("shout", {"message": "hey", "times": 1})
        assert first_text(result) == "hey hey hey"  # the upstream got text= and times=3


def test_transform_rules() -> None:
    server, _ = recorder()
    with pytest.raises(ValueError, match="unknown keys"):
        server.transform_tool("search", args={"query": {"rename": "q"}})
    with pytest.raises(ValueError, match="same name"):
        server.transform_tool("search", args={"query": {"name": "x"}, "lang": {"name": "x"}})
    server.transform_tool("search", new_name="find")
    with pytest.raises(ValueError, match="already produces"):
        server.transform_tool("other", new_name="find")
