"""Real servers for the suite: subprocesses and in-process uvicorn, on 127.0.0.1.

* :func:`spawn`, :func:`wait_port`, :func:`kill_group` and :func:`free_port`: the one way
  the suite starts a process (its own process group, output in a log file), waits for its
  port and stops it with all its children.  The kits of each folder (``clientkit``,
  ``gwkit``, ``relkit``, ``scaleout/services``) build their fixtures on these.
* :func:`http_subprocess` starts ``python -m mcpkit serve TARGET --http`` exactly as a user
  would, on a free port, waits until it answers HTTP, and kills its whole process group at
  the end.  A failure to start shows the tail of its output.
* :class:`ThreadServer` runs an ASGI app on a real uvicorn in a background thread, for
  configurations the command line cannot express (small limits, custom tools that record
  what happened to them in shared state).
* :class:`StdioProcess` drives ``python -m mcpkit serve TARGET`` over real pipes, one JSON
  line at a time, with timeouts (a reader thread feeds a queue, so nothing blocks forever).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS_DIR = REPO_ROOT / "tests"
CONFORMANCE_SERVER = TESTS_DIR / "conformance" / "server.py"
SERVERS_DIR = TESTS_DIR / "servers"
STARTUP_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve_argv(target: str | Path, *args: str) -> list[str]:
    """``mcpkit serve TARGET ARGS...`` as a user types it, run by this interpreter."""
    return [sys.executable, "-m", "mcpkit", "serve", str(target), *args]


def run_mcpkit(
    *args: str, cwd: Path, stdin: str | None = None, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """``mcpkit ARGS...`` run to its end in ``cwd``, as a person types it; output captured
    as text (``stdin``: what they type, else nothing)."""
    return subprocess.run(
        [sys.executable, "-m", "mcpkit", *args],
        cwd=cwd,
        text=True,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for server subprocesses: shared sealing keys (no key file written into
    the working tree) and unbuffered output so a crash shows its last words."""
    env = dict(os.environ)
    env["MCPKIT_SEALING_KEYS"] = "test-sealing-secret"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no output file)"
    return "\n".join(text.splitlines()[-lines:]) or "(no output)"


def kill_group(
    process: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace: float = 5.0
) -> None:
    """``sig`` (SIGTERM unless told) to the process group started by :func:`spawn`, then
    SIGKILL if it is still there after ``grace`` seconds."""
    for current in (sig, signal.SIGKILL):
        if process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, current)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)


def spawn(
    argv: Sequence[str],
    log: Path,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    append: bool = False,
    inherit_env: bool = True,
    stdin: int = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` as a user would: in its own process group (so :func:`kill_group`
    takes its children too), stdin closed (``stdin=subprocess.PIPE``: a pipe the test
    writes to, as a person at a terminal would), stdout and stderr into ``log``, our environment
    plus ``env`` (``env`` alone with ``inherit_env=False``: a fresh venv's), in ``cwd``
    (the repository by default).  The one place the suite starts a long-running process;
    the folder kits (``gwkit``, ``relkit``, ``services``, ``clientkit``) build their
    fixtures on it."""
    with open(log, "ab" if append else "wb") as sink:
        return subprocess.Popen(
            list(argv),
            cwd=cwd or REPO_ROOT,
            env={**(os.environ if inherit_env else {}), **(env or {})},
            stdin=stdin,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_port(
    port: int,
    process: subprocess.Popen[bytes] | None = None,
    log: Path | None = None,
    *,
    timeout: float = STARTUP_TIMEOUT,
) -> None:
    """Return once something accepts TCP connections on 127.0.0.1:``port``; a
    ``RuntimeError`` (with the tail of ``log``) if ``process`` exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"process exited with {process.returncode} before listening on "
                f"{port}:\n{tail(log) if log else ''}"
            )
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"nothing listening on 127.0.0.1:{port} after {timeout}s:\n"
                f"{tail(log) if log else ''}"
            )
        time.sleep(0.05)


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (exited, not yet reaped): whether a
    process a test meant to stop, or to leave running, really is gone or there."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # gone since os.kill (where /proc exists)
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def need(binary: str) -> None:
    """Skip the test without ``binary`` (on PATH or in /usr/sbin); in CI (``CI=true``), where
    ``.ci/run`` installs every tool the suite uses, its absence is a failure instead."""
    if shutil.which(binary) is None and not Path(f"/usr/sbin/{binary}").exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{binary} is required in CI (CI=true; .ci/run installs it)")
        pytest.skip(f"{binary} is not installed")


@contextlib.contextmanager
def redis_server() -> Iterator[int]:
    """A real ``redis-server`` on a free 127.0.0.1 port, nothing persisted; yields the port.
    Skips the test when Redis is not installed (``.ci/run`` installs it)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (.ci/run installs it)")
    port = free_port()
    with tempfile.TemporaryDirectory() as scratch:
        process = spawn(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                scratch,
            ],
            Path(scratch) / "redis.log",
        )
        try:
            try:
                wait_port(port, process)
            except RuntimeError as exc:
                pytest.fail(f"redis-server did not start on {port}: {exc}")
            yield port
        finally:
            kill_group(process)


# --------------------------------------------------------------------------- HTTP subprocess


@dataclass
class ProcessServer:
    """A running ``mcpkit serve --http`` process."""

    url: str
    port: int
    process: subprocess.Popen[bytes]
    output: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def output_tail(self, lines: int = 40) -> str:
        return tail(self.output, lines)


def _answers_http(url: str) -> bool:
    try:
        httpx.get(url, timeout=2.0)
    except httpx.HTTPError:
        return False
    return True


@contextlib.contextmanager
def http_subprocess(
    output_dir: Path, target: Path = CONFORMANCE_SERVER, *args: str
) -> Iterator[ProcessServer]:
    port = free_port()
    output = output_dir / "server-output.log"
    cmd = serve_argv(target, "--http", "--port", str(port))
    cmd += list(args)
    # Its state in this folder, as the servers started in one folder shared it before they
    # kept it in the per-user data directory: two started here are replicas of one server.
    env = subprocess_env(XDG_DATA_HOME=str(output_dir / "user-data"))
    process = spawn(cmd, output, env=env, cwd=output_dir)
    server = ProcessServer(f"http://127.0.0.1:{port}/mcp", port, process, output)
    try:
        try:
            wait_http(server.url, process, output)
        except RuntimeError as exc:
            pytest.fail(f"mcpkit serve: {exc}")
        yield server
    finally:
        kill_group(process)


def wait_http(
    url: str,
    process: subprocess.Popen[bytes] | None = None,
    log: Path | None = None,
    *,
    timeout: float = STARTUP_TIMEOUT,
) -> None:
    """Like :func:`wait_port`, until ``url`` answers HTTP (any status)."""
    deadline = time.monotonic() + timeout
    while not _answers_http(url):
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"exited with {process.returncode} during startup:\n{tail(log) if log else ''}"
            )
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{url} did not answer after {timeout}s:\n{tail(log) if log else ''}"
            )
        time.sleep(0.1)


# --------------------------------------------------------------------------- in-process uvicorn


class ThreadServer:
    """An ASGI app served by uvicorn in a daemon thread on a pre-bound 127.0.0.1 socket."""

    def __init__(
        self, app: Any = None, *, make_app: Callable[[str], Any] | None = None, **config: Any
    ) -> None:
        """Serve ``app``, or ``make_app(base_url)`` for an app that must know its own URL
        (an OAuth issuer, a protected resource)."""
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = self.base + "/mcp"
        self.app = make_app(self.base) if make_app is not None else app
        app = self.app
        options: dict[str, Any] = {
            "log_level": "warning",
            "lifespan": "on",
            "loop": "asyncio",
            "timeout_graceful_shutdown": 2,
        }
        options.update(config)
        from mcpkit.transports.http.server import server_class

        self.server = server_class()(uvicorn.Config(app, **options))
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, name="uvicorn-test", daemon=True)

    def _run(self) -> None:
        try:
            self.server.run(sockets=[self.sock])
        except BaseException as exc:  # surfaced by start()/alive()
            self.errors.append(exc)

    def start(self) -> ThreadServer:
        self.thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start: {self.errors!r}")
            time.sleep(0.01)
        return self

    def alive(self) -> bool:
        return self.thread.is_alive() and not self.server.should_exit

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()

    def __enter__(self) -> ThreadServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def serve_app(make_app: Callable[[str], Any]) -> Iterator[tuple[str, Any]]:
    """``make_app(base_url)`` served by a :class:`ThreadServer` (lifespan run when the app
    has one); yields ``(base URL, app)``.  For apps that must know their own URL: an OAuth
    authorization server, a protected resource."""
    with ThreadServer(make_app=make_app, lifespan="auto") as running:
        yield running.base, running.app


# --------------------------------------------------------------------------- stdio subprocess


class StdioProcess:
    """``python -m mcpkit serve TARGET`` on real pipes; one JSON-RPC message per line."""

    def __init__(
        self,
        target: Path,
        workdir: Path,
        *,
        env: dict[str, str] | None = None,
        args: Sequence[str] = (),
        stderr_name: str = "stdio-stderr.log",
    ) -> None:
        self.stderr_path = workdir / stderr_name
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            serve_argv(target, *args),
            cwd=workdir,
            env=env or subprocess_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
            bufsize=0,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.raw_lines: list[bytes] = []
        self._reader = threading.Thread(target=self._read, name="stdio-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for line in iter(stdout.readline, b""):
            self.raw_lines.append(line)
            self.lines.put(line)
        self.lines.put(None)

    # ----- writing
    def send_raw(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def close_stdin(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()

    # ----- reading
    def recv_line(self, timeout: float = 10.0) -> bytes:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no output from the stdio server within {timeout}s\nstderr:\n{self.stderr_tail()}"
            ) from None
        if line is None:
            self.lines.put(None)  # stay at EOF for later reads
            raise AssertionError(f"stdio server closed stdout\nstderr:\n{self.stderr_tail()}")
        return line

    def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next message; asserts the line is exactly one JSON object plus ``\\n``."""
        line = self.recv_line(timeout)
        assert line.endswith(b"\n"), line
        body = line[:-1]
        assert b"\n" not in body and b"\r" not in body, line
        try:
            message = json.loads(body)
        except ValueError as exc:
            raise AssertionError(f"stdout line is not JSON: {line[:200]!r}") from exc
        assert isinstance(message, dict), message
        return message

    def no_output(self, wait: float) -> bool:
        """True when nothing arrives within ``wait`` seconds."""
        try:
            line = self.lines.get(timeout=wait)
        except queue.Empty:
            return True
        self.lines.put(line)  # keep it (order is irrelevant for callers of this)
        return False

    def stderr_tail(self, lines: int = 40) -> str:
        self._stderr.flush()
        return tail(self.stderr_path, lines)

    def output_tail(self, lines: int = 40) -> str:
        """For the failure report hook in tests/conftest.py: the server's stderr."""
        return self.stderr_tail(lines)

    def stop(self) -> None:
        self.close_stdin()
        kill_group(self.process)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()
