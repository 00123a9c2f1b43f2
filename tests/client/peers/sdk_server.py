"""A server written with the official MCP Python SDK (``mcp`` 2.3.0), for interop tests.

Run with the SDK's interpreter (the test installs it into its own virtualenv)::

    python sdk_server.py                      # stdio, both protocol eras
    python sdk_server.py --http --port 3101   # Streamable HTTP at http://127.0.0.1:3101/mcp
    python sdk_server.py --sse --port 3101    # legacy HTTP+SSE at http://127.0.0.1:3101/sse

Not a copy of any fixture: a small surface that exercises what a client must get right
against someone else's server: tools with typed arguments, a static resource and a
template, a prompt with arguments, completion, and asking the user for input in both
eras (an ``InputRequiredResult`` with request state on 2026-07-28, a server->client
``elicitation/create`` on the handshake era).
"""

from __future__ import annotations

import argparse
import json

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    PromptReference,
    ResourceTemplateReference,
)
from pydantic import BaseModel

server = MCPServer(name="interop-sdk-server", version="9.9.9")

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
LANGUAGES = ["python", "pascal", "perl", "rust"]


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Upper-cases its argument."""
    return text.upper()


@server.tool()
async def ask_name(ctx: Context) -> str | InputRequiredResult:
    """2026-07-28: asks for a name with an InputRequiredResult, then greets."""
    answers = ctx.input_responses
    if answers and "who" in answers:
        if ctx.request_state != "asked-once":
            return "request state was not echoed"
        answer = answers["who"]
        if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content:
            return f"Hello, {answer.content.get('name')}!"
        return "No name given."
    request = ElicitRequest(
        params=ElicitRequestFormParams(message="What is your name?", requested_schema=NAME_SCHEMA)
    )
    return InputRequiredResult(input_requests={"who": request}, request_state="asked-once")


class Name(BaseModel):
    name: str


@server.tool()
async def ask_name_legacy(ctx: Context) -> str:
    """Handshake era: asks for a name with a server->client elicitation/create."""
    result = await ctx.elicit(message="What is your name?", schema=Name)
    if result.action == "accept" and result.data is not None:
        return f"Hello, {result.data.name}!"
    return f"No name ({result.action})."


@server.resource("interop://greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed greeting."""
    return "hello from the SDK"


@server.resource("interop://items/{item_id}", mime_type="application/json")
def item(item_id: str) -> str:
    """One item by id."""
    return json.dumps({"id": item_id})


@server.prompt()
def review(code: str, language: str = "python") -> str:
    """Asks for a code review."""
    return f"Please review this {language} code:\n{code}"


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion:
    values = [v for v in LANGUAGES if v.startswith(argument.value)]
    return Completion(values=values, total=len(values), has_more=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true")
    parser.add_argument(
        "--sse",
        action="store_true",
        help="the 2024-11-05 HTTP+SSE transport (sse_app(): /sse, /messages/)",
    )
    parser.add_argument("--port", type=int, default=3101)
    args = parser.parse_args()
    if args.sse:
        import uvicorn

        uvicorn.run(server.sse_app(), host="127.0.0.1", port=args.port, log_level="warning")
    elif args.http:
        server.run(transport="streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run(transport="stdio")


if __name__ == "__main__":
    main()
