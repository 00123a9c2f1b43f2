"""The one module that touches other libraries' private APIs (runtime/compat.py) gives
exactly what the public API gives, on the anyio it was tested with and off asyncio."""

from __future__ import annotations

import anyio
import pytest
from starlette.types import Message, Receive, Scope, Send

from mcpkit.runtime import compat

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_task_is_in_a_shielded_scope_only_inside_one_of_its_own(anyio_backend: str) -> None:
    import asyncio

    task = asyncio.current_task()
    assert task is not None
    assert not compat.in_shielded_scope(task)
    with anyio.CancelScope(shield=True):
        assert compat.in_shielded_scope(task)
        with anyio.CancelScope():  # an unshielded scope inside a shielded one
            assert compat.in_shielded_scope(task)
        inner: list[bool] = []

        async def child() -> None:
            child_task = asyncio.current_task()
            assert child_task is not None
            inner.append(compat.in_shielded_scope(child_task))

        async with anyio.create_task_group() as tg:  # its parent's shield is not its own
            tg.start_soon(child)
        assert inner == [False]
    assert not compat.in_shielded_scope(task)


def test_the_pin_matches_the_installed_anyio() -> None:
    # A new anyio major must be checked (and the pin moved) before the shortcut is used:
    # pyproject admits only the tested major, and the installed anyio is one.
    import importlib.metadata
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    pins = [d for d in pyproject["project"]["dependencies"] if d.startswith("anyio")]
    assert pins == [f"anyio>=4.4,<{compat.TESTED_ANYIO_MAJOR + 1}"]
    assert importlib.metadata.version("anyio").split(".")[0] == str(compat.TESTED_ANYIO_MAJOR)


def test_on_asyncio_answers_as_sniffio_does(anyio_backend: str) -> None:
    import sniffio

    from mcpkit.runtime.runner import on_asyncio

    async def check() -> None:
        assert on_asyncio() == (sniffio.current_async_library() == "asyncio")

    anyio.run(check, backend=anyio_backend)
    assert not on_asyncio()  # no loop at all


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_uvicorns_own_send_is_recognised_and_a_wrapper_is_not(http: str) -> None:
    # If uvicorn moves its protocol classes, listen fan-outs would quietly fall back to
    # waking every stream's task: this test says so first.
    import httpx

    from support.servers import ThreadServer

    seen: dict[str, bool] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return

        async def wrapped(message: Message) -> None:
            await send(message)

        seen["own"] = compat.send_steps_anywhere(send)
        seen["wrapped"] = compat.send_steps_anywhere(wrapped)
        await wrapped({"type": "http.response.start", "status": 204, "headers": []})
        await wrapped({"type": "http.response.body", "body": b""})

    with ThreadServer(app, lifespan="off", http=http) as server:
        assert httpx.get(server.url, timeout=10).status_code == 204
    assert seen == {"own": True, "wrapped": False}
