"""``mypy --strict`` over tests/ and bench/ (``make lint``), with the module names they run under.

The suite is not one package: pytest puts each test folder on ``sys.path`` (its files
import one another as top-level modules, ``import gwkit``), a script under ``servers/``
or ``peers/`` runs with its own folder first on the path, and ``tests/support`` and
``bench`` are packages.  mypy is told the same thing: every folder holding modules is an
explicit package base (``--explicit-package-bases`` with ``MYPYPATH``), so a file's module
name is the one it has when it runs.

Names repeat across folders (each folder's ``conftest.py``, three peers' ``sdk_server.py``)
and mypy refuses two files with one module name in a run.  So each top-level folder is
checked whole, in the first run where none of its module names is taken yet: a folder's
files always meet their own siblings (``tests/scaleout`` imports its ``conftest``), and
the folders with a ``conftest.py`` each get a run of their own.  All runs share one cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Imported by tests and bench scripts from outside tests/ (they put these folders on sys.path).
EXTRA_BASES = (ROOT / "examples", ROOT / "examples" / "auth", ROOT / "examples" / "serverless")


def _module_name(path: Path) -> str:
    """``tests/support/servers.py`` runs as ``support.servers``, ``tests/gateway/gwkit.py`` as
    ``gwkit``."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def _units() -> list[list[Path]]:
    """The files to check, by top-level folder (the files right in tests/ go with tests/support)."""
    units: dict[Path, list[Path]] = {}
    for top in ("tests", "bench"):
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT / top)
            key = ROOT / top
            if top == "tests" and len(relative.parts) > 1 and relative.parts[0] != "support":
                key = key / relative.parts[0]
            units.setdefault(key, []).append(path)
    return list(units.values())


def _runs(units: list[list[Path]]) -> list[list[Path]]:
    runs: list[tuple[set[str], list[Path]]] = []
    for unit in units:
        names = {_module_name(path) for path in unit}
        if len(names) != len(unit):
            raise SystemExit(
                f"two modules share a name inside {unit[0].parent}: mypy cannot check them"
            )
        for taken, files in runs:
            if not names & taken:
                taken |= names
                files.extend(unit)
                break
        else:
            runs.append((names, list(unit)))
    return [files for _, files in runs]


def _bases() -> list[Path]:
    folders = {path.parent for top in ("tests", "bench") for path in (ROOT / top).rglob("*.py")}
    bases = sorted(folder for folder in folders if not (folder / "__init__.py").exists())
    return [*bases, *EXTRA_BASES]


def main() -> int:
    env = dict(os.environ, MYPYPATH=os.pathsep.join(str(base) for base in _bases()))
    status = 0
    for files in _runs(_units()):
        argv = [
            sys.executable,
            "-m",
            "mypy",
            "--explicit-package-bases",
            *(str(f.relative_to(ROOT)) for f in files),
        ]
        status = max(status, subprocess.run(argv, cwd=ROOT, env=env).returncode)
    return status


if __name__ == "__main__":
    sys.exit(main())
