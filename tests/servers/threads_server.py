"""A fixture server of plain ``def`` tools, which run in worker threads (the default).

``wait_for_release`` and ``release`` each wait for the other to be running: both answer
"released"/"done" only when the two calls run in two threads at once; were they
serialized, each would give up at its limit and say so.
"""

from __future__ import annotations

import threading

from mcpkit import Server

server = Server("threads-server", "0.0.1")

_waiting = threading.Event()
_released = threading.Event()


@server.tool
def wait_for_release() -> str:
    _waiting.set()
    return "released" if _released.wait(timeout=20) else "never released"


@server.tool
def release() -> str:
    if not _waiting.wait(timeout=20):
        return "nobody waited"
    _released.set()
    return "done"


@server.tool
def thread_name() -> str:
    return threading.current_thread().name


if __name__ == "__main__":
    server.run()
