"""A bare ``python``/``python3``/``mcpkit`` in a config is this host's own: the README's
``.venv/bin/mcpkit host --config examples/host.json`` works with no virtualenv on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import unittest.mock
from pathlib import Path

import pytest
from hostkit import REPO, trusted_env

from mcpkit.host import parse_config

VENV_BIN = Path(sysconfig.get_path("scripts"))


def test_bare_interpreters_and_mcpkit_resolve_to_the_hosts_own() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "a": {"command": "python", "args": ["s.py"]},
                "b": {"command": "python3 -m pkg"},
                "c": {"command": "mcpkit", "args": ["serve", "x.py"]},
                "d": {"command": "/usr/bin/python3", "args": ["s.py"]},
                "e": {"command": "python3.11", "args": ["s.py"]},
            }
        }
    )
    a, b, c, d, e = config.servers
    assert a.command == (sys.executable, "s.py") and a.resolved_from == "python"
    assert b.command == (sys.executable, "-m", "pkg")
    installed = VENV_BIN / "mcpkit"
    expected = (
        (str(installed),)
        if os.access(installed, os.X_OK)
        else (sys.executable, "-m", "mcpkit.cli.main")
    )
    assert c.command == (*expected, "serve", "x.py")
    assert d.command == ("/usr/bin/python3", "s.py") and d.resolved_from is None
    assert e.command == ("python3.11", "s.py")  # only the bare names
    assert "'python' is this host's own" in a.describe()


def test_the_readme_command_works_without_the_venv_on_path(tmp_path: Path) -> None:
    mcpkit = VENV_BIN / "mcpkit"
    if not os.access(mcpkit, os.X_OK):
        pytest.skip("mcpkit is not installed as a script next to this interpreter")
    path = os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin") if Path(p).is_dir())
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    }
    env["PATH"] = path
    # The host resolves "python" to its own interpreter: the script's shebang, which may
    # name the venv's python3 where this test runs under its python (both links to one).
    interpreter = mcpkit.read_text().splitlines()[0].removeprefix("#!").strip()
    with unittest.mock.patch.object(sys, "executable", interpreter):
        trust = trusted_env(REPO / "examples" / "host.json", tmp_path, cwd=REPO, environ=env)
    env["MCPKIT_TRUST_FILE"] = trust["MCPKIT_TRUST_FILE"]
    system = shutil.which("python", path=path) or shutil.which("python3", path=path)
    if system is not None:  # the precondition that made this fail before
        probe = subprocess.run([system, "-c", "import mcpkit"], env=env, capture_output=True)
        assert probe.returncode != 0, "PATH's python has mcpkit: the test would prove nothing"
    run = subprocess.run(
        [str(mcpkit), "host", "--config", "examples/host.json"],
        cwd=REPO,
        env=env,
        input="/servers\n/quit\n",
        capture_output=True,
        text=True,
        timeout=90,
    )
    out = run.stdout
    assert run.returncode == 0, run.stderr
    assert "dice: ready" in out and "quickstart: ready" in out, out + run.stderr
    assert f"{interpreter} examples/app_server.py  ('python' is this host's own)" in out
    assert "'mcpkit' is this host's own" in out
