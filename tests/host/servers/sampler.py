"""Test server "sampler": sampling with tools, the server running the model's tool calls.

``research(question)`` asks the host's model with two of this server's tools, ``lookup``
and ``secret``, and ``toolChoice: auto``; while the model answers with ``tool_use`` blocks
the server runs them itself (each run appended to ``$HOST_TEST_DIR/sampler.calls``) and
asks again with their ``tool_result`` blocks, and returns the model's final text.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mcpkit import Context, Server
from mcpkit.server.sampling import tool_result, tool_results_message, tool_uses
from mcpkit.transports.stdio import run_stdio

server = Server("sampler", "1.0.0")
FACTS = {"tea": "Tea was first drunk in China."}


def record(event: str) -> None:
    with (Path(os.environ["HOST_TEST_DIR"]) / "sampler.calls").open("a") as out:
        out.write(event + "\n")


@server.tool
def lookup(topic: str) -> str:
    """Look a topic up in the encyclopedia."""
    return FACTS.get(topic, f"nothing about {topic}")


@server.tool
def secret() -> str:
    """Read the server's secret."""
    return "the secret"


def run_use(use: dict[str, Any]) -> dict[str, Any]:
    record(f"{use['name']}:{use['input'].get('topic', '')}")
    if use["name"] == "lookup":
        return tool_result(use["id"], lookup(**use["input"]))
    return tool_result(use["id"], "not run here", is_error=True)


@server.tool
async def research(ctx: Context, question: str, rounds: int = 3) -> str:
    """Answer ``question`` with the host's model, which may look things up."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": {"type": "text", "text": question}}
    ]
    for _ in range(rounds):
        answer = await ctx.sample(
            messages, tools=["lookup", "secret"], tool_choice="auto", max_tokens=200
        )
        uses = tool_uses(answer)
        if answer.get("stopReason") != "toolUse" or not uses:
            content = answer["content"]
            return str(content["text"] if isinstance(content, dict) else content[0]["text"])
        messages.append({"role": "assistant", "content": answer["content"]})
        messages.append(tool_results_message(run_use(use) for use in uses))
    return "(too many rounds)"


if __name__ == "__main__":
    run_stdio(server)
