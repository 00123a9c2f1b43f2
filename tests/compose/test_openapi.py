"""OpenAPI import: a real FastAPI app (path, query, header, cookie and body parameters,
nested models, enums, a 404 and a 422) imported in-process with ``from_asgi`` and over a
real HTTP socket with ``from_openapi``, every operation called through an MCP client;
routing rules (resources, templates, exclusions); OpenAPI 3.0 dialect and ``$ref``s; and
a generated description with hundreds of operations whose every tool is valid MCP."""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mcpkit import Server
from mcpkit.auth.client import UrlPolicy
from mcpkit.client import Client
from mcpkit.compose import GET_AS_RESOURCES, Route, from_asgi, from_openapi
from mcpkit.types.versions import EraChoice
from support.inproc import call, legacy, modern
from support.mcp import first_text

sys.path.insert(0, str(Path(__file__).parent / "servers"))
shop_api = pytest.importorskip("shop_api")  # needs fastapi (the dev extra)

pytestmark = pytest.mark.anyio
ERAS = ["modern", "legacy"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn in a thread; httpx.ASGITransport


@pytest.fixture(autouse=True)
def _fresh_items() -> Iterator[None]:
    saved = copy.deepcopy(shop_api.ITEMS)
    yield
    shop_api.ITEMS.clear()
    shop_api.ITEMS.update(saved)


async def exercise(server: Server, era: EraChoice) -> None:
    async with Client(server, era=era) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        assert set(tools) == {"get_item", "list_items", "create_item", "order", "echo", "reset"}
        schema = tools["create_item"]["inputSchema"]
        assert schema["properties"]["category"]["enum"] == ["tools", "toys"]  # an enum
        assert set(schema["properties"]["size"]["properties"]) == {"width", "height"}  # nested
        assert "$ref" not in str(schema)
        assert tools["get_item"]["annotations"] == {"readOnlyHint": True}

        got = await client.call_tool("get_item", {"item_id": 1, "detail": True})  # path+query
        assert got["structuredContent"]["name"] == "hammer"
        assert got["structuredContent"]["tags"] == ["detailed"]
        missing = await client.call_tool("get_item", {"item_id": 99})
        assert missing.get("isError") is True
        assert "HTTP 404" in first_text(missing) and "no item 99" in first_text(missing)

        listed = await client.call_tool("list_items", {"category": "toys"})
        assert [i["name"] for i in listed["structuredContent"]["result"]] == ["yoyo"]
        wrong_enum = await client.call_tool("list_items", {"category": "food"})
        assert wrong_enum.get("isError") is True  # refused by the tool's schema

        created = await client.call_tool(
            "create_item",
            {"name": "saw", "category": "tools", "size": {"width": 1, "height": 2.5}},
        )
        assert created["structuredContent"]["id"] == 3
        assert shop_api.ITEMS[3].size.height == 2.5  # the nested body reached the API

        refused = await client.call_tool("order", {"item_id": 1, "quantity": 5})
        assert refused.get("isError") is True and "HTTP 422" in first_text(refused)
        assert "at most 3" in first_text(refused)
        ok = await client.call_tool("order", {"item_id": 1, "quantity": 2})
        assert ok["structuredContent"] == {"item_id": 1, "quantity": 2}

        echoed = await client.call_tool("echo", {"x_source": "mcp", "session": "s-1"})
        assert echoed["structuredContent"] == {
            "source": "mcp",  # a header parameter
            "session": "s-1",  # a cookie parameter
            "api_key": "key-123",  # configured, not offered to the model
            "authorization": None,  # nothing of the MCP caller's is forwarded
        }
        assert "x_api_key" not in tools["echo"]["inputSchema"]["properties"]
        assert (await client.call_tool("reset"))["structuredContent"] == {"reset": True}


@pytest.mark.parametrize("era", ERAS)
async def test_from_asgi_in_process(era: EraChoice) -> None:
    await exercise(from_asgi(shop_api.app, headers={"x-api-key": "key-123"}), era)


@pytest.mark.parametrize("era", ERAS)
async def test_from_openapi_over_real_http(era: EraChoice, shop_url: str) -> None:
    spec = shop_api.app.openapi()
    server = from_openapi(spec, base_url=shop_url, headers={"X-Api-Key": "key-123"})
    assert server.name == "Shop" and server.version == "2.0.0"
    await exercise(server, era)


async def test_route_map_resources_templates_and_exclusions() -> None:
    rules = [
        Route(kind="exclude", tags={"internal"}),
        Route(kind="exclude", pattern=r"^/echo$"),
        Route(kind="exclude", methods={"POST"}, pattern=r"^/orders"),
        *GET_AS_RESOURCES,
    ]
    server = from_asgi(shop_api.app, route_map=rules)
    async with Client(server) as client:
        assert [t["name"] for t in await client.list_tools()] == ["create_item"]
        assert [r["uri"] for r in await client.list_resources()] == []
        templates = sorted(t["uriTemplate"] for t in await client.list_resource_templates())
        # list_items has only query parameters: a template too (GET_AS_RESOURCES)
        assert templates == [
            "openapi://get_item/{item_id}{?detail}",
            "openapi://list_items{?category,limit}",
        ]
        read = await client.read_resource("openapi://get_item/2")
        assert '"yoyo"' in read["contents"][0]["text"]
        read = await client.read_resource("openapi://list_items?category=tools")
        assert '"hammer"' in read["contents"][0]["text"]
        with pytest.raises(Exception, match="not found"):
            await client.read_resource("openapi://get_item/77")


OPENAPI_30 = {
    "openapi": "3.0.3",
    "info": {"title": "Legacy API", "version": "1"},
    "servers": [{"url": "http://127.0.0.1:9/v1"}],
    "paths": {
        "/pets/{petId}": {
            "parameters": [{"$ref": "#/components/parameters/PetId"}],
            "put": {
                "operationId": "update pet!",  # unsafe characters
                "requestBody": {"$ref": "#/components/requestBodies/Pet"},
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                        },
                    }
                },
            },
        },
        "/pets": {
            "get": {"responses": {"200": {"description": "ok"}}},  # no operationId
            "post": {"operationId": "update_pet", "responses": {"201": {"description": "x"}}},
        },
    },
    "components": {
        "parameters": {
            "PetId": {
                "name": "petId",
                "in": "path",
                "required": True,
                "schema": {"type": "integer"},
            }
        },
        "requestBodies": {
            "Pet": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
            }
        },
        "schemas": {
            "Pet": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "nullable": True, "example": "rex"},
                    "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
                    "parent": {"$ref": "#/components/schemas/Pet"},  # recursive
                },
            }
        },
    },
}


@pytest.mark.parametrize("meta", [modern(), legacy()], ids=ERAS)
async def test_openapi_30_dialect_refs_and_names(meta: Any) -> None:
    server = from_openapi(OPENAPI_30)
    listed = await call(server, "tools/list", {}, meta)  # checked against the MCP schema
    tools = {t["name"]: t for t in listed["tools"]}
    assert set(tools) == {"update_pet", "get_pets", "update_pet_2"}
    schema = tools["update_pet"]["inputSchema"]
    Draft202012Validator.check_schema(schema)
    assert schema["required"] == ["petId", "name"]
    assert schema["properties"]["name"]["type"] == ["string", "null"]
    assert schema["properties"]["name"]["examples"] == ["rex"]
    assert schema["properties"]["age"] == {"type": "integer", "exclusiveMinimum": 0}
    assert schema["properties"]["parent"] == {"$ref": "#/$defs/Pet"}  # recursion kept
    assert "Pet" in schema["$defs"]
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"petId": 1, "name": None, "parent": {"name": "a"}})
    assert not validator.is_valid({"petId": 1, "name": "x", "parent": {"age": 0}})


def large_spec(operations: int) -> dict[str, Any]:
    """A generated API: ``operations`` operations over shared, nested components."""
    schemas: dict[str, Any] = {
        "Address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
        },
        "Status": {"type": "string", "enum": ["active", "closed"]},
    }
    paths: dict[str, Any] = {}
    for n in range(operations // 4):
        schemas[f"Thing{n}"] = {
            "type": "object",
            "required": ["id"],
            "properties": {
                "id": {"type": "integer"},
                "address": {"$ref": "#/components/schemas/Address"},
                "status": {"$ref": "#/components/schemas/Status"},
                "children": {"type": "array", "items": {"$ref": f"#/components/schemas/Thing{n}"}},
            },
        }
        ref = {"$ref": f"#/components/schemas/Thing{n}"}
        json_ref = {"application/json": {"schema": ref}}
        ok = {"200": {"description": "ok", "content": json_ref}}
        paths[f"/things{n}"] = {
            "get": {
                "operationId": f"list-things-{n}",
                "tags": [f"group{n % 7}"],
                "parameters": [
                    {"name": "q", "in": "query", "schema": {"type": "string"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"type": "array", "items": ref}}
                        },
                    }
                },
            },
            "post": {
                "operationId": f"create-thing-{n}",
                "requestBody": {"content": json_ref},
                "responses": ok,
            },
        }
        paths[f"/things{n}/{{id}}"] = {
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
            ],
            "get": {"operationId": f"get-thing-{n}", "responses": ok},
            "delete": {
                "operationId": f"get-thing-{n}",  # a duplicate operationId
                "parameters": [{"name": "id", "in": "query", "schema": {"type": "string"}}],
                "responses": {"204": {"description": "gone"}},
            },
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "Big", "version": "1"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


async def test_a_large_description_gives_valid_tools() -> None:
    spec = large_spec(600)
    started = time.perf_counter()
    server = from_openapi(spec, base_url="http://127.0.0.1:9")
    elapsed = time.perf_counter() - started
    print(f"imported 600 operations in {elapsed * 1000:.0f} ms")  # reported, not asserted
    listed = await call(server, "tools/list", {}, modern())  # first page, schema-checked
    tools = list(listed["tools"])
    cursor = listed.get("nextCursor")
    while cursor:
        page = await call(server, "tools/list", {"cursor": cursor}, modern())
        tools += page["tools"]
        cursor = page.get("nextCursor")
    assert len(tools) == 600
    assert len({t["name"] for t in tools}) == 600  # unique names
    for tool in tools:
        assert len(tool["name"]) <= 64
        Draft202012Validator.check_schema(tool["inputSchema"])
        assert tool["inputSchema"]["type"] == "object"
        if "outputSchema" in tool:
            Draft202012Validator.check_schema(tool["outputSchema"])
            assert tool["outputSchema"]["type"] == "object"
    delete = next(t for t in tools if t["name"] == "get-thing-0_2")
    assert set(delete["inputSchema"]["properties"]) == {"id", "id__query"}


async def test_documents_from_yaml_files_and_urls(tmp_path: Path, shop_url: str) -> None:
    yaml = pytest.importorskip("yaml")  # the 'openapi' extra
    path = tmp_path / "pets.yaml"
    path.write_text(yaml.safe_dump(OPENAPI_30))
    listed = await call(from_openapi(path), "tools/list", {}, modern())
    assert {t["name"] for t in listed["tools"]} == {"update_pet", "get_pets", "update_pet_2"}
    local = UrlPolicy.local_development()  # the API is on this machine
    served = from_openapi(f"{shop_url}/openapi.json", base_url=shop_url, spec_policy=local)
    async with Client(served) as client:
        got = await client.call_tool("get_item", {"item_id": 1})
        assert got["structuredContent"]["name"] == "hammer"
    with pytest.raises(ValueError, match=r"OpenAPI 3\.0 and 3\.1"):
        from_openapi({"swagger": "2.0", "paths": {}}, base_url=shop_url)


async def test_an_include_list_is_a_rule_then_exclude_everything() -> None:
    only_orders = [Route(tags={"orders"}), Route(methods={"GET"}, pattern=r"^/items/"),
                   Route(kind="exclude")]  # fmt: skip
    async with Client(from_asgi(shop_api.app, route_map=only_orders)) as client:
        assert sorted(t["name"] for t in await client.list_tools()) == ["get_item", "order"]
