"""Real processes and raw wire helpers for the gateway tests.

Upstreams are started with ``mcpkit serve`` and gateways with ``mcpkit gateway`` exactly as a
user would, each a child process in its own process group on a free 127.0.0.1 port; tests
talk to them over real sockets, either through :class:`mcpkit.client.Client` or with raw
``httpx`` requests when the exact wire matters (status codes, headers, ``_meta``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

from support.mcp import modern_headers, sse_json
from support.servers import free_port as free_port  # the gateway tests reach it as gwkit.free_port
from support.servers import kill_group, serve_argv, spawn
from support.servers import wait_port as support_wait_port

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = "tests/conformance/server.py"
ECHO = "tests/gateway/servers/echo.py"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"

#: Two callers the isolation tests pit against each other, known by their bearer tokens.
ALICE, BOB = "tok-alice-0123456789", "tok-bob-0123456789"
_TWO_CALLERS = """
default_effect = "allow"

[gateway]
state = "memory:"

[auth]
mode = "bearer"

[auth.tokens]
"{alice}" = {{ principal = "alice" }}
"{bob}" = {{ principal = "bob" }}

{upstreams}
"""


def two_callers_config(upstreams: str) -> str:
    """A gateway config (memory state, allow by default) where alice and bob sign in with
    :data:`ALICE` and :data:`BOB`, in front of ``upstreams`` (TOML tables)."""
    return _TWO_CALLERS.format(alice=ALICE, bob=BOB, upstreams=upstreams)


_ids = itertools.count(1)
#: Every process started and not yet stopped (their log tails go into failure reports).
RUNNING: list[Proc] = []


# ---------------------------------------------------------------------------- processes


@dataclass
class Proc:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    cmd: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return f"--- {self.name} (:{self.port})\n" + "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self in RUNNING and sig == signal.SIGTERM:
            RUNNING.remove(self)
        kill_group(self.proc, sig, grace=10.0)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self) -> None:
        """Start the same command again on the same port (after a kill)."""
        self.stop()
        self.proc = spawn(self.cmd, self.log, env=self.env, append=True)
        RUNNING.append(self)
        wait_port(self)


def wait_port(p: Proc, timeout: float = 30.0) -> None:
    try:
        support_wait_port(p.port, p.proc, timeout=timeout)
    except RuntimeError as exc:
        raise RuntimeError(f"{p.name}: {exc}\n{p.tail()}") from None


def _spawn(name: str, cmd: list[str], log_dir: Path, env: dict[str, str], port: int) -> Proc:
    log = log_dir / f"{name}-{port}.log"
    started = Proc(name, port, spawn(cmd, log, env=env), log, cmd, env)
    RUNNING.append(started)
    return started


def serve_command(target: str, *flags: str) -> list[str]:
    """``mcpkit serve`` over stdio (for a stdio upstream's ``command``)."""
    return serve_argv(target, "--state", "memory:", *flags)


def spawn_upstream(name: str, log_dir: Path, target: str = ECHO, *flags: str, **env: str) -> Proc:
    """``mcpkit serve TARGET --http`` (flags: ``--no-modern``, ``--no-legacy``), started but
    not yet waited for (start several, then :func:`wait_port` each: they boot in parallel)."""
    port = free_port()
    cmd = [*serve_command(target, *flags), "--http", "--port", str(port)]
    return _spawn(name, cmd, log_dir, {"ECHO_NAME": name, **env}, port)


def start_upstream(name: str, log_dir: Path, target: str = ECHO, *flags: str, **env: str) -> Proc:
    p = spawn_upstream(name, log_dir, target, *flags, **env)
    wait_port(p)
    return p


class _Issuer(Protocol):
    issuer: str


#: A test server that answers with the identity its caller's token carries.
IDENTITY = "tests/gateway/servers/identity.py"


def identity_upstream(authz: _Issuer, log_dir: Path, stack: list[Proc]) -> Proc:
    """An identity upstream that takes only ``authz``'s tokens with scope ``mcp``, stopped
    with ``stack`` (a module's ``upstream`` fixture: ``pytest.fixture(identity_upstream,
    scope="module", name="upstream")``)."""
    flags = ("--auth-issuer", authz.issuer, "--auth-scope", "mcp")
    p = start_upstream("ident", log_dir, IDENTITY, *flags)
    stack.append(p)
    return p


def start_upstreams(log_dir: Path, *specs: tuple[Any, ...], **env: str) -> list[Proc]:
    """Several upstreams at once: each spec is ``(name, target, *flags)``."""
    procs = [spawn_upstream(spec[0], log_dir, *spec[1:], **env) for spec in specs]
    for p in procs:
        wait_port(p)
    return procs


def start_gateway(
    name: str,
    log_dir: Path,
    config: str,
    *,
    wait_healthy: bool = True,
    port: int | None = None,
    flags: Sequence[str] = (),
    **env: str,
) -> Proc:
    """``mcpkit gateway CONFIG --port P``; waits until /healthz reports every upstream up.
    Pass ``port`` when the config must name the gateway's own URL (OAuth ``resource``)."""
    port = port or free_port()
    path = log_dir / f"{name}.toml"
    path.write_text(config)
    cmd = [sys.executable, "-m", "mcpkit", "gateway", str(path), "--port", str(port), *flags]
    p = _spawn(name, cmd, log_dir, env, port)
    wait_port(p)
    if wait_healthy:
        wait_healthy_gateway(p)
    return p


def wait_healthy_gateway(p: Proc, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            response = httpx.get(p.base + "/healthz", timeout=2)
            last = response.text
            if response.status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{p.name} not healthy after {timeout}s: {last}\n{p.tail()}")


def toml_upstream(
    name: str,
    *,
    url: str | None = None,
    command: Sequence[str] = (),
    prefix: str | None = None,
    **extra: Any,
) -> str:
    lines = ["[[upstream]]", f"name = {json.dumps(name)}"]
    if url is not None:
        lines.append(f"url = {json.dumps(url)}")
    else:
        lines.append(f"command = {json.dumps(list(command))}")
    if prefix is not None:
        lines.append(f"prefix = {json.dumps(prefix)}")
    for key, value in extra.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items())
            lines.append(f"{key} = {{ {inner} }}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- raw wire


def meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {},
        "io.modelcontextprotocol/clientInfo": {"name": "gateway-test", "version": "1"},
        **extra,
    }


@dataclass
class Reply:
    status: int
    headers: httpx.Headers
    body: dict[str, Any]
    notifications: list[dict[str, Any]] = field(default_factory=list)

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.body, f"expected a result, got HTTP {self.status} {self.body}"
        result: dict[str, Any] = self.body["result"]
        return result

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.body, f"expected an error, got HTTP {self.status} {self.body}"
        error: dict[str, Any] = self.body["error"]
        return error

    def text(self) -> str:
        """The first text block of a tool result."""
        return str(self.result["content"][0]["text"])


def _reply(response: httpx.Response) -> Reply:
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        messages = sse_json(response.text)
        final = [m for m in messages if "id" in m and ("result" in m or "error" in m)]
        notes = [m for m in messages if m not in final]
        return Reply(response.status_code, response.headers, final[-1] if final else {}, notes)
    body = response.json() if response.content else {}
    return Reply(response.status_code, response.headers, body)


def call(
    url: str,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    caps: dict[str, Any] | None = None,
    token: str | None = None,
    header_name: str | None = None,
    extra_meta: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    client: httpx.Client | None = None,
) -> Reply:
    """One 2026-07-28 request with the headers a conforming client sends (``header_name``
    overrides ``Mcp-Name``, to spoof it)."""
    params = dict(params or {})
    params["_meta"] = meta(caps, **(extra_meta or {}))
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    overrides: dict[str, str | None] = {}
    if header_name is not None:
        overrides["Mcp-Name"] = header_name
    if token is not None:
        overrides["Authorization"] = f"Bearer {token}"
    overrides.update(headers or {})
    h = modern_headers(body, **overrides)
    sender = client or httpx
    response = sender.post(url, headers=h, content=json.dumps(body), timeout=30)
    return _reply(response)


def call_tool(gateway: Proc, tool: str, **arguments: Any) -> Reply:
    """``tools/call`` of ``tool`` through ``gateway`` (see :func:`call`)."""
    return call(gateway.url, "tools/call", {"name": tool, "arguments": arguments})


class LegacySession:
    """A raw 2025-11-25 session: initialize, initialized, then requests."""

    def __init__(
        self, url: str, token: str | None = None, capabilities: dict[str, Any] | None = None
    ) -> None:
        self.url = url
        self.token = token
        self.capabilities = capabilities or {}
        self.session_id: str | None = None
        self.http = httpx.Client(timeout=30)

    def headers(self) -> dict[str, str]:
        h = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": LEGACY,
        }
        if self.session_id is not None:
            h["mcp-session-id"] = self.session_id
        if self.token is not None:
            h["authorization"] = f"Bearer {self.token}"
        return h

    def post(self, message: dict[str, Any]) -> httpx.Response:
        return self.http.post(self.url, headers=self.headers(), content=json.dumps(message))

    def initialize(self) -> Reply:
        h = self.headers()
        del h["mcp-protocol-version"]
        response = self.http.post(
            self.url,
            headers=h,
            content=json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": next(_ids),
                    "method": "initialize",
                    "params": {
                        "protocolVersion": LEGACY,
                        "capabilities": self.capabilities,
                        "clientInfo": {"name": "gateway-test", "version": "1"},
                    },
                }
            ),
        )
        reply = _reply(response)
        if reply.status == 200 and "result" in reply.body:
            self.session_id = response.headers.get("mcp-session-id")
            self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def request(self, method: str, params: dict[str, Any] | None = None) -> Reply:
        return _reply(
            self.post(
                {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
            )
        )

    def close(self) -> None:
        self.http.close()


def structured(reply: Reply) -> Any:
    result = reply.result
    if "structuredContent" in result:
        return result["structuredContent"]
    return json.loads(result["content"][0]["text"])
