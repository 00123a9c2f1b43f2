"""Commands the guides show, run as printed against what they describe."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from support.servers import free_port, kill_group, run_mcpkit, spawn, wait_http

REPO = Path(__file__).resolve().parents[2]
GATEWAY_GUIDE = REPO / "docs" / "guides" / "gateway.md"


def _guide_command(page: Path, starts: str) -> list[str]:
    """The words of the first command line of ``page`` that starts with ``starts``."""
    (line,) = [line for line in page.read_text().splitlines() if line.startswith(starts)][:1]
    return shlex.split(line.split(" #")[0])


def test_the_gateway_guide_shows_the_bearer_token_its_example_needs(tmp_path: Path) -> None:
    port = free_port()
    words = _guide_command(GATEWAY_GUIDE, "mcpkit list http://127.0.0.1:8080/mcp")
    assert "-H" in words and words[words.index("-H") + 1].startswith("Authorization: Bearer ")
    log = tmp_path / "gateway.log"
    argv = ["mcpkit", "gateway", "examples/gateway.toml", "--port", str(port)]
    proc = spawn([sys.executable, "-m", *argv], log, cwd=REPO)
    try:
        wait_http(f"http://127.0.0.1:{port}/readyz", proc, log, timeout=90)
        url = f"http://127.0.0.1:{port}/mcp"
        listed = run_mcpkit(*[url if w.endswith("/mcp") else w for w in words[1:]], cwd=tmp_path)
        refused = run_mcpkit("list", url, cwd=tmp_path)
    finally:
        kill_group(proc)
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"demo_add\(", listed.stdout), listed.stdout
    # Without the token: one line that says what the gateway wants (it offers no OAuth
    # sign-in for the command line to run), and no traceback.
    assert refused.returncode != 0, refused.stderr
    assert "offers no OAuth sign-in" in refused.stderr, refused.stderr
    assert "Authorization: Bearer" in refused.stderr and "Traceback" not in refused.stderr
