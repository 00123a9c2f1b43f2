"""Test server "beta" (mcpkit): a clashing ``add``, an image tool, structured output."""

from __future__ import annotations

import base64
import os
import struct
import zlib
from pathlib import Path
from typing import TypedDict

from mcpkit import Server
from mcpkit.server import Image
from mcpkit.transports.stdio import run_stdio

server = Server("beta", "1.0.0")


def _png(width: int, height: int, bars: list[int]) -> bytes:
    """A bar chart as a PNG, written by hand (no imaging library needed)."""
    rows = []
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            bar = bars[x * len(bars) // width]
            row += bytes((47, 111, 235) if height - y <= bar else (246, 248, 250))
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows)))
        + chunk(b"IEND", b"")
    )


PNG = _png(96, 48, [12, 30, 22, 44, 36, 18])
PNG_B64 = base64.b64encode(PNG).decode()


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
