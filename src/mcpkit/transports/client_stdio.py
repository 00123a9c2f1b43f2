"""stdio client transport: spawn a server and speak newline-delimited JSON-RPC over its pipes.

JSON-RPC itself (framing, ids, progress-extended timeouts, ``notifications/cancelled`` on
timeout or cancellation) is the shared :class:`~mcpkit.runtime.endpoint.Endpoint`, and the
client side of it (listen routing, error mapping) the shared
:class:`~mcpkit.transports.client_endpoint.EndpointClientTransport`.  This
module adds what is specific to owning a child process, each point learnt from a failure
somebody shipped:

* The server runs in its own process group, so shutdown reaches the whole tree: wrappers
  such as ``npx``/``uvx``/``sh -c`` and the subprocesses a tool starts, which would
  otherwise outlive us holding the pipes open.  Our pipe ends are close-on-exec, so no
  other child of this process inherits (and keeps open) the server's stdin.
* Shutdown follows the spec: close stdin, wait, SIGTERM the group, wait, SIGKILL it, all
  bounded and shielded from cancellation.
* stderr is read continuously (a chatty server must never block on a full pipe); its last
  lines are kept and quoted in every error that the server's death explains.
* Exit is detected by polling the return code, not only by stdout EOF: a grandchild that
  inherited stdout keeps the pipe open after the server died, and on Python 3.11 asyncio
  even delays ``wait()`` until every pipe is closed.  Pending requests fail at once.
* Lines on stdout that are not JSON-RPC (a stray ``print``) are logged and skipped, and
  named in a later timeout error so "it hung" becomes "it printed junk instead".
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import suppress
from typing import Literal

import anyio
import sniffio
from anyio.abc import Process

from ..runtime.endpoint import Endpoint
from .client_base import (
    ConnectionClosedError,
    ServerStartupError,
)
from .client_endpoint import EndpointClientTransport
from .stdio_io import PipeEndpoint, drain, open_pipe_writer

log = logging.getLogger("mcpkit.client.stdio")
stderr_log = logging.getLogger("mcpkit.client.stderr")

StderrMode = Literal["capture", "inherit"] | Callable[[str], None]

_TAIL_LINES = 40
_TAIL_LINE_CHARS = 500
_EXIT_POLL_S = 0.1


class StdioTransport(EndpointClientTransport):
    """One server process; use as ``async with StdioTransport([...]) as t``."""

    kind = "stdio"

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        cwd: str | os.PathLike[str] | None = None,
        stderr: StderrMode = "capture",
        shutdown_grace: float = 2.0,
        max_line: int = 16 * 1024 * 1024,
    ) -> None:
        if not command:
            raise ValueError("an empty command cannot start a server")
        self.command = [str(part) for part in command]
        self.env = env
        self.inherit_env = inherit_env
        self.cwd = cwd
        self.stderr_mode = stderr
        self.shutdown_grace = shutdown_grace
        self.max_line = max_line
        self.server_key = "stdio:" + shlex.join(self.command) + (f" (in {cwd})" if cwd else "")
        super().__init__()
        self._process: Process | None = None
        self._stderr_tail: deque[str] = deque(maxlen=_TAIL_LINES)
        self._junk_lines = 0
        self._last_junk = ""
        self._exit_code: int | None = None
        self._exited = anyio.Event()
        #: On asyncio the pipes are ours (plain pipe transports, see PipeEndpoint);
        #: elsewhere anyio's process streams.
        self._pipe: asyncio.StreamWriter | None = None
        self._chunks: AsyncIterator[bytes] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> StdioTransport:
        env = None
        if self.env is not None or not self.inherit_env:
            env = {**(os.environ if self.inherit_env else {}), **(self.env or {})}
        ours: tuple[int, int] | None = None  # (we write its stdin, we read its stdout)
        stdin = stdout = subprocess.PIPE
        if sniffio.current_async_library() == "asyncio":
            # Our own pipes (created close-on-exec, so no other child inherits our ends),
            # driven by plain pipe transports: see PipeEndpoint.
            stdin, ours_w = os.pipe()
            ours_r, stdout = os.pipe()
            ours = (ours_w, ours_r)
        try:
            self._process = await anyio.open_process(
                self.command,
                stdin=stdin,
                stdout=stdout,
                stderr=None if self.stderr_mode == "inherit" else subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                start_new_session=os.name == "posix",
            )
        except OSError as exc:
            if ours is not None:
                os.close(ours[0])
                os.close(ours[1])
            what = str(exc)
            if isinstance(exc, FileNotFoundError):
                where = f" (cwd {self.cwd})" if self.cwd else ""
                what = f"{exc.strerror}: {exc.filename or self.command[0]!r}{where}"
            raise ServerStartupError(
                f"cannot start server {shlex.join(self.command)!r}: {what}"
            ) from None
        finally:
            if ours is not None:  # the child's ends: it has its own copies now
                os.close(stdin)
                os.close(stdout)
        endpoint: Endpoint
        if ours is not None:
            self._pipe = await open_pipe_writer(ours[0])
            endpoint = PipeEndpoint(
                self._pipe,
                self._serve_request,
                self._notification,
                flush=self._flush,
                max_line=self.max_line,
            )
            self._chunks = await endpoint.open_reader(ours[1])
        else:
            endpoint = Endpoint(
                self._write, self._serve_request, self._notification, max_line=self.max_line
            )
        endpoint.on_invalid = self._junk
        tg = await self._open(endpoint)
        tg.start_soon(self._read_stdout, endpoint)
        if self._process.stderr is not None:
            tg.start_soon(self._read_stderr)
        tg.start_soon(self._watch_exit)
        return self

    async def _shutdown(self) -> None:
        process = self._process
        if process is None:
            return
        if self._endpoint is not None:
            self._endpoint.close("the client closed the connection")
        if self._pipe is not None:
            self._pipe.close()  # EOF on its stdin once what is buffered went out
        elif process.stdin is not None:
            with anyio.move_on_after(1):
                with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await process.stdin.aclose()
        if not await self._wait_exit(self.shutdown_grace):
            log.info("server %s ignored stdin EOF; sending SIGTERM", self.command[0])
            self._signal(signal.SIGTERM)
            if not await self._wait_exit(self.shutdown_grace):
                log.warning("server %s ignored SIGTERM; sending SIGKILL", self.command[0])
                self._signal(getattr(signal, "SIGKILL", signal.SIGTERM))
                await self._wait_exit(self.shutdown_grace)
        # Whatever the server left behind in its group (tool subprocesses) goes too.
        if self._group_alive():
            self._signal(signal.SIGTERM, group_only=True)
            with anyio.move_on_after(min(self.shutdown_grace, 0.5)):
                while self._group_alive():
                    await anyio.sleep(0.05)
            self._signal(getattr(signal, "SIGKILL", signal.SIGTERM), group_only=True)
        with anyio.move_on_after(2):
            await process.aclose()

    def _group_alive(self) -> bool:
        if os.name != "posix" or self._process is None:
            return False
        try:
            os.killpg(self._process.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def _signal(self, sig: signal.Signals, *, group_only: bool = False) -> None:
        process = self._process
        if process is None:
            return
        if os.name == "posix":
            try:
                os.killpg(process.pid, sig)
                return
            except (ProcessLookupError, PermissionError):
                if group_only:
                    return
        if group_only or process.returncode is not None:
            return
        with suppress(ProcessLookupError):
            process.send_signal(sig)

    async def _wait_exit(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await self._exited.wait()
        return self._exited.is_set()

    async def _watch_exit(self) -> None:
        """Poll the return code: EOF on stdout is not a reliable death notice."""
        process = self._process
        assert process is not None
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_S)
        self._exit_code = process.returncode
        self._exited.set()
        endpoint = self._endpoint
        if endpoint is not None and endpoint.closed is None:
            with anyio.move_on_after(0.5):  # let the reader deliver the last answers first
                while endpoint.closed is None:
                    await anyio.sleep(0.02)
            endpoint.close(f"the server process exited with code {self._exit_code}")

    # ------------------------------------------------------------------ pipes
    async def _write(self, data: bytes) -> None:
        process = self._process
        if process is None or process.stdin is None:
            raise ConnectionClosedError("the server process is not running")
        try:
            await process.stdin.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise ConnectionClosedError(await self._closed_detail("writing to it")) from None

    async def _flush(self) -> None:
        """Wait until the server's stdin pipe drained (raises if it broke)."""
        assert self._pipe is not None
        try:
            await drain(self._pipe)
        except (anyio.BrokenResourceError, OSError):
            raise ConnectionClosedError(await self._closed_detail("writing to it")) from None

    async def _read_stdout(self, endpoint: Endpoint) -> None:
        process = self._process
        assert process is not None
        chunks = self._chunks if self._chunks is not None else process.stdout
        assert chunks is not None
        try:
            await endpoint.run(chunks)
        except Exception:  # never let a reader crash cancel the caller's code
            log.exception("stdio reader failed")
            endpoint.close("reading the server's stdout failed")
        # Listen streams end through their pending request, which the endpoint just failed:
        # that records the error first, so an abrupt end never looks like a graceful one.

    async def _read_stderr(self) -> None:
        process = self._process
        assert process is not None and process.stderr is not None
        sink = self.stderr_mode if callable(self.stderr_mode) else None
        pending = b""
        try:
            async for chunk in process.stderr:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if len(pending) > 64 * 1024:  # a line without end: keep reading, keep a bound
                    lines.append(pending)
                    pending = b""
                for raw in lines:
                    self._stderr_line(raw, sink)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        if pending:
            self._stderr_line(pending, sink)

    def _stderr_line(self, raw: bytes, sink: Callable[[str], None] | None) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        self._stderr_tail.append(text[:_TAIL_LINE_CHARS])
        if sink is not None:
            try:
                sink(text)
            except Exception:
                log.exception("stderr callback failed")
        else:
            stderr_log.debug("%s: %s", self.command[0], text)

    def _junk(self, line: bytes, why: str) -> None:
        self._junk_lines += 1
        self._last_junk = line[:200].decode("utf-8", "replace")
        log.warning(
            "server %s wrote a line that is not JSON-RPC (%s): %r",
            self.command[0],
            why,
            self._last_junk,
        )

    # ------------------------------------------------------------------ diagnostics
    async def _closed_detail(self, doing: str) -> str:
        if self._exit_code is None:
            await self._wait_exit(1.0)
        if self._exit_code is not None:
            text = f"the server process exited with code {self._exit_code} while {doing}"
            if self._exit_code == 0 and doing.startswith(_FIRST_REQUESTS):
                text += _EXITED_AT_ONCE
        else:
            text = f"the server closed its output while {doing}"
        return text + self._stderr_note()

    def _timeout_detail(self) -> str:
        parts = []
        if self._junk_lines:
            parts.append(
                f"meanwhile it wrote {self._junk_lines} line(s) that are not JSON-RPC, "
                f"last: {self._last_junk!r}"
            )
        if self._stderr_tail:
            parts.append(f"last stderr line: {self._stderr_tail[-1]!r}")
        return "; ".join(parts)

    def _stderr_note(self) -> str:
        if not self._stderr_tail:
            return ""
        lines = "\n".join(f"  | {line}" for line in self._stderr_tail)
        return f"\nserver stderr (last {len(self._stderr_tail)} lines):\n{lines}"

    def describe(self) -> str:
        if self._process is None:
            return f"server command {shlex.join(self.command)!r} (not started)"
        state = (
            f"exited with code {self._exit_code}"
            if self._exit_code is not None
            else f"running as pid {self._process.pid}"
        )
        return f"server {shlex.join(self.command)!r} {state}" + self._stderr_note()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def stderr_tail(self) -> list[str]:
        return list(self._stderr_tail)


#: The requests that open a connection: a clean exit during one of them means the process
#: never meant to serve (the usual case: a file that defines a server and ends).
_FIRST_REQUESTS = ("server/discover", "initialize")
_EXITED_AT_ONCE = (
    "\nhint: a process that exits with code 0 before answering usually defines a server "
    "without running it. Serve the file with `mcpkit serve FILE.py` (or pass the file itself "
    "as the target: Client('FILE.py'), `mcpkit list FILE.py`), or end it with "
    "`if __name__ == '__main__': server.run()`."
)

__all__ = ["StderrMode", "StdioTransport"]
