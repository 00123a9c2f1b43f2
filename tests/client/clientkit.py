"""Helpers for the client tests: paths, free ports, starting and stopping real servers, and
a scripted transport for the client's own rules (:class:`FakeTransport`).

A module with a unique name (not ``conftest``): several test directories have a
``conftest.py``, so ``from conftest import ...`` would depend on which one was loaded last.
"""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpkit.client import Client
from mcpkit.client.options import EraCache
from mcpkit.transports.client_base import MessageStream

CLIENT_TESTS = Path(__file__).resolve().parent
TESTS = CLIENT_TESTS.parent
REPO = TESTS.parent
PEERS = CLIENT_TESTS / "peers"
FIXTURE_SERVER = REPO / "tests" / "conformance" / "server.py"
SLOW_SERVER = PEERS / "slow_server.py"

if str(TESTS) not in sys.path:  # for tests/support (schema validation)
    sys.path.insert(0, str(TESTS))

from support.servers import kill_group, spawn, wait_port  # noqa: E402

_OBJECTS: dict[tuple[Path, str], Any] = {}


def fixture_object(backend: str, script: Path = FIXTURE_SERVER) -> Any:
    """The ``server`` object a fixture script defines, for ``Client(server)`` in memory:
    loaded once per script and event-loop backend (a ``Server`` keeps event-loop objects,
    its lifespan lock, so one object cannot move from asyncio to trio)."""
    key = (script, backend)
    if key not in _OBJECTS:
        name = f"memory_{script.stem}_{backend}"
        spec = importlib.util.spec_from_file_location(name, script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _OBJECTS[key] = module.server
    return _OBJECTS[key]


@dataclass
class ServerProcess:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def output_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"

    def stop(self) -> None:
        kill_group(self.process)


def start_server(
    argv: list[str], port: int, url: str, log: Path, timeout: float = 30.0
) -> ServerProcess:
    process = spawn(argv, log, cwd=REPO)
    server = ServerProcess(url, process, log)
    try:
        wait_port(port, process, log, timeout=timeout)
    except RuntimeError:
        server.stop()
        raise
    return server


Responder = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
DISCOVERED: dict[str, Any] = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28", "2025-11-25"],
    "capabilities": {"tools": {"listChanged": True}},
    "ttlMs": 0,
    "cacheScope": "private",
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
}
INITIALIZED: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}, "logging": {}, "resources": {"subscribe": True}},
    "serverInfo": {"name": "legacy", "version": "1"},
}


class FakeTransport:
    """A transport whose server is a coroutine: (method, params) -> result or raise.

    ``sent`` records every request and notification, ``headers`` the extra headers of
    each, in order."""

    def __init__(self, respond: Responder, kind: str = "stdio") -> None:
        self.respond = respond
        self.kind = kind
        self.server_key = f"fake:{id(self)}"
        self.sent: list[tuple[str, dict[str, Any] | None]] = []
        self.headers: list[dict[str, str] | None] = []
        self.legacy_version: str | None = None

    async def __aenter__(self) -> FakeTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def set_handlers(self, on_request: Any, on_notification: Any) -> None:
        pass

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        self.sent.append((method, params))
        self.headers.append(headers)
        return await self.respond(method, params or {})

    async def notify(
        self, method: str, params: Any = None, *, headers: dict[str, str] | None = None
    ) -> None:
        self.sent.append((method, params))
        self.headers.append(headers)

    def listen(
        self, params: dict[str, Any], *, headers: dict[str, str] | None = None
    ) -> contextlib.AbstractAsyncContextManager[MessageStream]:
        raise AssertionError("the scripted server has no listen stream")

    async def legacy_session_started(self, version: str) -> None:
        self.legacy_version = version

    def describe(self) -> str:
        return "a fake server"


def legacy_server(discover_failure: BaseException | None) -> Responder:
    """A server that answers ``server/discover`` (``discover_failure`` None) or fails it
    with ``discover_failure`` and then answers ``initialize``."""

    async def respond(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "server/discover":
            if discover_failure is None:
                return DISCOVERED
            raise discover_failure
        if method == "initialize":
            return INITIALIZED
        return {"content": []}

    return respond


def client_for(respond: Responder, kind: str = "stdio", **kw: Any) -> Client:
    """A client of the scripted server, with an era cache of its own."""
    return Client(FakeTransport(respond, kind), era_cache=EraCache(), **kw)
