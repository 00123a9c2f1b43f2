"""The package as a user installs it: a fresh virtualenv with the wheel, and a scratch
folder outside the checkout (``work``) holding a copy of ``examples/quickstart.py``.

``Env.run`` runs a program of the venv by its path.  By default the venv's ``bin`` is on
PATH, as after ``source .venv/bin/activate``; ``new_shell=True`` runs it from a shell
that never activated the venv (``.venv/bin/mcpkit`` typed by path), the way a new user
opens a second terminal."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.servers import kill_group, spawn, wait_http

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart.py"


class Env:
    """A fresh virtualenv with the wheel installed, and a scratch folder outside the repo."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "venv" / "bin"
        self.work = root / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.data = root / "data"
        shutil.copy(QUICKSTART, self.work / "quickstart.py")

    @property
    def env(self) -> dict[str, str]:
        env = self.shell_env
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        return env

    @property
    def shell_env(self) -> dict[str, str]:
        """A new terminal's environment: no venv activated, nothing of ours on PATH."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
        }
        ours = {str(self.bin)}
        if os.environ.get("VIRTUAL_ENV"):
            ours.add(str(Path(os.environ["VIRTUAL_ENV"]) / "bin"))
        path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p not in ours]
        env["PATH"] = os.pathsep.join(path)
        env["PYTHONUNBUFFERED"] = "1"
        env["XDG_DATA_HOME"] = str(self.data)  # where servers keep their state
        return env

    def run(
        self,
        *args: str,
        stdin: str | None = None,
        timeout: float = 120,
        cwd: Path | None = None,
        new_shell: bool = False,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        program = args[0] if os.sep in args[0] else str(self.bin / args[0])
        return subprocess.run(
            [program, *args[1:]],
            cwd=cwd or self.work,
            env={**(self.shell_env if new_shell else self.env), **(env or {})},
            input=stdin,
            text=True,
            capture_output=True,
            timeout=timeout,
            check=False,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )

    def mcpkit(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.run("mcpkit", *args, stdin=stdin)

    @contextlib.contextmanager
    def background(
        self, *args: str, port: int, path: str = "/", new_shell: bool = False
    ) -> Iterator[str]:
        """Start a long-running command of the venv; yield once ``port`` answers HTTP.
        Its output is in :meth:`log_of` ``port``."""
        argv = [str(self.bin / args[0]), *args[1:]]
        log = self.log_of(port)
        env = self.shell_env if new_shell else self.env
        proc = spawn(argv, log, env=env, inherit_env=False, cwd=self.work)
        base = f"http://127.0.0.1:{port}"
        try:
            try:
                wait_http(base + path, proc, log, timeout=60)
            except RuntimeError as exc:
                pytest.fail(f"{args}: {exc}")
            yield base
        finally:
            kill_group(proc)

    def log_of(self, port: int) -> Path:
        """Where :meth:`background` writes the output of the command serving ``port``."""
        return self.work / f"bg-{port}.log"


def pip_install(env: Env, spec: str) -> None:
    """Install ``spec`` into ``env``'s venv with this interpreter's pip (``--python``).

    The venvs are made without pip: seeding each one with ``ensurepip`` cost about 3 s of
    CPU, ten times per run, and proved nothing about the package.  What lands in the venv
    is the same: the wheel and what it declares, resolved from the configured index."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(env.bin / "python"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            spec,
        ],
        cwd=env.work,
        env=env.env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def make_env(root: Path, wheel: Path, extra: str = "") -> Env:
    env = Env(root)
    venv.EnvBuilder(with_pip=False, clear=True).create(root / "venv")
    pip_install(env, f"{wheel}[{extra}]" if extra else str(wheel))
    return env
