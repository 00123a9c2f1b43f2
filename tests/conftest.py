"""Shared fixtures.

``anyio_backend`` runs async tests on asyncio and trio by default (the protocol core and
the server framework are backend-neutral); transport modules that need uvicorn or
subprocess pipes override it with asyncio only.  ``redis_url`` is a real Redis for the
folders that need one (state backends, scale-out, serverless, telemetry, the wheel).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator

import pytest
from pluggy import Result


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    return backend


@pytest.fixture(scope="session", autouse=True)
def _user_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Servers keep their state and sealing key files in the per-user data directory:
    the suite's (every worker's own, inherited by the processes it starts) is a
    temporary folder, never the real user's."""
    saved = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("user-data"))
    yield
    if saved is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = saved


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A real ``redis-server`` for the module's tests, as a URL (skipped without Redis,
    failed in CI: ``support.servers.need``)."""
    from support.servers import need, redis_server

    need("redis-server")
    with redis_server() as port:
        yield f"redis://127.0.0.1:{port}/0"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files holding a ``slow`` test run first, each file's tests still together and in
    order.  ``make test`` hands whole files to its workers in collection order, so a
    minute-long file collected last (the wheel installs, the README's ``pip`` block) kept
    one worker busy after the others had finished."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: order kept within


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Result[pytest.TestReport], None]:
    """A failing transport test shows the tail of its server's output (fixtures with an
    ``output_tail()``; the conformance suite attaches its own)."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for name, value in getattr(item, "funcargs", {}).items():
        tail = getattr(value, "output_tail", None)
        if callable(tail) and name != "mcpkit_server":
            report.sections.append((f"{name} output (tail)", tail()))
