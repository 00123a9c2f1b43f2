"""npm packages the tests run as peers (the TypeScript SDK's client, the Inspector),
installed once per cache folder (``~/.cache/FOLDER``; override the root with
``MCPKIT_NPM_CACHE``) under a file lock, so that pytest-xdist workers share one install."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .servers import need


def npm_installed(folder: str, *packages: str) -> Path:
    """``packages`` installed once (under a lock) in a cache folder; that folder."""
    need("node")
    need("npm")
    root = Path(os.environ.get("MCPKIT_NPM_CACHE", Path.home() / ".cache")) / folder
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "installed").exists():
            npm = shutil.which("npm") or "npm"
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(root), *packages],
                capture_output=True,
                timeout=300,
                check=False,
            )
            if done.returncode != 0:
                pytest.skip(f"npm could not install {packages}: {done.stderr.decode()[-300:]}")
            (root / "installed").write_text(" ".join(packages))
    return root
