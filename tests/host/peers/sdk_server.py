"""A server built with the official MCP Python SDK (mcp 2.3.0), run from its own venv.

Its ``add`` clashes with ours on purpose; every call is recorded like the mcpkit test
servers do, so the same assertions apply to a server that is not ours.
"""

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("sdk-peer", log_level="WARNING")


def record(tool: str) -> None:
    folder = os.environ.get("HOST_TEST_DIR")
    if folder:
        with (Path(folder) / "sdk.calls").open("a") as out:
            out.write(tool + "\n")


@mcp.tool()
def add(a: float, b: float) -> str:
    """Add two numbers, SDK style."""
    record("add")
    return f"sdk: {a + b:g}"


@mcp.tool()
def shout(text: str) -> str:
    """Upper-case the text."""
    record("shout")
    return text.upper()


if __name__ == "__main__":
    mcp.run()
