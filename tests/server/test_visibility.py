"""Tags and visibility on both eras: include/exclude tags, enable/disable at run time
(with list_changed), and a per-request filter that lists and calls obey.  A hidden item
answers exactly as an unknown one does."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import Context, McpError, Server
from mcpkit.protocol.negotiation import RequestMeta
from mcpkit.types import jsonrpc
from support.inproc import CollectingExchange, call, call_error, legacy, modern, text_of

pytestmark = pytest.mark.anyio

ERAS = [pytest.param(modern, id="modern"), pytest.param(legacy, id="legacy")]


def build(**options: Any) -> Server:
    server = Server("vis", **options)

    @server.tool
    def public(x: int = 1) -> str:
        return "public"

    @server.tool(tags={"admin"})
    def purge(x: int = 1) -> str:
        return "purged"

    @server.tool(tags={"beta", "admin"})
    def experiment(x: int = 1) -> str:
        return "experiment"

    server.resource("test://doc")(lambda: "doc")
    server.resource("test://admin/log", tags={"admin"})(lambda: "log")
    server.resource("test://admin/{day}", tags={"admin"})(lambda day: day)

    @server.prompt(tags={"admin"})
    def audit(topic: str) -> str:
        return topic

    @server.prompt
    def hello(name: str) -> str:
        return name

    return server


async def tool_names(server: Server, meta: RequestMeta) -> list[str]:
    return [t["name"] for t in (await call(server, "tools/list", {}, meta))["tools"]]


async def unknown_tool_error(meta: RequestMeta, name: str) -> dict[str, Any]:
    """What a server that never had ``name`` answers."""
    other = Server("other")
    other.tool(name="something_else")(lambda: "x")
    err = await call_error(other, "tools/call", {"name": name}, meta, code=-32602)
    return err.to_wire()


@pytest.mark.parametrize("era", ERAS)
async def test_include_and_exclude_tags(era: Any) -> None:
    only_admin = build(include_tags={"admin"})
    assert await tool_names(only_admin, era()) == ["purge", "experiment"]
    no_beta = build(exclude_tags={"beta"})
    assert await tool_names(no_beta, era()) == ["public", "purge"]
    hidden = await call_error(no_beta, "tools/call", {"name": "experiment"}, era(), code=-32602)
    assert hidden.to_wire() == await unknown_tool_error(era(), "experiment")
    no_admin = build(exclude_tags={"admin"})
    resources = await call(no_admin, "resources/list", {}, era())
    assert [r["uri"] for r in resources["resources"]] == ["test://doc"]
    templates = await call(no_admin, "resources/templates/list", {}, era())
    assert templates["resourceTemplates"] == []
    code = -32602 if era().era == "modern" else -32002
    await call_error(no_admin, "resources/read", {"uri": "test://admin/log"}, era(), code=code)
    await call_error(no_admin, "resources/read", {"uri": "test://admin/mon"}, era(), code=code)
    prompts = await call(no_admin, "prompts/list", {}, era())
    assert [p["name"] for p in prompts["prompts"]] == ["hello"]
    await call_error(
        no_admin, "prompts/get", {"name": "audit", "arguments": {"topic": "x"}}, era(), code=-32602
    )


@pytest.mark.parametrize("era", ERAS)
async def test_disable_and_enable_at_run_time_send_list_changed(era: Any) -> None:
    server = build()
    with server.bus.listen() as listener:
        server.disable("public", tags={"beta"})
        kinds = {(await listener.next()).kind for _ in range(3)}
    assert kinds == {"tools", "prompts", "resources"}
    assert await tool_names(server, era()) == ["purge"]
    hidden = await call_error(server, "tools/call", {"name": "public"}, era(), code=-32602)
    assert hidden.to_wire() == await unknown_tool_error(era(), "public")
    server.enable("public", tags={"beta"})
    assert await tool_names(server, era()) == ["public", "purge", "experiment"]
    result = await call(server, "tools/call", {"name": "public"}, era())
    assert text_of(result) == "public"


@pytest.mark.parametrize("era", ERAS)
async def test_per_request_filter_by_principal(era: Any) -> None:
    server = build()
    seen: list[tuple[str, str]] = []

    @server.visibility_filter
    def only_admins_see_admin(ctx: Context, kind: str, name: str, tags: frozenset[str]) -> bool:
        seen.append((kind, name))
        return "admin" not in tags or ctx.principal == "root"

    async def as_user(who: str | None, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = jsonrpc.request(1, method, params)
        return await server.dispatch(message, era(), CollectingExchange(), principal=who)

    listed = await as_user("guest", "tools/list", {})
    assert [t["name"] for t in listed["tools"]] == ["public"]
    listed = await as_user("root", "tools/list", {})
    assert [t["name"] for t in listed["tools"]] == ["public", "purge", "experiment"]
    with pytest.raises(McpError) as refused:
        await as_user("guest", "tools/call", {"name": "purge"})
    assert refused.value.to_wire() == await unknown_tool_error(era(), "purge")
    done = await as_user("root", "tools/call", {"name": "purge"})
    assert text_of(done) == "purged"
    assert ("tool", "purge") in seen
    with pytest.raises(McpError):
        await as_user(
            "guest",
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "audit"},
                "argument": {"name": "topic", "value": ""},
            },
        )


async def test_tags_must_be_a_set_of_strings() -> None:
    server = Server("t")
    with pytest.raises(TypeError):
        server.tool(tags="admin")(lambda: None)


def test_hidden_tool_with_header_parameters_answers_as_unknown_over_http() -> None:
    """The transport checks ``Mcp-Param-*`` headers before dispatch: for a hidden tool it
    must not ask for them (-32020) but answer as for a tool that does not exist."""
    from mcpkit.transports.http import McpHttpApp
    from support.httpclient import McpHttp
    from support.mcp import modern_headers
    from support.servers import ThreadServer

    schema = {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    }

    def build_app() -> Any:
        server = Server("hdr")

        @server.tool(input_schema=schema, tags={"internal"})
        def regional(region: str = "-") -> str:
            return region

        server.tool(name="other")(lambda: "x")
        return server, McpHttpApp(server)

    server, app = build_app()
    with ThreadServer(app) as running:
        http = McpHttp(running.url)
        try:

            def post(name: str) -> dict[str, Any]:
                message = http.modern_request(
                    "tools/call", {"name": name, "arguments": {"region": "eu"}}
                )
                response = http.post_json(message, modern_headers(message))  # no Mcp-Param
                body: dict[str, Any] = response.json()
                return {"status": response.status_code, "error": body["error"]}

            visible = post("regional")
            assert visible["status"] == 400 and visible["error"]["code"] == -32020
            server.disable(tags={"internal"})
            hidden, unknown = post("regional"), post("nowhere")
            assert hidden["status"] == unknown["status"]
            assert hidden["error"]["code"] == unknown["error"]["code"] == -32602
            assert hidden["error"]["message"] == "Unknown tool: regional"
        finally:
            http.close()
