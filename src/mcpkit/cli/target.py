"""Load a server object from ``path/to/file.py[:name]`` or ``package.module[:name]``.

A module is imported as ``python -m`` would find it: the current folder comes first on
``sys.path``, so ``mcpkit serve pkg.mod:server`` works from the folder that holds ``pkg``.
An exception raised by the user's own code while it is imported becomes a
:class:`UserCodeError`: one line naming the target and the error, then the traceback
frames of the user's files only (mcpkit's and the import machinery's are left out).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import sysconfig
import traceback
from pathlib import Path
from typing import Any

from ..server.server import Server

_DEFAULT_NAMES = ("server", "mcp", "app")


class TargetError(Exception):
    pass


class UserCodeError(TargetError):
    """The target's own code raised while it was imported (or while a factory ran)."""

    @classmethod
    def from_exception(cls, label: str, exc: BaseException) -> UserCodeError:
        if isinstance(exc, SyntaxError):
            headline = f"{label} failed to import: SyntaxError: {exc.msg}"
            where = traceback.format_exception_only(exc)[:-1]  # File/line/caret lines
        else:
            headline = f"{label} failed to import: {type(exc).__name__}: {exc}"
            where = traceback.format_list(users_frames(exc))
        return cls("\n".join([headline, *("".join(where).rstrip("\n").splitlines())]))


def users_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The frames of ``exc``'s traceback that are the user's code: not mcpkit's, not the
    standard library's or an installed package's, not frozen import machinery.  When that
    leaves nothing (the user's package is itself installed), the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    theirs = [frame for frame in frames if _is_users(frame.filename)]
    return theirs or frames[-1:]


def _library_roots() -> tuple[str, ...]:
    here = str(Path(__file__).resolve().parents[1]) + os.sep  # the mcpkit package
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return (here, *(str(Path(root).resolve()) + os.sep for root in roots))


def _is_users(filename: str) -> bool:
    if filename.startswith("<"):
        return False
    resolved = str(Path(filename).resolve())
    return not resolved.startswith(_library_roots())


def importable_from_cwd() -> None:
    """Put the current folder first on ``sys.path``, as ``python -m`` does."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)


def load_server(target: str) -> Server:
    spec, _, name = target.partition(":") if not _is_windows_drive(target) else (target, "", "")
    if spec.endswith(".py") or "/" in spec or Path(spec).suffix == ".py":
        module = _load_file(Path(spec))
    else:
        module = _import_module(spec)
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
        try:
            made = obj()
        except Exception as exc:
            raise UserCodeError.from_exception(label, exc) from None
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
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise UserCodeError.from_exception(str(path), exc) from None
    return module


def _import_module(spec: str) -> Any:
    importable_from_cwd()
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name and (spec == exc.name or spec.startswith(exc.name + ".")):
            raise TargetError(f"cannot import module {spec!r}: {exc}") from None
        raise UserCodeError.from_exception(spec, exc) from None
    except Exception as exc:
        raise UserCodeError.from_exception(spec, exc) from None


def _is_windows_drive(target: str) -> bool:
    return len(target) > 2 and target[1] == ":" and target[2] in "\\/"
