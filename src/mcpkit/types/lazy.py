"""Names a package exports but imports on first use (PEP 562), so that importing the
package stays cheap: ``import mcpkit`` does not load the server framework, nor
``import mcpkit.auth`` the JWT stack.  Nothing is imported until a name is first used;
the package's table of names says where each one lives."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``where`` maps each lazily exported name
    to the module that defines it (absolute, or relative to ``package``); once loaded, a
    name is kept in the package, so the next use is an ordinary attribute."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
