"""Test server "skillful": publishes the skills of ``tests/host/fixtures/skills`` (the
``io.modelcontextprotocol/skills`` extension) and one ordinary tool.  Every
``skills/get`` and ``resources/read`` it answers is appended (method and URI) to
``$HOST_TEST_DIR/skillful.calls``, so a test sees which skill bodies were fetched."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mcpkit import Context, Server
from mcpkit.server import Middleware
from mcpkit.server.middleware import CallNext
from mcpkit.transports.stdio import run_stdio


class Reads(Middleware):
    """Records the requests that fetch a skill's entry or one of its files."""

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        if ctx.method in ("skills/get", "resources/read"):
            with (Path(os.environ["HOST_TEST_DIR"]) / "skillful.calls").open("a") as out:
                out.write(f"{ctx.method}:{ctx.params.get('uri')}\n")
        return await call_next(ctx)


server = Server("skillful", "1.0.0", middleware=[Reads()])
server.skills(Path(__file__).resolve().parents[1] / "fixtures" / "skills")


@server.tool
def kettle() -> str:
    """Switch the kettle on."""
    return "the kettle is on"


if __name__ == "__main__":
    run_stdio(server)
