"""The wheel and sdist, built once per worker, and the base install (no extras) that the
folder's tests share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from installkit import REPO, Env, make_env


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The wheel and the sdist, built from this checkout the way a release is."""
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = out.glob("mcpkit-*.whl")
    (sdist,) = out.glob("mcpkit-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


@pytest.fixture(scope="session")
def base(dist: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Env:
    return make_env(tmp_path_factory.mktemp("base"), dist["wheel"])
