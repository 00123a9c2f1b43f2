"""The ``mcpkit`` pytest plugin: an ``mcp_client`` fixture for the server under test.

Define ``mcp_server`` (a ``Server`` object, or for stdio only a ``file.py:name`` target)
in your ``conftest.py``; each test that takes ``mcp_client`` gets a connected
:class:`~mcpkit.client.Client`::

    @pytest.fixture
    def mcp_server() -> Server:
        return my_server

    @pytest.mark.anyio
    @pytest.mark.parametrize("mcp_transport", ["memory", "stdio", "http"])
    @pytest.mark.parametrize("mcp_era", ["modern", "legacy"])
    async def test_add(mcp_client: Client) -> None:
        assert (await mcp_client.call_tool("add", {"a": 1, "b": 2}))["structuredContent"]

Or run a whole suite on several: ``pytest --mcp-transport memory --mcp-transport stdio
--mcp-era modern --mcp-era legacy`` parametrizes every test that uses ``mcp_client``.

Defaults: ``mcp_transport="memory"``, ``mcp_era="auto"``, ``mcp_client_options={}``
(keyword arguments for the client: callbacks from a ``ScriptedResponder``, ``tasks=True``).
Override any of them as a fixture or by parametrizing it.  The fixture is async: tests run
under anyio's pytest plugin (``pytest.mark.anyio``); ``http`` needs the asyncio backend
and is skipped on trio.

The plugin is loaded by every pytest run in an environment where mcpkit is installed, so
it only defines fixtures (all prefixed ``mcp_``) and imports nothing heavy until used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..client import Client
    from ..server import Server
    from ..types.versions import EraChoice
    from .connect import Transport


_TRANSPORTS = ("memory", "stdio", "http")
_ERAS = ("auto", "modern", "legacy")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcpkit", "MCP servers under test (mcpkit)")
    group.addoption(
        "--mcp-transport",
        action="append",
        default=[],
        choices=_TRANSPORTS,
        help="run every test using mcp_client on this transport (repeatable); "
        "tests that parametrize mcp_transport themselves keep theirs",
    )
    group.addoption(
        "--mcp-era",
        action="append",
        default=[],
        choices=_ERAS,
        help="likewise for the protocol era (repeatable)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``--mcp-transport``/``--mcp-era`` parametrize each test that uses ``mcp_client``
    and does not parametrize that name itself."""
    if "mcp_client" not in metafunc.fixturenames:
        return
    explicit = set()
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        explicit.update(names)
    for name in ("mcp_transport", "mcp_era"):
        chosen = metafunc.config.getoption(name)
        if chosen and name not in explicit:
            metafunc.parametrize(name, list(dict.fromkeys(chosen)))


@pytest.fixture
def mcp_server() -> Server | str:
    """The server under test: override this fixture."""
    pytest.fail(
        "define an `mcp_server` fixture returning the Server to test "
        "(or a 'file.py:name' target for stdio)",
        pytrace=False,
    )


@pytest.fixture
def mcp_transport() -> str:
    """``memory``, ``stdio`` or ``http`` (parametrize to run a test on several)."""
    return "memory"


@pytest.fixture
def mcp_era() -> str:
    """``auto``, ``modern`` or ``legacy``."""
    return "auto"


@pytest.fixture
def mcp_client_options() -> dict[str, Any]:
    """Extra keyword arguments for the client (callbacks, ``tasks=True``, ...)."""
    return {}


@pytest.fixture
async def mcp_client(
    request: pytest.FixtureRequest,
    mcp_server: Server | str,
    mcp_transport: Transport,
    mcp_era: EraChoice,
    mcp_client_options: dict[str, Any],
) -> AsyncIterator[Client]:
    """A client connected to ``mcp_server`` over ``mcp_transport`` in ``mcp_era``."""
    from .connect import connect

    if mcp_transport == "http" and "anyio_backend" in request.fixturenames:
        backend = request.getfixturevalue("anyio_backend")
        name = backend[0] if isinstance(backend, tuple) else backend
        if name != "asyncio":
            pytest.skip("the in-process HTTP server (uvicorn) needs asyncio")
    async with connect(
        mcp_server, transport=mcp_transport, era=mcp_era, **mcp_client_options
    ) as client:
        yield client
