"""``mcpkit serve --http --server-card NAME``: the experimental Server Card extension's card
at ``<streamable-http-url>/server-card``, consistent with what the live server says."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from support.servers import free_port, http_subprocess, run_mcpkit

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart.py"


def test_the_card_is_served_beside_the_endpoint_and_matches_the_server(tmp_path: Path) -> None:
    args = ("--state", "memory:", "--server-card", "io.github.example/quickstart")
    with http_subprocess(tmp_path, QUICKSTART, *args) as server:
        answer = httpx.get(
            server.url + "/server-card", headers={"Accept": "application/mcp-server-card+json"}
        )
        listed = run_mcpkit("list", server.url, "--json", cwd=tmp_path)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/mcp-server-card+json"
    assert answer.headers["access-control-allow-origin"] == "*"
    card = answer.json()
    assert (
        card["$schema"]
        == "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"
    )
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", card["name"])
    (remote,) = card["remotes"]
    assert remote == {
        "type": "streamable-http",
        "url": server.url,
        "supportedProtocolVersions": remote["supportedProtocolVersions"],
    }
    live = json.loads(listed.stdout)["server"]
    assert (card["version"], card["description"]) == (live["version"], live["instructions"])
    assert live["protocolVersion"] in remote["supportedProtocolVersions"]
    assert "tools" not in card  # primitives stay with the live list requests


def test_without_the_flag_there_is_no_card(tmp_path: Path) -> None:
    with http_subprocess(tmp_path, QUICKSTART, "--state", "memory:") as server:
        answer = httpx.get(server.url + "/server-card")
    assert answer.status_code != 200


def test_a_card_name_that_is_not_reverse_dns_is_a_usage_error(tmp_path: Path) -> None:
    done = run_mcpkit(
        "serve",
        str(QUICKSTART),
        "--http",
        "--port",
        str(free_port()),
        "--server-card",
        "quickstart",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("mcpkit serve: --server-card 'quickstart': a reverse-DNS name")
