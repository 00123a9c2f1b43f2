"""The stdio floor: a bare newline-delimited JSON-RPC echo on the same stack as mcpkit's
stdio transport (asyncio pipe transports, uvloop when installed, orjson).

usage: python floor_stdio.py
"""

from __future__ import annotations

import asyncio
import os
import sys

import orjson
from floor_common import answer


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", buffering=0)
    )
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(1, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    buffer = b""
    while True:
        chunk = await reader.read(256 * 1024)
        if not chunk:
            return
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            msg = orjson.loads(line)
            if "id" in msg:
                writer.write(orjson.dumps(answer(msg)) + b"\n")
        if transport.get_write_buffer_size() > 64 * 1024:
            await writer.drain()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main())
    sys.exit(0)
