"""Helpers of the reliability suite: real server processes, raw wire access, /proc probes.

Written independently of mcpkit's own client helpers where the wire matters (headers, SSE
parsing): a test that built its requests with the code under test would agree with any
bug in it.  Everything binds and connects to 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

import support.servers as support_servers
from support.mcp import modern_headers, modern_request, sse_json
from support.servers import free_port, kill_group, serve_argv, spawn, wait_port

if TYPE_CHECKING:
    from conftest import Rel

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SERVER_FILE = HERE / "servers" / "rel_server.py"
LAUNCHER = HERE / "servers" / "launch_http.py"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
STARTUP_S = 30.0

_ids = itertools.count(1000)


def next_id() -> int:
    return next(_ids)


def rel_server_argv() -> list[str]:
    """``mcpkit serve rel_server.py`` over stdio, as a client's command."""
    return serve_argv(SERVER_FILE, "--state", "memory:")


def base_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["MCPKIT_SEALING_KEYS"] = "reliability-suite-key"
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("MCPKIT_REL_RECORD", None)
    env.update(extra)
    return env


# ------------------------------ /proc probes


def _status_kb(pid: int, field_name: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise LookupError(field_name)


def rss_kb(pid: int) -> int:
    return _status_kb(pid, "VmRSS")


def hwm_kb(pid: int) -> int:
    """Peak RSS so far."""
    return _status_kb(pid, "VmHWM")


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a LISTEN socket on ``port`` (from /proc/net/tcp{,6})."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            local, state = parts[1], parts[3]
            address, port_hex = local.rsplit(":", 1)
            if state == "0A" and int(port_hex, 16) == port:
                found.add(address)
    return found


# ------------------------------ Redis that can crash and come back


@contextlib.contextmanager
def persistent_redis(data_dir: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A real ``redis-server`` on ``port`` keeping its data in ``data_dir`` (append-only,
    fsync'd on every write): SIGKILL it and enter this again on the same port and
    directory, and it comes back with what it held."""
    binary = shutil.which("redis-server")
    assert binary is not None, "redis-server is not installed"
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    argv += ["--appendonly", "yes", "--appendfsync", "always", "--dir", str(data_dir)]
    proc = spawn(argv, data_dir / f"redis-{time.monotonic_ns()}.log")
    try:
        wait_port(port, proc)
        yield proc
    finally:
        kill_group(proc, grace=10.0)


# ------------------------------ messages


def call_tool(
    rid: Any, name: str, arguments: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    return modern_request(rid, "tools/call", {"name": name, "arguments": arguments or {}}, **kw)


@dataclass
class Reply:
    status: int
    headers: httpx.Headers
    body: Any
    notifications: list[dict[str, Any]] = field(default_factory=list)
    raw: bytes = b""

    @property
    def error(self) -> dict[str, Any]:
        assert isinstance(self.body, dict) and "error" in self.body, self.describe()
        error: dict[str, Any] = self.body["error"]
        return error

    @property
    def result(self) -> dict[str, Any]:
        assert isinstance(self.body, dict) and "result" in self.body, self.describe()
        result: dict[str, Any] = self.body["result"]
        return result

    def describe(self) -> str:
        return f"HTTP {self.status} {self.raw[:600]!r}"


def to_reply(response: httpx.Response) -> Reply:
    raw = response.content
    ctype = response.headers.get("content-type", "")
    body: Any = None
    notes: list[dict[str, Any]] = []
    if ctype.startswith("text/event-stream"):
        messages = sse_json(raw.decode("utf-8", "replace"))
        for message in messages:
            if "id" in message and ("result" in message or "error" in message):
                body = message
            else:
                notes.append(message)
    elif raw.strip():
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
    return Reply(response.status_code, response.headers, body, notes, raw)


def post(
    client: httpx.Client,
    url: str,
    message: Any,
    headers: dict[str, str] | None = None,
    *,
    raw: bytes | None = None,
) -> Reply:
    """POST one message (``raw`` bytes win over ``message``) with correct modern headers
    unless ``headers`` is given."""
    content = raw if raw is not None else json.dumps(message).encode()
    h = (
        headers
        if headers is not None
        else modern_headers(message if isinstance(message, dict) else None)
    )
    return to_reply(client.post(url, content=content, headers=h))


def assert_rpc_error(reply: Reply, status: int, code: int, rid: Any = "absent") -> None:
    """Exact HTTP status and JSON-RPC code; ``rid`` is the expected id.  ``"absent"``:
    the id could not be determined, so the error has no ``id`` member (the MCP schema
    makes it optional and never allows ``null``)."""
    assert reply.status == status, reply.describe()
    error = reply.error
    assert error["code"] == code, reply.describe()
    assert isinstance(error.get("message"), str), reply.describe()
    if rid == "absent":
        assert "id" not in reply.body, reply.describe()
    else:
        assert reply.body.get("id") == rid and type(reply.body.get("id")) is type(rid), (
            reply.describe()
        )


# ------------------------------ processes


class ServerProcess:
    """An HTTP server in its own process group, output in ``log``, tool records in
    ``record``."""

    def __init__(self, argv: list[str], port: int, workdir: Path, env: dict[str, str]) -> None:
        self.port = port
        self.workdir = workdir
        self.log = workdir / f"server-{port}.log"
        self.record = workdir / f"record-{port}.txt"
        self.record.touch()
        env = {**env, "MCPKIT_REL_RECORD": str(self.record)}
        self.proc = spawn(argv, self.log, env=env, cwd=workdir)
        try:
            wait_port(port, self.proc, self.log, timeout=STARTUP_S)
        except BaseException:
            self.kill()
            raise

    @classmethod
    def cli(
        cls, workdir: Path, *args: str, target: Path = SERVER_FILE, **env: str
    ) -> ServerProcess:
        """``python -m mcpkit serve TARGET --http`` exactly as a user runs it."""
        port = free_port()
        argv = serve_argv(target, "--http", "--port", str(port), "--state", "memory:", *args)
        return cls(argv, port, workdir, base_env(**env))

    @classmethod
    def launcher(cls, workdir: Path, *args: str, **env: str) -> ServerProcess:
        """The fixture server with options the CLI does not expose (see launch_http.py)."""
        port = free_port()
        argv = [sys.executable, str(LAUNCHER), str(port), *args]
        return cls(argv, port, workdir, base_env(**env))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def records(self) -> list[str]:
        return self.record.read_text().splitlines()

    def ran(self, tag: str) -> bool:
        """Whether a ``slow`` call tagged ``tag`` reached its handler (a record line)."""
        return any(line.endswith(" " + tag) for line in self.records())

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, sig)

    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        kill_group(self.proc, signal.SIGKILL, grace=10.0)

    def stop(self) -> None:
        kill_group(self.proc, signal.SIGTERM, grace=15.0)


class StdioProcess(support_servers.StdioProcess):
    """The reliability server over real pipes (``tests/support``'s driver), with the tool
    records of this suite and lenient reads: a test here may look at any line."""

    def __init__(self, workdir: Path, target: Path = SERVER_FILE, **env: str) -> None:
        self.workdir = workdir
        self.record = workdir / f"stdio-record-{id(self)}.txt"
        self.record.touch()
        super().__init__(
            target,
            workdir,
            args=("--state", "memory:"),
            env=base_env(MCPKIT_REL_RECORD=str(self.record), **env),
            stderr_name=f"stdio-stderr-{id(self)}.log",
        )

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        return self.process

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        line = self.recv_line(timeout)
        message = json.loads(line)
        assert isinstance(message, dict), line
        return message

    def recv_response(
        self, rid: Any, timeout: float = 10.0
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The response for ``rid`` and everything that came before it."""
        before: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            message = self.recv(max(0.01, deadline - time.monotonic()))
            if (
                message.get("id") == rid
                and type(message.get("id")) is type(rid)
                and ("result" in message or "error" in message)
            ):
                return message, before
            before.append(message)

    def quiet(self, seconds: float) -> list[dict[str, Any]]:
        """Everything the server writes within ``seconds`` (expected: nothing)."""
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return got
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                return got
            if line is None:
                self.lines.put(None)
                return got
            got.append(json.loads(line))

    def request(self, message: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        self.send(message)
        return self.recv_response(message["id"], timeout)[0]

    def records(self) -> list[str]:
        return self.record.read_text().splitlines()

    def stderr(self) -> str:
        return self.stderr_tail(10_000)[-4000:]

    def kill(self) -> None:
        kill_group(self.process, signal.SIGKILL, grace=10.0)
        self.close_stdin()
        self._stderr.close()


# ------------------------------ still serving (after an attack or a fault)


def http_serving(
    rel: Rel,
    server: ServerProcess,
    client: httpx.Client | None = None,
    headers: dict[str, str] | None = None,
) -> None:
    """The HTTP server is up and answers the next valid request (a crash or a lost request
    goes to the ledger).  ``headers`` are added to the modern ones (a token)."""
    assert rel.alive(server), server.log_text()[-2000:]
    nonce = uuid.uuid4().hex
    message = call_tool(next_id(), "echo", {"nonce": nonce})
    with contextlib.ExitStack() as stack:
        http = client or stack.enter_context(httpx.Client(timeout=10))
        reply = post(http, server.url, message, {**modern_headers(message), **(headers or {})})
    if reply.status != 200 or not isinstance(reply.body, dict) or "result" not in reply.body:
        rel.lost()
    assert reply.status == 200 and reply.result["content"][0]["text"] == nonce, reply.describe()
    rel.verified()


def stdio_serving(rel: Rel, proc: StdioProcess) -> None:
    """The stdio server is up and answers the next valid request (crash/lost recorded)."""
    nonce = uuid.uuid4().hex
    try:
        answer = proc.request(call_tool(next_id(), "echo", {"nonce": nonce}))
    except (AssertionError, OSError) as exc:
        if rel.alive(proc, grace=2):
            rel.lost()
        raise AssertionError(
            f"stdio server not serving ({exc!r}); stderr:\n{proc.stderr()}"
        ) from None
    assert answer["result"]["content"][0]["text"] == nonce
    rel.verified()


@contextlib.contextmanager
def stdio_server(workdir: Path, **env: str) -> Iterator[StdioProcess]:
    proc = StdioProcess(workdir, SERVER_FILE, **env)
    try:
        yield proc
    finally:
        proc.kill()


def raw_http(port: int, data: bytes, timeout: float = 5.0) -> tuple[bytes, bool]:
    """Send raw bytes on a fresh connection; return (everything read, closed by server)."""
    with socket.create_connection(("127.0.0.1", port), timeout) as sock:
        sock.sendall(data)
        chunks: list[bytes] = []
        closed = False
        sock.settimeout(timeout)
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    closed = True
                    break
                chunks.append(chunk)
                if _complete_response(b"".join(chunks)):
                    # give the server a moment to close (or not)
                    sock.settimeout(0.5)
        except TimeoutError:
            pass
        except ConnectionResetError:
            closed = True
        return b"".join(chunks), closed


def _complete_response(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return True


def status_of(raw: bytes) -> int:
    line = raw.split(b"\r\n", 1)[0]
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def body_of(raw: bytes) -> bytes:
    return raw.partition(b"\r\n\r\n")[2]


# ------------------------------ lean async HTTP/1.1


def http_request(path: str, headers: dict[str, str], body: bytes, method: str = "POST") -> bytes:
    lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{lines}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


class RawResponse:
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


async def read_response(stream: Any, buffer: bytearray) -> RawResponse:
    """One Content-Length-framed response from an anyio byte stream (``buffer`` keeps
    bytes of the next pipelined response)."""
    while b"\r\n\r\n" not in buffer:
        buffer += await stream.receive()
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        rest += await stream.receive()
    buffer[:] = rest[length:]
    return RawResponse(status, headers, rest[:length])


async def pipelined(port: int, requests: list[bytes], depth: int = 32) -> list[RawResponse]:
    """Send ``requests`` on one keep-alive connection, ``depth`` at a time (HTTP/1.1
    pipelining), and return the responses in order.  Much cheaper than a full client, so
    the load lands on the server, not on the test process."""
    import anyio

    out: list[RawResponse] = []
    buffer = bytearray()
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        for start in range(0, len(requests), depth):
            batch = requests[start : start + depth]
            await stream.send(b"".join(batch))
            for _ in batch:
                out.append(await read_response(stream, buffer))
    return out
