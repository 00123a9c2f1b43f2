# mypy: disable-error-code="misc"
# (the SDK is absent from the project venv: its base classes are Any to mypy)
"""A server written with the official MCP Python SDK (``mcp`` 2.3.0) that serves an
extension's custom method, for mcpkit's client to call.  Run with the SDK's interpreter
over stdio: ``python sdk_extension_server.py``.

The extension ``com.example/sdk`` adds ``com.example/sdk/echo`` (params ``{"text": str}``,
result ``{"echo": str, "length": int}``) through ``Extension.methods()``.
"""

from __future__ import annotations

from typing import Any

from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.types import RequestParams


class EchoParams(RequestParams):
    text: str


async def echo(ctx: Any, params: EchoParams) -> dict[str, Any]:
    return {"echo": params.text, "length": len(params.text)}


class SdkExtension(Extension):
    identifier = "com.example/sdk"

    def settings(self) -> dict[str, Any]:
        return {"flavour": "sdk"}

    def methods(self) -> list[MethodBinding]:
        return [MethodBinding(method="com.example/sdk/echo", params_type=EchoParams, handler=echo)]


server = MCPServer("sdk-extension", extensions=[SdkExtension()])


if __name__ == "__main__":
    server.run(transport="stdio")
