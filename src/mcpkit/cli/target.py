"""Load a server object from ``path/to/file.py[:name]`` or ``package.module[:name]``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from ..server.server import Server

_DEFAULT_NAMES = ("server", "mcp", "app")


class TargetError(Exception):
    pass


def load_server(target: str) -> Server:
    spec, _, name = target.partition(":") if not _is_windows_drive(target) else (target, "", "")
    if spec.endswith(".py") or "/" in spec or Path(spec).suffix == ".py":
        module = _load_file(Path(spec))
    else:
        try:
            module = importlib.import_module(spec)
        except ImportError as exc:
            raise TargetError(f"cannot import module {spec!r}: {exc}") from exc
    if name:
        obj = getattr(module, name, None)
        if obj is None:
            raise TargetError(f"{spec} has no attribute {name!r}")
        return _as_server(obj, f"{spec}:{name}")
    for candidate in _DEFAULT_NAMES:
        obj = getattr(module, candidate, None)
        if isinstance(obj, Server):
            return obj
    found = [v for v in vars(module).values() if isinstance(v, Server)]
    if len(found) == 1:
        return found[0]
    raise TargetError(
        f"{spec} defines {len(found)} Server objects; name one as {spec}:NAME"
        if found
        else f"{spec} defines no mcpkit Server (looked for {', '.join(_DEFAULT_NAMES)})"
    )


def _as_server(obj: object, label: str) -> Server:
    if isinstance(obj, Server):
        return obj
    if callable(obj):
        made = obj()
        if isinstance(made, Server):
            return made
    raise TargetError(f"{label} is not an mcpkit Server")


def _load_file(path: Path) -> Any:
    if not path.exists():
        raise TargetError(f"no such file: {path}")
    resolved = path.resolve()
    module_name = f"_mcpkit_target_{abs(hash(str(resolved)))}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(resolved.parent))
    spec.loader.exec_module(module)
    return module


def _is_windows_drive(target: str) -> bool:
    return len(target) > 2 and target[1] == ":" and target[2] in "\\/"
