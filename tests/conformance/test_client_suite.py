"""mcpkit's client under the official conformance harness's client scenarios.

The harness starts a mock server per scenario and runs our fixture
(``tests/conformance/client.py <url>``), which uses only the public ``mcpkit.client`` API.
Authorization scenarios (``auth/*``) are handed to ``auth_client.py`` (the OAuth client of
``mcpkit.auth``).  Every scored scenario of each requirement set must pass: 18 at 2025-11-25
and 32 at 2026-07-28.  The harness summary is printed either way (``pytest -s`` shows it on
success too).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from harness import SuiteResult, run_client_suite

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

FIXTURE = Path(__file__).resolve().parent / "client.py"
COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(FIXTURE))}"
#: Scored scenarios per requirement set (a floor: new ones must pass too).
MINIMUM = {"2025-11-25": 18, "2026-07-28": 32}
#: Non-auth scenarios each requirement set holds today.
EXPECTED = {
    "2025-11-25": {"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"},
    "2026-07-28": {
        "tools_call",
        "request-metadata",
        "sep-2322-client-request-state",
        "http-standard-headers",
        "http-custom-headers",
        "http-invalid-tool-headers",
        "json-schema-ref-no-deref",
    },
}


def _check(result: SuiteResult, requirements: str) -> None:
    print(result.summary())
    scored = {name: s for name, s in result.scenarios.items() if s.verdict != "not-scored"}
    assert EXPECTED[requirements] <= set(scored), result.summary()
    assert len(scored) >= MINIMUM[requirements], result.summary()
    failed = sorted(name for name, s in scored.items() if s.verdict != "passed")
    assert not failed, f"scenarios not passing: {failed}\n{result.summary()}"


@pytest.mark.parametrize("requirements", ["2025-11-25", "2026-07-28"])
def test_client_requirements(requirements: str, tmp_path: Path) -> None:
    result = run_client_suite(COMMAND, requirements=requirements, output_dir=tmp_path)
    _check(result, requirements)


@pytest.mark.parametrize("wire", ["2025-11-25", "2026-07-28"])
def test_json_schema_preservation(wire: str, tmp_path: Path) -> None:
    """Run but not scored by the harness at either revision; we hold ourselves to it."""
    name = "json-schema-2020-12-preservation"
    result = run_client_suite(COMMAND, scenario=name, spec_version=wire, output_dir=tmp_path)
    print(result.summary())
    assert result.verdict(name) == "passed", result.summary()
