"""FastMCP contender (``fastmcp``, ``FastMCP``): the same two tools as every contender.

usage: python fastmcp_server.py http PORT [--stateless] [--json]
       python fastmcp_server.py stdio
       python fastmcp_server.py inproc N
"""

from __future__ import annotations

import os
import sys

from fastmcp import Context, FastMCP

mcp = FastMCP("bench-fastmcp")


if os.environ.get("MCPKIT_BENCH_ASYNC_TOOLS"):

    @mcp.tool
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

else:

    @mcp.tool
    def echo(text: str) -> str:
        """Echo the text back."""
        return text


@mcp.tool
async def progress_echo(text: str, ctx: Context) -> str:
    """Report one progress notification, then echo the text back."""
    await ctx.report_progress(1, 1)
    return text


def main() -> None:
    mode = sys.argv[1]
    if mode == "http":
        from _serve import serve

        app = mcp.http_app(
            stateless_http="--stateless" in sys.argv, json_response="--json" in sys.argv
        )
        serve(app, int(sys.argv[2]))
    elif mode == "stdio":
        from _serve import use_same_loop

        use_same_loop()  # uvloop, as mcpkit's stdio server picks by itself
        mcp.run(transport="stdio", show_banner=False)
    elif mode == "inproc":
        import anyio
        from _inproc import time_echo

        anyio.run(time_echo, mcp, int(sys.argv[2]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
