"""``examples/middleware.py`` runs as a user would run it, and serves over HTTP with the
tenant header reaching the middleware (a real subprocess on 127.0.0.1)."""

from __future__ import annotations

import subprocess
import sys

from support.httpclient import McpHttp
from support.servers import REPO_ROOT, http_subprocess

EXAMPLE = REPO_ROOT / "examples" / "middleware.py"


def test_the_tour_prints_what_each_feature_does() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "add -> 5.0" in out
    assert "slow(2) -> Tool slow timed out after 0.5 s and was cancelled" in out
    assert "divide(1, 0) -> Error executing tool divide (correlation id " in out
    assert "division by zero" not in out  # masked for the client...
    assert "ZeroDivisionError" in done.stderr  # ...kept in the server log
    assert "plot (JSON string) -> 1 points" in out
    assert "purge_cache" not in out.split("tools an anonymous caller sees:")[1].splitlines()[0]
    assert "purge_cache as anonymous -> Unknown tool: purge_cache" in out


def test_served_over_http_the_middleware_sees_the_tenant(tmp_path: object) -> None:
    with http_subprocess(tmp_path, EXAMPLE) as running:  # type: ignore[arg-type]
        client = McpHttp(running.url, running.alive)
        try:
            reply = client.modern("tools/call", {"name": "whoami"}, headers={"X-Tenant": "acme"})
            assert reply.result["_meta"]["example/tenant"] == "acme"
            assert reply.result["structuredContent"]["tenant"] == "acme"
        finally:
            client.close()


def test_the_toolkit_tour() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / "toolkit.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert 'forecast.city -> The city\'s name, e.g. "Oslo".' in out
    assert "book asks for -> ['meal', 'name', 'seats']" in out
    assert "book -> Booked 4 seats for Ada (veg)" in out
    assert "chart -> image/png" in out
    assert "docs://examples has toolkit.py -> True" in out
    assert "docs://examples/..%2FREADME.md -> Resource not found" in out
