"""Reliability suite plumbing: the case ledger and its summary line, the Hypothesis
profile, and shared server fixtures.

The ledger counts every test item under ``tests/reliability`` as one case and collects
what tests report through the ``rel`` fixture (process crashes, lost requests, misrouted
responses, requests verified).  At the end of the session one line sums it up::

    reliability: 120 cases, 110 passed, 10 known bugs (xfail), 0 failed, 0 skipped,
    0 process crashes, 0 lost requests, 0 misrouted responses (53,214 requests verified)

Counters reported by tests that are marked as known bugs (``xfail(strict=True)``) are
summed on a second line, so a known crash never hides in (or pollutes) the main line.

Hypothesis: the ``reliability`` profile (used by default) runs 200 derandomized
examples per property with no deadline and replays, read-only, the example database
committed at ``tests/reliability/.hypothesis-db``.  ``MCPKIT_HYPOTHESIS_PROFILE=
reliability-explore`` fuzzes with random inputs and 5,000 examples and writes what it
finds (failing inputs, and the inputs that maximise the targeted work ratios) into that
database; commit it so CI replays them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from relkit import ServerProcess, StdioProcess  # noqa: E402

# ------------------------------ hypothesis

DB_PATH = HERE / ".hypothesis-db"
_COMMON: dict[str, Any] = {
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
}
# CI: a fixed budget, derandomized (the same inputs on every run), and the committed
# example database replayed first, read-only (a CI run never dirties the checkout).
# Hypothesis refuses derandomize=True together with a database in one settings object,
# but a child settings object may add a database to a derandomized parent.
settings.register_profile(
    "reliability",
    settings(
        settings(max_examples=200, derandomize=True, **_COMMON),
        database=ReadOnlyDatabase(DirectoryBasedExampleDatabase(str(DB_PATH))),
    ),
)
# Local fuzzing: random, 25x the budget, and whatever it finds (failures, and the inputs
# that maximise the targeted work ratios) is saved to the database to be committed.
settings.register_profile(
    "reliability-explore",
    max_examples=5000,
    derandomize=False,
    database=DirectoryBasedExampleDatabase(str(DB_PATH)),
    **_COMMON,
)
# Not loaded globally (that would change the settings of every other test module): the
# property tests apply the profile named by MCPKIT_HYPOTHESIS_PROFILE (default
# "reliability") themselves, with @settings.get_profile(...).

# ------------------------------ ledger

_COUNTERS: dict[str, Counter[str]] = defaultdict(Counter)
_OUTCOMES: dict[str, str] = {}


def _ours(nodeid_or_path: str) -> bool:
    return "tests/reliability/" in nodeid_or_path.replace(os.sep, "/")


class Rel:
    """What one test reports to the ledger."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid
        self.counts = _COUNTERS[nodeid]

    def crash(self, n: int = 1) -> None:
        self.counts["crashes"] += n

    def lost(self, n: int = 1) -> None:
        self.counts["lost"] += n

    def misrouted(self, n: int = 1) -> None:
        self.counts["misrouted"] += n

    def verified(self, n: int = 1) -> None:
        """``n`` requests whose answer was checked."""
        self.counts["verified"] += n

    def alive(self, server: ServerProcess | StdioProcess, grace: float = 0.0) -> bool:
        """Record a crash if ``server`` died (waiting up to ``grace`` seconds for a dying
        process to finish exiting); return whether it is up."""
        if grace > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.proc.wait(grace)
        if server.alive():
            return True
        self.crash()
        return False


@pytest.fixture
def rel(request: pytest.FixtureRequest) -> Rel:
    return Rel(request.node.nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not _ours(report.nodeid):
        return
    previous = _OUTCOMES.get(report.nodeid)
    if report.when == "setup":
        if report.failed:
            _OUTCOMES[report.nodeid] = "error"
        elif report.skipped:
            _OUTCOMES[report.nodeid] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    elif report.when == "call":
        if hasattr(report, "wasxfail"):
            _OUTCOMES[report.nodeid] = "xfailed" if report.skipped else "xpassed"
        elif report.passed:
            _OUTCOMES[report.nodeid] = "passed"
        elif report.skipped:
            _OUTCOMES[report.nodeid] = "skipped"
        else:
            _OUTCOMES[report.nodeid] = "failed"
    elif report.when == "teardown" and report.failed and previous == "passed":
        _OUTCOMES[report.nodeid] = "error"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _OUTCOMES:
        return
    outcomes = Counter(_OUTCOMES.values())
    main: Counter[str] = Counter()
    known: Counter[str] = Counter()
    for nodeid, counts in _COUNTERS.items():
        (known if _OUTCOMES.get(nodeid) == "xfailed" else main).update(counts)
    cases = len(_OUTCOMES)
    failed = outcomes["failed"] + outcomes["error"] + outcomes["xpassed"]
    line = (
        f"reliability: {cases} cases, {outcomes['passed']} passed, "
        f"{outcomes['xfailed']} known bugs (xfail), {failed} failed, "
        f"{outcomes['skipped']} skipped, {main['crashes']} process crashes, "
        f"{main['lost']} lost requests, {main['misrouted']} misrouted responses "
        f"({main['verified']:,} requests verified)"
    )
    terminalreporter.write_sep("=", "reliability summary")
    terminalreporter.write_line(line)
    if outcomes["xfailed"]:
        terminalreporter.write_line(
            f"reliability known bugs: {outcomes['xfailed']} xfail cases; seen in them: "
            f"{known['crashes']} process crashes, {known['lost']} lost requests, "
            f"{known['misrouted']} misrouted responses"
        )


# ------------------------------ fixtures


@pytest.fixture
def anyio_backend() -> str:
    """Real processes, pipes and uvicorn: asyncio only."""
    return "asyncio"


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    """One HTTP client for a module's requests to its servers."""
    with httpx.Client(timeout=15) as c:
        yield c


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rel")


@pytest.fixture(scope="module")
def http_cli(workdir: Path) -> Iterator[ServerProcess]:
    """``mcpkit serve rel_server.py --http`` with every default (one per module)."""
    server = ServerProcess.cli(workdir)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def stdio(tmp_path: Path) -> Iterator[StdioProcess]:
    """A fresh stdio server per test (some tests try to crash it)."""
    proc = StdioProcess(tmp_path)
    try:
        yield proc
    finally:
        proc.kill()
