"""The official MCP Python SDK in a cached virtualenv, for every test that runs it as a peer.

One venv, ``.installed`` marker and install lock for the client, host and gateway tests
(``~/.cache/mcpkit-tests/sdk-mcp-2.3.0``, override the folder with ``MCPKIT_TEST_CACHE``),
so the SDK is downloaded once, never into the project's own venv.  Without PyPI the tests
that need it are skipped with pip's reason, except in CI (``CI=true``), where that is a
failure.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SDK_VERSION = "2.3.0"
CACHE = Path(os.environ.get("MCPKIT_TEST_CACHE") or Path.home() / ".cache" / "mcpkit-tests")
VENV = CACHE / f"sdk-mcp-{SDK_VERSION}"


def _install(python: Path) -> str | None:
    if VENV.exists():
        shutil.rmtree(VENV)  # a half-finished earlier attempt
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=120)
    proc = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"mcp=={SDK_VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else f"pip exited with {proc.returncode}"
    return None


def sdk_python() -> Path:
    """The interpreter of the venv holding the SDK (installed on first use)."""
    python = VENV / "bin" / "python"
    marker = VENV / ".installed"
    if marker.exists():
        return python
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".sdk-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            try:
                problem = _install(python)
            except (OSError, subprocess.SubprocessError) as exc:
                problem = str(exc)
            if problem is not None:
                why = f"cannot install mcp=={SDK_VERSION} from PyPI: {problem}"
                if os.environ.get("CI", "").lower() == "true":
                    pytest.fail(f"{why} (CI=true: the interop test must run)")
                pytest.skip(why)
            marker.write_text(SDK_VERSION)
    return python
