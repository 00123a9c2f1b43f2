"""The official conformance requirement sets, run against the gateway fronting the
conformance fixture server (one upstream, no prefix): whatever the fixture passes on its
own must still pass with the gateway in between, for both protocol revisions."""

from __future__ import annotations

from pathlib import Path

import gwkit
import pytest

from support.servers import need

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def front(log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    need("node")
    need("npm")
    upstream = gwkit.start_upstream("fixture", log_dir, gwkit.CONFORMANCE)
    stack.append(upstream)
    config = '[gateway]\nstate = "memory:"\n' + gwkit.toml_upstream("fixture", url=upstream.url)
    gateway = gwkit.start_gateway("gateway", log_dir, config)
    stack.append(gateway)
    return gateway


@pytest.mark.parametrize(("requirements", "minimum"), [("2026-07-28", 37), ("2025-11-25", 30)])
def test_requirement_set_through_gateway(
    front: gwkit.Proc, requirements: str, minimum: int, tmp_path: Path
) -> None:
    from harness import run_server_suite

    result = run_server_suite(front.url, requirements=requirements, output_dir=tmp_path)
    assert result.failed == 0 and result.passed >= minimum, result.summary()
