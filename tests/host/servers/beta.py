"""Test server "beta" (mcpkit): a clashing ``add``, an image tool, structured output."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import TypedDict

from mcpkit import Server
from mcpkit.server import Image
from mcpkit.transports.stdio import run_stdio

server = Server("beta", "1.0.0")
#: A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def record(tool: str) -> None:
    folder = os.environ.get("HOST_TEST_DIR")
    if folder:
        with (Path(folder) / "beta.calls").open("a") as out:
            out.write(tool + "\n")


@server.tool
def add(a: float, b: float) -> str:
    """Add two numbers, beta style."""
    record("add")
    return f"beta: {a + b:g}"


class Weather(TypedDict):
    city: str
    celsius: float


@server.tool
def weather(city: str) -> Weather:
    """Current weather (structured output)."""
    record("weather")
    return {"city": city, "celsius": 21.5}


@server.tool
def chart() -> Image:
    """A tiny chart, as an image."""
    record("chart")
    return Image(PNG, "image/png")


if __name__ == "__main__":
    run_stdio(server)
