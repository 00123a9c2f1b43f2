"""The gateway's operations endpoints for a scraper with a token: ``[gateway]
metrics_token`` guards ``/metrics`` with a bearer token, and the same token asks
``/readyz`` for the internal details (each upstream's error) it keeps from anyone else."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import gwkit
import httpx
import pytest

from support.waits import eventually

TOKEN = "scrape-secret"


@pytest.fixture(scope="module")
def gateway(log_dir: Path, stack: list[gwkit.Proc]) -> Iterator[gwkit.Proc]:
    up = gwkit.start_upstream("up", log_dir)
    stack.append(up)
    nowhere = f"http://127.0.0.1:{gwkit.free_port()}/mcp"  # nothing listens there
    config = (
        f'[gateway]\nstate = "memory:"\nready = ["up"]\nmetrics_token = "{TOKEN}"\n'
        + gwkit.toml_upstream("up", url=up.url, prefix="up_")
        + gwkit.toml_upstream("gone", url=nowhere, prefix="gone_")
    )
    gw = gwkit.start_gateway("gw-ops", log_dir, config)
    stack.append(gw)
    yield gw


def test_metrics_need_the_token(gateway: gwkit.Proc) -> None:
    url = gateway.base + "/metrics"
    anonymous = httpx.get(url)
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].lower().startswith("bearer")
    wrong = httpx.get(url, headers={"authorization": "Bearer not-it"})
    assert wrong.status_code == 401
    scraped = httpx.get(url, headers={"authorization": f"Bearer {TOKEN}"})
    assert scraped.status_code == 200 and "mcp_gateway_upstream_up" in scraped.text


def test_readiness_details_only_with_the_token(gateway: gwkit.Proc) -> None:
    url = gateway.base + "/readyz"
    eventually(lambda: httpx.get(url).status_code == 200, 30)  # "up" is what ready needs
    public = httpx.get(url).json()
    assert public["upstreams"] == {"up": "up", "gone": "down"}, public
    detailed = httpx.get(url, headers={"authorization": f"Bearer {TOKEN}"}).json()
    assert detailed["upstreams"]["gone"].startswith("down: "), detailed
    assert len(detailed["upstreams"]["gone"]) > len("down: ")
    assert httpx.get(gateway.base + "/livez").status_code == 200  # no token needed
