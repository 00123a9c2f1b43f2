"""Real services for scale-out tests: redis-server, nginx and mcpkit server replicas.

Each starts as a child process bound to 127.0.0.1 on a free port, in its own process
group, and is stopped (SIGTERM, then SIGKILL) when its context exits.  Nothing here is a
mock: the tests talk to these over real sockets.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from support.servers import free_port, kill_group, serve_argv, spawn, tail, wait_port
from support.servers import redis_server as shared_redis_server

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = "tests/conformance/server.py"


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    kill_group(proc, sig, grace=10.0)


def _start(
    cmd: Sequence[str], log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    return spawn(cmd, log, env=env)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """The shared Redis of tests/support, as a URL.  Scale-out tests need it, so a machine
    without redis-server fails here instead of skipping."""
    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    with shared_redis_server() as port:
        yield f"redis://127.0.0.1:{port}/0"


@dataclass
class Replica:
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def tail(self, lines: int = 30) -> str:
        return tail(self.log, lines)

    def kill(self) -> None:
        stop(self.proc, signal.SIGKILL)


def start_replica(
    state: str, log_dir: Path, target: str = FIXTURE, *extra: str, **env: str
) -> Replica:
    """``mcpkit serve TARGET --http`` on ``state``, with ``extra`` arguments and ``env``."""
    port = free_port()
    log = log_dir / f"replica-{port}.log"
    argv = serve_argv(target, "--http", "--port", str(port), "--state", state, *extra)
    proc = _start(argv, log, {"MCPKIT_TASK_LEASE_S": "2", **env})
    try:
        wait_port(port, proc)
    except RuntimeError as exc:
        raise RuntimeError(f"{exc}\n{log.read_text(errors='replace')[-3000:]}") from None
    return Replica(port, proc, log)


_NGINX_CONF = """
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  upstream mcp {{
{servers}
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 300s;
      proxy_next_upstream off;
    }}
  }}
}}
"""


@contextlib.contextmanager
def nginx_round_robin(ports: Sequence[int]) -> Iterator[int]:
    binary = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if binary is None:
        raise RuntimeError("nginx is not installed (apt-get install nginx)")
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        servers = "\n".join(f"    server 127.0.0.1:{p};" for p in ports)
        conf = Path(tmp) / "nginx.conf"
        conf.write_text(_NGINX_CONF.format(tmp=tmp, servers=servers, port=port))
        proc = _start([binary, "-p", tmp, "-c", str(conf)], Path(tmp) / "stdout.log")
        try:
            wait_port(port, proc)
            yield port
        finally:
            stop(proc, signal.SIGQUIT)


TARGET = "tests/scaleout/cluster_server.py"


@dataclass
class Cluster:
    """Replicas sharing one state backend, and the URL in front of them (the ``cluster``
    fixture of conftest.py)."""

    backend: str
    state: str
    replicas: list[Replica]
    front: str
    log_dir: Path

    def replica(self, index: int) -> str:
        return self.replicas[index % len(self.replicas)].url

    def spawn(self) -> Replica:
        """One more replica on the same state (the caller kills it)."""
        return start_replica(self.state, self.log_dir, TARGET)

    def logs(self) -> str:
        return "\n\n".join(f"--- replica {r.port}\n{r.tail()}" for r in self.replicas)
