"""Fixtures for the gateway tests: real upstream and gateway processes on free ports.

Each test module builds its own topology (module-scoped, so processes start once per
module); :mod:`gwkit` has the process and wire helpers.  A failing test's report gets the
log tails of every process still running, which is usually where the explanation is.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from pluggy import Result

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "conformance"))

import gwkit  # noqa: E402

sys.path.insert(0, str(HERE.parent / "auth"))
from authkit import LocalAuthorizationServer  # noqa: E402

from support.servers import serve_app  # noqa: E402


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    return tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def authz() -> Iterator[LocalAuthorizationServer]:
    """The test-double OAuth authorization server of ``examples/auth``, in this process
    (its request log can be read), with a machine client ``robot`` / ``s3cret``."""
    with serve_app(lambda base: LocalAuthorizationServer(base)) as (_, app):
        app.add_client("robot", "s3cret")
        yield app


@pytest.fixture(scope="module")
def stack() -> Iterator[list[gwkit.Proc]]:
    """Processes to stop when the module is done (append what you start)."""
    procs: list[gwkit.Proc] = []
    yield procs
    for p in reversed(procs):
        p.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Result[pytest.TestReport], None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and gwkit.RUNNING:
        tails = "\n\n".join(p.tail(25) for p in gwkit.RUNNING)
        report.sections.append(("gateway test processes (log tails)", tails))
