"""Conformance tests need Node and npm (the official harness is an npm package).

A developer without Node gets a clear skip; CI (``CI=true``) must not quietly skip the suite
that proves conformance, so there a missing toolchain is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Generator

import pytest
from harness import HarnessError, node_version
from pluggy import Result


def _toolchain_problem() -> str | None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        return (
            f"{' and '.join(missing)} not found on PATH (the conformance harness is an npm package)"
        )
    try:
        major, minor = node_version()
    except (HarnessError, subprocess.SubprocessError, OSError, ValueError) as exc:
        return f"cannot run node: {exc}"
    if (major, minor) < (20, 6):
        return f"Node {major}.{minor} is too old for the conformance harness (need >= 20.6)"
    return None


@pytest.fixture(scope="session", autouse=True)
def _conformance_toolchain() -> None:
    problem = _toolchain_problem()
    if problem is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{problem}; CI=true, so this is a failure, not a skip")
    pytest.skip(problem)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Result[pytest.TestReport], None]:
    """Attach the fixture server's output tail to a failing conformance test's report."""
    outcome = yield
    report = outcome.get_result()
    server = getattr(item, "funcargs", {}).get("mcpkit_server")
    if report.failed and server is not None:
        report.sections.append(("mcpkit server output (tail)", server.output_tail()))
